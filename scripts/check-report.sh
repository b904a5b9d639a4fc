#!/bin/sh
# Checks a report page in a real browser (headless Chromium, Debian's
# `chromium`): every attention explorer must have been drawn by the page's
# script, and clicking its tokens, moving its slider, choosing its maps and
# views must redraw it (scripts/check-report.js says exactly what is checked).
# Fails on any JavaScript error or missing element. Then takes a screenshot of
# each part of the page, for a person to look at.
#
#   sh scripts/check-report.sh [PAGE] [PARTS]
#     PAGE   the report (default out/report.html)
#     PARTS  comma-separated part ids that must be there, each with an
#            explorer (default: none required; make check-report names the
#            parts of make run)
#
# Screenshots: DIR/report-check/PART.png beside the page. Exit 0 if the
# check passed, 1 if not, 2 if it could not run.
set -eu
PAGE=${1:-out/report.html}
PARTS=${2:-}
HERE=$(cd "$(dirname "$0")" && pwd)
BROWSER=${CHROMIUM:-}
if [ -z "$BROWSER" ]; then
    for b in chromium chromium-browser google-chrome; do
        if command -v "$b" >/dev/null 2>&1; then BROWSER=$b; break; fi
    done
fi
if [ -z "$BROWSER" ]; then
    echo "check-report: no chromium found (Debian: apt-get install chromium; or set CHROMIUM=...)" >&2
    exit 2
fi
if [ ! -f "$PAGE" ]; then
    echo "check-report: no page '$PAGE' (make run writes out/report.html)" >&2
    exit 2
fi

DIR=$(cd "$(dirname "$PAGE")" && pwd)/report-check
mkdir -p "$DIR"
CHECKED="$DIR/checked.html"
# The page with an error recorder at the very top of <head> and the checker
# at the end of <body>; the parts to require go in a data attribute.
python3 - "$PAGE" "$CHECKED" "$HERE/check-report.js" "$PARTS" <<'EOF'
import sys
page, out, checker, parts = sys.argv[1:5]
html = open(page, encoding="utf-8").read()
recorder = ("<script>window.__errors = [];"
            "window.addEventListener('error', e => window.__errors.push(String(e.message) + ' at ' + e.filename + ':' + e.lineno));"
            "</script>")
if "<head>" not in html or "</body>" not in html:
    sys.exit("check-report: " + page + " has no <head> or </body>: not a report page")
html = html.replace("<head>", "<head>\n" + recorder, 1)
html = html.replace("<html", '<html data-expect="' + parts + '"', 1)
i = html.rindex("</body>")
html = html[:i] + "<script>\n" + open(checker, encoding="utf-8").read() + "</script>\n" + html[i:]
open(out, "w", encoding="utf-8").write(html)
EOF

run_browser() {
    # --no-sandbox: CI containers run as root; --virtual-time-budget lets the
    # page's load handlers finish before the dump or the screenshot.
    timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --virtual-time-budget=10000 "$@" 2>/dev/null
}

DOM="$DIR/checked-dom.html"
run_browser --dump-dom "file://$CHECKED" > "$DOM" || true
RESULT=$(python3 - "$DOM" <<'EOF'
import html, re, sys
dom = open(sys.argv[1], encoding="utf-8", errors="replace").read()
found = re.findall(r'<pre id="check-result"[^>]*>(.*?)</pre>', dom, re.S)  # the element, not the script's text
print(html.unescape(found[-1]) if found else "CHECK FAILED:\nno verdict: the page did not load or the checker did not run")
EOF
)
printf '%s\n' "$RESULT"

# Two screenshots per part, the part alone on the page: as it opens (the
# tested models), and with every slider at its first frame (before training).
for id in $(grep -o '<div id="[a-z0-9-]*">' "$PAGE" | sed 's/<div id="\(.*\)">/\1/'); do
    run_browser --window-size=1150,2400 --screenshot="$DIR/$id.png" "file://$CHECKED#shot=$id" >/dev/null || true
    run_browser --window-size=1150,2400 --screenshot="$DIR/$id-first.png" "file://$CHECKED#shot=$id&frame=first" \
        >/dev/null || true
    [ -f "$DIR/$id.png" ] && echo "screenshot: $DIR/$id.png, $DIR/$id-first.png"
done

case "$RESULT" in
    "CHECK OK"*) exit 0 ;;
    *) exit 1 ;;
esac
