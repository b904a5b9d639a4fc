"""The class at a glance: OUT/class.html from make grade-class's results
(OUT/results/STUDENT.json), and a page of each student's verdicts
(OUT/students/STUDENT.html). scripts/grade_class.py writes them at the end
of every run; `python3 scripts/class_page.py OUT` writes them again.

Per exercise:
- how many students got each status;
- the scores' distribution (a bar a tenth, and one of the passes);
- each known mistake, with how many students made it and a link to the
  course section that explains the exercise;
- the checks that failed without a known mistake's name, grouped by the
  check (the grader's "WRONG  <check>:" line, its numbers left out), with
  how many students failed each.

Then a row per student, each exercise's status and score, linking to the
student's page, which holds the grader's words.
"""
import html
import json
import os
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import exercises as X  # noqa: E402

STYLE = """body{font:15px/1.45 system-ui,sans-serif;max-width:64em;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;width:100%;margin:.5em 0 1.5em}td,th{border-bottom:1px solid #ddd;padding:.3em .5em;
text-align:left;vertical-align:top}th{background:#f6f6f6}.passed{color:#1a7f37;font-weight:600}
.failed,.failed-by-the-judge,.timed-out{color:#a40e26}.does-not-compile,.refused{color:#9a6700}
.no-submission{color:#777}.bars{display:flex;align-items:flex-end;gap:3px;height:80px;margin:.5em 0}
.bar{background:#4c72b0;width:28px;position:relative}.bar span{position:absolute;top:-1.3em;width:100%;
text-align:center;font-size:80%}.axis{display:flex;gap:3px;font-size:75%;color:#555}.axis span{width:28px;
text-align:center}pre{background:#f6f6f6;padding:.8em;overflow-x:auto;white-space:pre-wrap;font-size:85%}
.count{font-variant-numeric:tabular-nums;width:4em}"""

STATUSES = ["passed", "failed", "failed by the judge", "timed out", "does not compile", "refused", "no submission"]


def css_class(status):
    return status.replace(" ", "-")


def failed_checks(words):
    """The grader's WRONG lines' checks, their numbers left out ("gradient
    to input 0 (3×4)" → "gradient to input # (#×#)"). A case lost whole
    ("this case") keeps why, up to its parenthesis: "this case: your code
    called exit(#) inside the check" and "…wrote # bytes outside a tensor's
    memory" are different mistakes."""
    found = []
    for m in re.finditer(r"^\s+WRONG\s+(.+?):\s(.*)$", words, re.M):
        check = m.group(1)
        if check.strip() == "this case":
            check += ": " + m.group(2).split(" (")[0][:120]
        check = re.sub(r"\d+(\.\d+)?", "#", check).strip()
        if check not in found:
            found.append(check)
    return found


def histogram(scores):
    """Eleven bars: ten of a tenth each, [0, 0.1) to [0.9, 1), and one of
    the full score (a pass), so that a pass and 0.95 are not one bar."""
    bins = [0] * 11
    for s in scores:
        bins[10 if s >= 1 else min(int(s * 10), 9)] += 1
    top = max(bins) or 1
    bars = "".join(f'<div class="bar" style="height:{round(70 * b / top) + (2 if b else 0)}px"><span>{b or ""}</span></div>'
                   for b in bins)
    axis = "".join(f"<span>{k / 10:.1f}</span>" for k in range(10)) + "<span>1</span>"
    return f'<div class="bars">{bars}</div><div class="axis">{axis}</div>'


def write(out):
    out = pathlib.Path(out)
    results = [json.loads(p.read_text()) for p in sorted((out / "results").glob("*.json"))]
    exercises = {e.id: e for e in X.read_exercises()}
    order = []
    for r in results:
        for v in r["exercises"]:
            if v["exercise"] not in order:
                order.append(v["exercise"])
    link = lambda target: html.escape(os.path.relpath(X.ROOT / target, out))  # noqa: E731
    parts = [f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>The class</title>'
             f"<style>{STYLE}</style></head><body>\n<h1>The class: {len(results)} students, "
             f"{len(order)} exercise{'s' if len(order) != 1 else ''}</h1>\n"
             "<p>Made by <code>make grade-class</code> from <code>results/</code> (one file a student); "
             "the same rows are in <code>gradebook.csv</code>. A score is 1 for a pass, else the share of the "
             "grader's checks right (0 when the judge failed it).</p>\n"]
    for ex_id in order:
        e = exercises.get(ex_id)
        verdicts = [(r["student"], v) for r in results for v in r["exercises"] if v["exercise"] == ex_id]
        title = f"{e.number} {e.title}" if e else ex_id
        parts.append(f'<h2 id="{html.escape(ex_id)}">{html.escape(title)} <code>{html.escape(ex_id)}</code></h2>\n')
        counts = {s: sum(1 for _, v in verdicts if v["status"] == s) for s in STATUSES}
        parts.append("<p>" + ", ".join(f'<span class="{css_class(s)}">{n} {s}</span>' for s, n in counts.items() if n)
                     + "</p>\n")
        submitted = [v["score"] for _, v in verdicts if v["status"] != "no submission"]
        if submitted:
            parts.append(f"<p>Scores of the {len(submitted)} who submitted:</p>{histogram(submitted)}\n")
        mistakes = {}
        for student, v in verdicts:
            for m in v.get("mistakes", []):
                mistakes.setdefault(m, []).append(student)
        page = link(e.page()) if e else ""
        if mistakes:
            parts.append(f'<h3>Known mistakes (the course explains the exercise: <a href="{page}">'
                         f"{html.escape(e.page() if e else '')}</a>)</h3>\n<table><tr><th class=\"count\">students</th>"
                         "<th>mistake</th><th>who</th></tr>\n")
            for m, who in sorted(mistakes.items(), key=lambda kv: (-len(kv[1]), kv[0])):
                parts.append(f'<tr><td class="count">{len(who)}</td><td><a href="{page}">{html.escape(m)}</a></td>'
                             f"<td>{html.escape(', '.join(who))}</td></tr>\n")
            parts.append("</table>\n")
        unnamed = {}
        for student, v in verdicts:
            if v["status"] in ("failed", "timed out") and not v.get("mistakes"):
                for check in failed_checks(v.get("words", "")) or ["(no check line: " + v["status"] + ")"]:
                    unnamed.setdefault(check, []).append(student)
        if unnamed:
            parts.append("<h3>Failed without a known mistake's name, by the check that failed</h3>\n<table><tr>"
                         "<th class=\"count\">students</th><th>check</th><th>who</th></tr>\n")
            for check, who in sorted(unnamed.items(), key=lambda kv: (-len(kv[1]), kv[0])):
                parts.append(f'<tr><td class="count">{len(who)}</td><td>{html.escape(check)}</td>'
                             f"<td>{html.escape(', '.join(who))}</td></tr>\n")
            parts.append("</table>\n")
    parts.append("<h2>Students</h2>\n<table><tr><th>student</th>" +
                 "".join(f"<th>{html.escape(exercises[x].number if x in exercises else x)}</th>" for x in order) +
                 "</tr>\n")
    (out / "students").mkdir(exist_ok=True)
    for r in results:
        name = r["student"]
        by_id = {v["exercise"]: v for v in r["exercises"]}
        cells = []
        for x in order:
            v = by_id.get(x)
            cells.append(f'<td class="{css_class(v["status"])}">{html.escape(v["status"])} '
                         f'({v["score"]:.2f})</td>' if v else "<td>-</td>")
        parts.append(f'<tr><td><a href="students/{html.escape(name)}.html">{html.escape(name)}</a></td>'
                     + "".join(cells) + "</tr>\n")
        student_page = [f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(name)}'
                        f"</title><style>{STYLE}</style></head><body>\n<p><a href=\"../class.html\">the class</a></p>"
                        f"<h1>{html.escape(name)}</h1>\n"]
        for v in r["exercises"]:
            e = exercises.get(v["exercise"])
            student_page.append(f"<h2>{html.escape(e.number + ' ' + e.title if e else v['exercise'])}: "
                                f'<span class="{css_class(v["status"])}">{html.escape(v["status"])}</span>, '
                                f"{v['right']} of {v['total']} checks, score {v['score']:.2f}, {v['seconds']} s</h2>\n")
            for m in v.get("mistakes", []):
                student_page.append(f"<p>Known mistake: {html.escape(m)}</p>\n")
            student_page.append(f"<pre>{html.escape(v.get('words', ''))}</pre>\n")
        student_page.append("</body></html>\n")
        (out / "students" / f"{name}.html").write_text("".join(student_page))
    parts.append("</table>\n</body></html>\n")
    (out / "class.html").write_text("".join(parts))
    return out / "class.html"


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("python3 scripts/class_page.py OUT (the folder of make grade-class)")
    print(write(sys.argv[1]))
