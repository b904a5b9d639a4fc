"""make check-class: a class of generated submissions (course/hidden/class_submissions.txt:
the instructor's, like the rest of course/hidden/, since its answers are the
solution's lines) graded by make grade-class, and each verdict and each
containment checked.

The class: exercise 1.1 (sigmoid_backward) of 15 students (one tree with
51 MB of its build in it, which is not read), right, wrong,
broken and hostile (a secret read and printed, files written outside, a
connection opened, a fork bomb, 100 GB allocated, an endless loop, a
gigabyte printed, a forged "all right", _Exit(0), a static initialiser, a
zip whose member climbs out of its folder, an
#include of a file of this machine), as folders, zips and a tarball; one
student submits 3.2 (multi_head) too. Checked: every student's status and
words for 1.1 as the list expects, 3.2 passed for the one who submitted it
and "no submission" for the others; nothing written outside (the files the
hostile answers try to write do not exist); the secret in no output and no
result; no connection made to the port the check listens on; the gradebook
whole; the class page with every student linked, the known mistake counted and
linked to its course section, an unnamed failure grouped by its check; and a
second run grades nothing again.
"""
import csv
import io
import json
import os
import pathlib
import secrets
import shutil
import socket
import subprocess
import sys
import tarfile
import time
import zipfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import exercises as X  # noqa: E402

ROOT = X.ROOT
SPEC = ROOT / "course" / "hidden" / "class_submissions.txt"
SCRATCH = ROOT / "build" / "check-class"


def processes():
    return sum(1 for d in pathlib.Path("/proc").iterdir() if d.name.isdigit())


def main():
    if not SPEC.exists():
        sys.exit(f"{SPEC.relative_to(ROOT)} is not in this tree (a student's tree has no course/hidden/): "
                 "make check-class is the instructor's")
    shutil.rmtree(SCRATCH, ignore_errors=True)
    SCRATCH.mkdir(parents=True)
    secret = "attn-secret-" + secrets.token_hex(8)
    (SCRATCH / "secret.txt").write_text(f'"{secret}"\n')
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    outside = [SCRATCH / "pwned.txt", SCRATCH / "pwned-static.txt", pathlib.Path("/tmp/check-class-pwned.txt"),
               SCRATCH / "out" / "check-class-escaped.txt", SCRATCH / "check-class-escaped.txt"]
    for f in outside:
        f.unlink(missing_ok=True)
    students = X.read_wheats(SPEC)
    hostile = X.read_wheats(X.HOSTILE)
    for s in students:  # `hostile: TITLE`: that answer of course/hidden/hostile.txt, not a copy of it
        if "hostile" in s:
            h = next(h for h in hostile if h["title"].startswith(s["hostile"]))
            s.update({key: h[key] for key in ("file", "find", "replace")})
    exercises = {e.id: e for e in X.read_exercises()}
    submissions = SCRATCH / "submissions"
    submissions.mkdir()
    for s in students:
        text = X.apply(s).replace("@ROOT@", str(ROOT)).replace("@PORT@", str(port))
        if "outside" in s:
            text += "\n" + s["outside"].replace("@ROOT@", str(ROOT)) + "\n"
        files = {s["file"]: text}
        if s["student"] == "alice":  # 3.2 too: this tree's solution
            for file, _ in exercises["multi_head"].cuts:
                files[file] = (ROOT / file).read_text()
        name, form = s["student"], s["form"]
        if form == "folder":  # a student's tree: course/exercises.txt and the files at their paths
            files["course/exercises.txt"] = (ROOT / "course" / "exercises.txt").read_text()
            for path, body in files.items():
                (submissions / name / path).parent.mkdir(parents=True, exist_ok=True)
                (submissions / name / path).write_text(body)
            if name == "alice":  # her tree as she has it, built: 51 MB of objects, which are not read
                (submissions / name / "build" / "obj").mkdir(parents=True)
                (submissions / name / "build" / "obj" / "big.o").write_bytes(b"\0" * (51 << 20))
        elif form == "zip-slip":
            with zipfile.ZipFile(submissions / f"{name}.zip", "w") as z:
                for path, body in files.items():
                    z.writestr(path, body)
                z.writestr("../../check-class-escaped.txt", "escaped")
        elif form in ("zip", "files"):
            with zipfile.ZipFile(submissions / f"{name}.zip", "w") as z:
                for path, body in files.items():
                    z.writestr(pathlib.PurePosixPath(path).name if form == "files" else path, body)
        elif form == "tar":
            with tarfile.open(submissions / f"{name}.tar.gz", "w:gz") as t:
                for path, body in files.items():
                    data = body.encode()
                    info = tarfile.TarInfo(f"{name}/{path}")
                    info.size = len(data)
                    t.addfile(info, io.BytesIO(data))
    before = processes()
    out = SCRATCH / "out"
    command = [sys.executable, str(ROOT / "scripts" / "grade_class.py"), str(submissions), str(out),
               "--ex", "sigmoid_backward,multi_head", "--time-cap", "3", "--jobs", "2"] + os.environ.get("CHECK_CLASS_ARGS", "").split()
    start = time.time()
    first = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, errors="replace")
    seconds = time.time() - start
    failures = []
    if first.returncode != 0:
        failures.append(f"grade-class exited {first.returncode}:\n{first.stdout[-3000:]}{first.stderr[-3000:]}")
    print(first.stdout)
    results = {}
    for s in students:
        path = out / "results" / f"{s['student']}.json"
        if not path.exists():
            failures.append(f"{s['student']}: no results file")
            continue
        r = json.loads(path.read_text())
        results[s["student"]] = r
        verdicts = {v["exercise"]: v for v in r["exercises"]}
        v = verdicts.get("sigmoid_backward", {})
        ok = v.get("status") in [x.strip() for x in s["expect-1.1"].split("|")] and \
            s.get("expect-words", "") in v.get("words", "")
        print(f"  {s['student']:8} {v.get('status', '?'):20} {'as expected' if ok else 'NOT AS EXPECTED'}: {s['title']}")
        if not ok:
            failures.append(f"{s['student']} ({s['title']}): 1.1 {v.get('status')!r}, expected {s['expect-1.1']!r}"
                            f" with {s.get('expect-words', '')!r}; its words:\n{v.get('words', '')[-1500:]}")
        want = "passed" if s["student"] == "alice" else s.get("expect-3.2", "no submission")
        if verdicts.get("multi_head", {}).get("status") != want:
            failures.append(f"{s['student']}: 3.2 {verdicts.get('multi_head', {}).get('status')!r}, expected {want!r}")
    time.sleep(1)
    left = processes() - before
    if left > 20:
        failures.append(f"{left} more processes than before the run: a submission's processes outlived it")
    for f in outside:
        if f.exists():
            failures.append(f"a file was written outside a submission's folder: {f}")
            f.unlink()
    everything = first.stdout + first.stderr + "".join(p.read_text(errors="replace")
                                                       for p in out.rglob("*") if p.is_file())
    if secret in everything:
        failures.append("the secret was read: it is in the output or the results")
    try:
        connection, _ = listener.accept()
        failures.append("a submission opened a connection to this machine")
        connection.close()
    except BlockingIOError:
        pass
    rows = list(csv.reader((out / "gradebook.csv").open())) if (out / "gradebook.csv").exists() else []
    if len(rows) != 1 + 2 * len(students):
        failures.append(f"the gradebook has {len(rows)} rows, expected {1 + 2 * len(students)}")
    # the class page: every student linked to a page of their own, bob's known mistake counted and linked
    # to the course's section, ivan's failed check grouped by its words
    page = (out / "class.html").read_text() if (out / "class.html").exists() else ""
    wanted = ['<td class="count">1</td><td><a href="../../../docs/course/1-autograd.md#11-the-backward-of-the-sigmoid">'
              "tanh&#x27;s derivative", "the grading stopped"] + \
        [f'<a href="students/{s["student"]}.html">{s["student"]}</a>' for s in students]
    for w in wanted:
        if w not in page:
            failures.append(f"the class page (out/class.html) lacks {w!r}")
    for s in students:
        if not (out / "students" / f"{s['student']}.html").exists():
            failures.append(f"no page out/students/{s['student']}.html")
    # stopped half way: a second run grades nothing again
    again = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, errors="replace")
    kept = again.stdout.count("graded before")
    if again.returncode != 0 or kept != len(students):
        failures.append(f"the second run re-graded: {kept} of {len(students)} kept\n{again.stdout[-2000:]}")
    print(f"== make grade-class, {len(students)} generated submissions of 1.1 (one with 3.2): {seconds:.0f} s; "
          f"a second run kept all {kept}")
    listener.close()
    if failures:
        print("FAILED:")
        for f in failures:
            print("  " + f)
        sys.exit(1)
    shutil.rmtree(SCRATCH, ignore_errors=True)


if __name__ == "__main__":
    main()
