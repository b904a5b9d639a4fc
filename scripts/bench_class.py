"""make bench-class [STUDENTS=30] [JOBS=2]: the time make grade-class takes
for a class, end to end (a benchmark, not a test: docs/course/instructors.md
and docs/performance.md quote it).

The class is generated: STUDENTS students, each submitting three exercises,
1.1 (sigmoid_backward), 1.2 (softmax_backward) and 3.2 (multi_head), as a zip
of the cut files. Student i's answer to each exercise is, by turns:
  right     this tree's solution;
  wrong     one of the exercise's known mistakes (tests/mutations/, in turn);
  broken    a known mistake with a line that does not compile;
  hostile   an answer of course/hidden/hostile.txt for the exercise (1.1's:
            a fork bomb, an endless loop, a forged verdict, ...), else a
            known mistake.
Graded with JOBS students at a time and a time cap of 10 s a check (what an
instructor would set for a class), in the sandbox (bubblewrap) when it runs.
Printed: the shared build (this tree's grader, already built by make test,
is timed as make finds it), the whole run, and the seconds per submission and
exercise; the statuses counted, so that a run whose class did not grade as
generated is seen.
"""
import collections
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time
import zipfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import exercises as X  # noqa: E402

ROOT = X.ROOT
SCRATCH = ROOT / "build" / "bench-class"
EXERCISES = ["sigmoid_backward", "softmax_backward", "multi_head"]
KINDS = ["right", "wrong", "broken", "hostile"]


def main():
    students = int(os.environ.get("STUDENTS") or 30)
    jobs = os.environ.get("JOBS") or "2"
    if not (ROOT / "course" / "hidden").is_dir():
        sys.exit("make bench-class needs course/hidden/ (the hostile answers): it is the instructor's")
    started = time.time()
    if not X.build_grader():
        sys.exit("this tree's grader does not build")
    build_seconds = time.time() - started
    every = {e.id: e for e in X.read_exercises()}
    chosen = [every[i] for i in EXERCISES]
    mutations = X.read_mutations()
    hostile = X.read_wheats(X.HOSTILE)
    shutil.rmtree(SCRATCH, ignore_errors=True)
    submissions = SCRATCH / "submissions"
    submissions.mkdir(parents=True)
    planned = collections.Counter()

    def changed(files, m):  # a find/replace of the mutation lists' format, on the student's file as it is
        return files[m["file"]].replace(m["find"].replace("\\n", "\n"), m["replace"].replace("\\n", "\n"), 1)

    for i in range(students):
        files = {path: (ROOT / path).read_text() for e in chosen for path, _ in e.cuts}
        for j, e in enumerate(chosen):
            kind = KINDS[(i + j) % len(KINDS)]
            mistakes = X.mutations_of(e, mutations)
            answers = [h for h in hostile if h.get("exercise") == e.id and "@" not in h["replace"]]
            if kind == "hostile" and not answers:
                kind = "wrong"
            planned[(e.id, kind)] += 1
            if kind in ("wrong", "broken"):
                m = mistakes[(i // len(KINDS)) % len(mistakes)]
                files[m["file"]] = changed(files, m)
                if kind == "broken":
                    # (inside the block: only the blocks' bodies are compiled)
                    opening = next(o for f, o in e.cuts if f == m["file"])
                    text = files[m["file"]]
                    at, _ = X.block_span(text, opening, m["file"])
                    files[m["file"]] = text[:at] + "\n    int not_compiled = ;" + text[at:]
            elif kind == "hostile":
                h = answers[(i // len(KINDS)) % len(answers)]
                files[h["file"]] = changed(files, h)
        with zipfile.ZipFile(submissions / f"student{i:03d}.zip", "w") as z:
            for path, text in files.items():
                z.writestr(pathlib.PurePosixPath(path).name, text)
    sandbox = "bwrap" if shutil.which("bwrap") and subprocess.run(
        ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "true"],
        capture_output=True).returncode == 0 else "none"
    out = SCRATCH / "out"
    command = [sys.executable, str(ROOT / "scripts" / "grade_class.py"), str(submissions), str(out),
               "--ex", ",".join(EXERCISES), "--jobs", jobs, "--time-cap", "10", "--sandbox", sandbox]
    start = time.time()
    r = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, errors="replace")
    seconds = time.time() - start
    if r.returncode != 0:
        print(r.stdout[-3000:] + r.stderr[-3000:])
        sys.exit("make grade-class failed")
    statuses = collections.Counter()
    per = []
    for f in sorted((out / "results").glob("*.json")):
        for v in json.loads(f.read_text())["exercises"]:
            statuses[(v["exercise"], v["status"])] += 1
            per.append(v["seconds"])
    graded = students * len(chosen)
    print(f"make bench-class: {students} students x {len(chosen)} exercises ({', '.join(EXERCISES)}), "
          f"{jobs} at a time, sandbox {sandbox}, {os.cpu_count()} cores")
    print(f"  this tree's grader, as make found it (the shared build): {build_seconds:.1f} s")
    print(f"  the class end to end: {seconds:.0f} s, {seconds / graded:.2f} s per submission and exercise "
          f"({seconds / students:.1f} s per student)")
    print(f"  one (submission, exercise) on its own: median {sorted(per)[len(per) // 2]:.1f} s, "
          f"slowest {max(per):.1f} s (build and grade, {jobs} running side by side)")
    for e in chosen:
        made = ", ".join(f"{planned[(e.id, k)]} {k}" for k in KINDS if planned[(e.id, k)])
        got = ", ".join(f"{n} {s}" for (ex, s), n in sorted(statuses.items()) if ex == e.id)
        print(f"  {e.number} {e.id}: generated {made}; graded {got}")


if __name__ == "__main__":
    main()
