"""Applies deliberate mistakes to the library, one at a time, and checks that
the tests catch each one.

    python3 scripts/mutation-check.py                 every mutation in tests/mutations/
    python3 scripts/mutation-check.py scores alignments   the files tests/mutations/scores.txt, ...
    python3 scripts/mutation-check.py --match additive    mutations whose title contains "additive"

(`make mutation-check` runs the first.) A mutation is a block of a file in
tests/mutations/:

    ## dot_score: the scores transposed
    file: attention/scores.cpp
    find: return matmul(queries, keys, false, true);  // E = Q Kᵀ   B×m×n
    replace: return transpose(matmul(queries, keys, false, true), 1, 2);
    ids: dot_score

`find` must occur exactly once in `file` (so the list fails loudly when the
code moves); `\\n` in find/replace stands for a line break. `ids` names the
registry entries to run (ATTN_MECHANISM); every other test of the double
build runs too, and `unit: yes` adds the float unit tests. The mutated file is
restored afterwards, whatever happens; objects are built in build/mutation/,
so the normal build is never left holding mutated code.

A mutation is KILLED when a test fails, SURVIVED when every test passes,
SKIPPED when its file is a kernel this CPU never runs (an *_avx512.cpp file
without AVX-512, *_avx2.cpp without AVX2: run those lists on a CPU that has
it), and an ERROR when it does not apply or does not compile (a mistake the compiler
catches proves nothing about the tests). The script prints the survivors and
exits 1 if there are any, or any errors.

Each kill names a test that failed and its file, and is attributed: to the
mutated code's own tests when a failing test's file includes the mutated
file's header itself (io/checkpoint.cpp: io/checkpoint.hpp) or is a
registry's generic test (the catalog's, the ops': each entry has a reference
of its own), and the first such is named; else "from elsewhere" (an
end-to-end test that happens to pass through the code), naming the first
test that failed. The summary says, per list, how many of its catches are
its own code's.
"""
import argparse
import os
import pathlib
import re
import signal
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
MUTATIONS = ROOT / "tests" / "mutations"
BUILD = "build/mutation"


class Mutation:
    def __init__(self, source, line, title):
        self.source, self.line, self.title = source, line, title
        self.fields = {}

    def get(self, key, default=None):
        return self.fields.get(key, default)

    def where(self):
        return f"{self.source.name}:{self.line}"


def parse(path):
    mutations, current = [], None
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.rstrip("\n")
        if line.startswith("## "):
            current = Mutation(path, number, line[3:].strip())
            mutations.append(current)
        elif not line.strip() or line.startswith("#"):
            continue
        elif current is None:
            sys.exit(f"{path}:{number}: a field before the first '## title' line")
        else:
            key, sep, value = line.partition(":")
            if not sep or key.strip() not in ("file", "find", "replace", "ids", "unit"):
                sys.exit(f"{path}:{number}: expected 'file:', 'find:', 'replace:', 'ids:' or 'unit:', got {line!r}")
            current.fields[key.strip()] = value[1:] if value.startswith(" ") else value
    for m in mutations:
        for key in ("file", "find", "replace", "ids"):
            if key not in m.fields:
                sys.exit(f"{m.where()}: mutation '{m.title}' has no '{key}:' line")
    return mutations


def unescape(text):
    return text.replace("\\n", "\n")


# A mutation of code this CPU never runs (an AVX-512 kernel on a CPU without
# AVX-512; the dispatch picks the kernel at run time) proves nothing here: it
# would survive whatever the tests hold. Such mutations are skipped, and said.
def cpu_flags():
    try:
        text = pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    found = re.search(r"^flags\s*:(.*)$", text, flags=re.M)
    return set(found.group(1).split()) if found else set()


def not_run_here(mutation, flags):
    name = mutation.get("file")
    if name.endswith("_avx512.cpp") and "avx512f" not in flags:
        return "this CPU has no AVX-512"
    if name.endswith("_avx2.cpp") and not {"avx2", "fma"} <= flags:
        return "this CPU has no AVX2"
    return ""


def make(targets, log):
    cmd = ["make", "-j2", f"B={BUILD}", "WERROR="] + targets
    return subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT).returncode == 0


def run_tests(m, log):
    """True when every test passed (the mutation survived); also the failing
    tests, in the order they ran, each as (its name, the file it is in)."""
    env = dict(os.environ, ATTN_MECHANISM=m.get("ids").replace(" ", ""))
    binaries = [f"{BUILD}/tests/grad"] + ([f"{BUILD}/tests/unit"] if m.get("unit", "no") == "yes" else [])
    failures = []
    passed = True
    for binary in binaries:
        try:
            # The mutation-lists test fails for any change to a file a mutation reads,
            # so it would "kill" every mutation: it is left out here.
            out = subprocess.run([binary, "-tce=mutation lists*"], cwd=ROOT, env=env, capture_output=True, text=True,
                                 timeout=600)
        except subprocess.TimeoutExpired:
            return False, failures + [(f"{binary}: timed out", "")]
        log.write(out.stdout + out.stderr)
        if out.returncode != 0:
            passed = False
            # doctest prints a block per test case with an ERROR and per test case
            # with a MESSAGE (a passing test's figures): every failing one, in order.
            named = []
            for block in re.split(r"^=+$", out.stdout, flags=re.M):
                if not re.search(r"\b(ERROR|FATAL ERROR)\b", block):
                    continue
                found = re.search(r"^(\S+\.[ch]pp):\d+:\s*\nTEST CASE:\s+(.*)", block, flags=re.M)
                if found and (found.group(2).strip(), found.group(1)) not in named:
                    named.append((found.group(2).strip(), found.group(1)))
            failures += named or [(f"{binary} exited {out.returncode}", "")]
    return passed, failures


# A catch is attributed to the code it tests when the test file that caught
# it includes the mutated file's own header itself (attention/padding.cpp:
# attention/padding.hpp): a test written for that code. A catch by a test that
# does not (an end-to-end run that happens to pass through it) is a catch from
# elsewhere, and is said so: it proves the code less, and may stop catching
# when that distant test changes.
def own_header(mutated):
    header = pathlib.Path(mutated).with_suffix(".hpp")
    return str(header) if (ROOT / header).exists() else ""


def includes(test_file, header):
    try:
        text = (ROOT / test_file).read_text()
    except OSError:
        return False
    return re.search(r'^#include\s+"' + re.escape(header) + '"', text, flags=re.M) is not None


# The registries' generic tests run only the entries a mutation names (`ids`,
# ATTN_MECHANISM) or every op, each against a plain-loop reference written for
# it: a catch there is by the code's own entry.
REGISTRY_TESTS = {"tests/grad/test_catalog.cpp", "tests/grad/test_gradcheck_ops.cpp"}


def attribution(m, test_file):
    """'own' when test_file includes the mutated file's header (or is a
    registry's generic test), else 'elsewhere'."""
    header = own_header(m.get("file"))
    if not test_file:
        return "elsewhere"
    if test_file in REGISTRY_TESTS:
        return "own"
    if not header:  # a file without a header of its own (a main.cpp): its own folder's tests count
        return "own" if pathlib.Path(m.get("file")).parent.name in pathlib.Path(test_file).stem else "elsewhere"
    return "own" if includes(test_file, header) else "elsewhere"


def stop_on_term(*_):
    # a kill (SIGTERM) stops the run as Ctrl-C does: the mutated file is restored first (the finally below)
    raise KeyboardInterrupt


def main():
    signal.signal(signal.SIGTERM, stop_on_term)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", help="names of files in tests/mutations/ (default: all)")
    parser.add_argument("--match", default="", help="only mutations whose title contains this")
    args = parser.parse_args()

    paths = sorted(MUTATIONS.glob("*.txt"))
    if args.files:
        paths = [MUTATIONS / (f if f.endswith(".txt") else f + ".txt") for f in args.files]
        for p in paths:
            if not p.exists():
                sys.exit(f"mutation-check: no file {p.relative_to(ROOT)}")
    mutations = [m for p in paths for m in parse(p) if args.match in m.title]
    if not mutations:
        sys.exit("mutation-check: no mutations selected")

    logdir = ROOT / BUILD
    logdir.mkdir(parents=True, exist_ok=True)
    log_path = logdir / "mutation-check.log"
    with open(log_path, "w") as log:
        print(f"mutation-check: building the unmutated tests in {BUILD}/ ...", flush=True)
        need_unit = any(m.get("unit", "no") == "yes" for m in mutations)
        targets = [f"{BUILD}/tests/grad"] + ([f"{BUILD}/tests/unit"] if need_unit else [])
        if not make(targets, log):
            sys.exit(f"mutation-check: the unmutated build failed; see {log_path.relative_to(ROOT)}")
        baseline = Mutation(pathlib.Path("baseline"), 0, "baseline")
        baseline.fields = {"ids": ",".join(sorted({i.strip() for m in mutations for i in m.get("ids").split(",")})),
                           "unit": "yes" if need_unit else "no"}
        ok, failing = run_tests(baseline, log)
        failure = failing[0][0] if failing else ""
        if not ok:
            sys.exit(f"mutation-check: the unmutated tests fail ({failure}); fix them first")

        survivors, errors, skipped, killed = [], [], [], 0
        caught_by = {}  # list → [(mutation, test, test file, 'own' or 'elsewhere')]
        flags = cpu_flags()
        start = time.time()
        for k, m in enumerate(mutations, 1):
            why_not = not_run_here(m, flags)
            if why_not:
                skipped.append((m, why_not))
                print(f"[{k}/{len(mutations)}] skipped  {m.title}: {why_not}, so nothing here runs that code",
                      flush=True)
                continue
            path = ROOT / m.get("file")
            if not path.exists():
                errors.append((m, f"no file {m.get('file')}"))
                print(f"[{k}/{len(mutations)}] ERROR    {m.title}: no file {m.get('file')}", flush=True)
                continue
            original = path.read_text()
            find, replace = unescape(m.get("find")), unescape(m.get("replace"))
            count = original.count(find)
            if count != 1:
                errors.append((m, f"'find' occurs {count} times in {m.get('file')}"))
                print(f"[{k}/{len(mutations)}] ERROR    {m.title}: 'find' occurs {count} times in {m.get('file')}",
                      flush=True)
                continue
            log.write(f"\n===== {m.title} ({m.where()})\n")
            interrupted = []
            old_handler = signal.signal(signal.SIGINT, lambda *_: interrupted.append(True))
            try:
                path.write_text(original.replace(find, replace))
                signal.signal(signal.SIGINT, old_handler)
                if not make(targets, log):
                    status, detail = "ERROR", "does not compile"
                    errors.append((m, detail))
                else:
                    survived, failing = run_tests(m, log)
                    # the catch is the code's own when any test of its own failed (the first
                    # such); else the first test that failed, from elsewhere
                    own = [f for f in failing if attribution(m, f[1]) == "own"]
                    failure, test_file = (own or failing or [("", "")])[0]
                    if survived:
                        status, detail = "SURVIVED", ""
                        survivors.append(m)
                    else:
                        whose = attribution(m, test_file)
                        caught_by.setdefault(m.source.name, []).append((m, failure, test_file, whose))
                        status = "killed"
                        detail = failure + (f"; {test_file}" if test_file else "")
                        if whose == "elsewhere":
                            header = own_header(m.get("file"))
                            detail += f", from elsewhere: it does not include {header}" if header else ", from elsewhere"
                        killed += 1
            finally:
                path.write_text(original)
                signal.signal(signal.SIGINT, old_handler)
            if interrupted:
                raise KeyboardInterrupt
            print(f"[{k}/{len(mutations)}] {status:8s} {m.title}" + (f"  ({detail})" if detail else ""), flush=True)

    minutes = (time.time() - start) / 60
    print(f"\nmutation-check: {len(mutations)} mutations, {killed} killed, {len(survivors)} survived, "
          f"{len(errors)} errors, {len(skipped)} skipped ({minutes:.1f} min; log in {log_path.relative_to(ROOT)})")
    if skipped:
        print(f"  {len(skipped)} skipped: code this CPU does not run ({skipped[0][1]}); run them on a CPU that does")
    # Per list: how many of its catches are by tests of the code it mutates.
    for name, catches in sorted(caught_by.items()):
        own = sum(1 for c in catches if c[3] == "own")
        line = f"  {name}: {own} of {len(catches)} caught by a test of the mutated code"
        if own == 0:
            line += " (every catch from elsewhere: this list's code has no test of its own that catches these)"
        elif own < len(catches):
            line += "; from elsewhere: " + ", ".join(sorted({c[2] or "?" for c in catches if c[3] != "own"}))
        print(line)
    for m in survivors:
        print(f"  SURVIVED  {m.title}  ({m.where()})")
    for m, why in errors:
        print(f"  ERROR     {m.title}  ({m.where()}): {why}")
    return 1 if survivors or errors else 0


if __name__ == "__main__":
    sys.exit(main())
