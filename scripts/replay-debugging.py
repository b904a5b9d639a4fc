"""Replays docs/course/debugging.md in gdb and checks that the page shows
what gdb prints (make check-debugging).

The page's code blocks hold one gdb session: a `$ gdb --args PROGRAM ARGS`
line, then `(gdb) COMMAND` lines (a `  # comment` after a command is the
page's, not gdb's), and between them the lines gdb printed. This script
runs every command, in order, in gdb's batch mode, and looks for every
printed line of the page in gdb's output, in the page's order. In a page
line, `…` stands for any text (what the page leaves out: an exercise's
answer, the rest of a long value); gdb's frame addresses (`#1  0x… in `)
are dropped from its output before matching, as the page drops them.

    python3 scripts/replay-debugging.py            the page, replayed
    python3 scripts/replay-debugging.py --show     and gdb's whole output

Exit status 0 when every line was found; else the first line not found,
with gdb's output from where the search stood.
"""
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "course" / "debugging.md"


def read_session(text):
    """(program arguments, [commands], [expected lines]) of the page's code blocks."""
    argv, commands, expected = None, [], []
    in_block = False
    for raw in text.splitlines():
        if raw.startswith("```"):
            in_block = not in_block
            continue
        if not in_block:
            continue
        if raw.startswith("$ gdb --args "):
            argv = raw[len("$ gdb --args "):].split()
        elif raw.startswith("$ "):
            continue  # a shell command before the session (make debug)
        elif raw.startswith("(gdb) "):
            commands.append(re.sub(r"\s{2,}#.*$", "", raw[len("(gdb) "):]).strip())
        elif raw.strip():
            expected.append(raw.rstrip())
    if argv is None:
        sys.exit(f"{PAGE}: no '$ gdb --args PROGRAM ...' line in a code block")
    return argv, commands, expected


def pattern(line):
    """A page line as a regular expression over a whole line of gdb's output."""
    return re.compile("^" + ".*".join(re.escape(part) for part in line.strip().split("…")) + "$")


def normalised(output):
    lines = []
    for raw in output.splitlines():
        raw = re.sub(r"^(#\d+\s+)0x[0-9a-f]+ in ", r"\1", raw)
        lines.append(raw.strip())
    return lines


def main():
    show = "--show" in sys.argv[1:]
    if not shutil.which("gdb"):
        sys.exit("gdb is not installed (apt-get install gdb): the page cannot be replayed")
    argv, commands, expected = read_session(PAGE.read_text())
    program = ROOT / argv[0]
    if not program.exists():
        sys.exit(f"{argv[0]} is missing: make debug builds it (make check-debugging does)")
    with tempfile.TemporaryDirectory() as scratch:
        argv = [a.replace("/tmp/dbg", f"{scratch}/dbg") for a in argv]
        script = pathlib.Path(scratch) / "page.gdb"
        script.write_text("set pagination off\nset confirm off\n" + "\n".join(commands) + "\nkill\nquit\n")
        r = subprocess.run(["gdb", "-q", "-batch", "-nx", "-x", str(script), "--args"] + argv, cwd=ROOT,
                           capture_output=True, text=True, errors="replace", timeout=600)
    output = r.stdout + r.stderr
    if show:
        print(output)
    lines = normalised(output.replace(f"{scratch}/dbg", "/tmp/dbg"))
    at = 0
    for number, want in enumerate(expected, 1):
        p = pattern(want)
        found = next((k for k in range(at, len(lines)) if p.match(lines[k])), None)
        if found is None:
            print(f"{PAGE.relative_to(ROOT)}: not what gdb prints now: the page's line\n    {want.strip()}\n"
                  f"was not found in gdb's output after its line {at} (the page's {number}th printed line of "
                  f"{len(expected)}). gdb's output from there:")
            print("\n".join("    " + l for l in lines[at:at + 25]))
            sys.exit(1)
        at = found + 1
    print(f"{PAGE.relative_to(ROOT)}: {len(commands)} gdb commands replayed; all {len(expected)} lines the page "
          f"shows found in gdb's output, in order")


if __name__ == "__main__":
    main()
