"""Replays docs/course/debugging.md in gdb and checks that the page shows
what gdb prints (make check-debugging).

The page's code blocks hold one gdb session: a `$ gdb [OPTIONS] --args
PROGRAM ARGS` line (its options, such as `-x scripts/gdb/attn.py`, the
library's printers, are given to gdb here too), then `(gdb) COMMAND` lines (a `  # comment` after a command is the
page's, not gdb's), and between them the lines gdb printed. This script
runs every command, in order, in gdb's batch mode, and looks for every
printed line of the page in gdb's output, in the page's order. In a page
line, `…` stands for any text (what the page leaves out: an exercise's
answer, the rest of a long value); gdb's frame addresses (`#1  0x… in `)
are dropped from its output before matching, as the page drops them.

    python3 scripts/replay-debugging.py            the page, replayed
    python3 scripts/replay-debugging.py --show     and gdb's whole output
    python3 scripts/replay-debugging.py --printers build/debug/tests/gdb-printers
        and the page's printers (scripts/gdb/attn.py) on the tensors of
        tests/gdb/printers.cpp: each printed as the tensor's str() wrote it

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
    options, argv, commands, expected = [], None, [], []
    in_block = False
    for raw in text.splitlines():
        if raw.startswith("```"):
            in_block = not in_block
            continue
        if not in_block:
            continue
        if raw.startswith("$ gdb ") and " --args " in raw:
            before, after = raw[len("$ gdb "):].split(" --args ", 1)
            options, argv = before.split(), after.split()
        elif raw.startswith("$ "):
            continue  # a shell command before the session (make debug)
        elif raw.startswith("(gdb) "):
            commands.append(re.sub(r"\s{2,}#.*$", "", raw[len("(gdb) "):]).strip())
        elif raw.strip():
            expected.append(raw.rstrip())
    if argv is None:
        sys.exit(f"{PAGE}: no '$ gdb ... --args PROGRAM ...' line in a code block")
    return options, argv, commands, expected


def pattern(line):
    """A page line as a regular expression over a whole line of gdb's output."""
    return re.compile("^" + ".*".join(re.escape(part) for part in line.strip().split("…")) + "$")


def normalised(output):
    lines = []
    for raw in output.splitlines():
        raw = re.sub(r"^(#\d+\s+)0x[0-9a-f]+ in ", r"\1", raw)
        lines.append(raw.strip())
    return lines


def sections(text):
    """{name: text} of '@@name' lines, each followed by its text."""
    found, name = {}, None
    for line in text.splitlines():
        if line.startswith("@@"):
            name = line[2:]
            found[name] = []
        elif name is not None:
            found[name].append(line)
    return {k: "\n".join(v).strip() for k, v in found.items()}


def check_printers(binary):
    """The printers' text of every tensor of tests/gdb/printers.cpp against its str()."""
    program = ROOT / binary
    if not program.exists():
        sys.exit(f"{binary} is missing: make check-debugging builds it")
    wanted = sections(subprocess.run([str(program)], capture_output=True, text=True, check=True).stdout)
    with tempfile.TemporaryDirectory() as scratch:
        script = pathlib.Path(scratch) / "printers.gdb"
        commands = ["set pagination off", "set confirm off", "break inspect", "run > /dev/null", "up"]
        for name in wanted:
            commands += [f"echo @@{name}\\n", f"print {name}"]
        script.write_text("\n".join(commands + ["kill", "quit"]) + "\n")
        r = subprocess.run(["gdb", "-q", "-batch", "-nx", "-x", str(ROOT / "scripts/gdb/attn.py"), "-x", str(script),
                            str(program)], cwd=ROOT, capture_output=True, text=True, errors="replace", timeout=300)
    printed = sections(r.stdout + r.stderr)
    wrong = []
    for name, want in wanted.items():
        got = re.sub(r"^\$\d+ = ", "", printed.get(name, "(nothing printed)").split("\n[Inferior")[0]).strip()
        if name.startswith("$at("):
            try:
                same = float(got) == float(want)
            except ValueError:
                same = False
        elif name.startswith("$shape("):
            same = got == f'"{want}"'
        else:
            same = got == want
        if not same:
            wrong.append(f"  {name}: str() wrote\n{want}\n  the printer printed\n{got}")
    if wrong:
        print(f"scripts/gdb/attn.py: {len(wrong)} of {len(wanted)} printed values differ from the library's own:")
        print("\n".join(wrong))
        sys.exit(1)
    print(f"scripts/gdb/attn.py: all {len(wanted)} values of {binary} printed as the library prints them")


def main():
    show = "--show" in sys.argv[1:]
    if not shutil.which("gdb"):
        sys.exit("gdb is not installed (apt-get install gdb): the page cannot be replayed")
    options, argv, commands, expected = read_session(PAGE.read_text())
    program = ROOT / argv[0]
    if not program.exists():
        sys.exit(f"{argv[0]} is missing: make debug builds it (make check-debugging does)")
    with tempfile.TemporaryDirectory() as scratch:
        argv = [a.replace("/tmp/dbg", f"{scratch}/dbg") for a in argv]
        script = pathlib.Path(scratch) / "page.gdb"
        script.write_text("set pagination off\nset confirm off\n" + "\n".join(commands) + "\nkill\nquit\n")
        r = subprocess.run(["gdb", "-q", "-batch", "-nx"] + options + ["-x", str(script), "--args"] + argv, cwd=ROOT,
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
                  f"was not found in gdb's output after its line {at} (printed line {number} of the page's "
                  f"{len(expected)}). gdb's output from there:")
            print("\n".join("    " + l for l in lines[at:at + 25]))
            sys.exit(1)
        at = found + 1
    print(f"{PAGE.relative_to(ROOT)}: {len(commands)} gdb commands replayed; all {len(expected)} lines the page "
          f"shows found in gdb's output, in order")
    if "--printers" in sys.argv[1:]:
        check_printers(sys.argv[sys.argv.index("--printers") + 1])


if __name__ == "__main__":
    main()
