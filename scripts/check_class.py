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
               "--ex", "sigmoid_backward,multi_head", "--time-cap", "3"] + os.environ.get("CHECK_CLASS_ARGS", "").split()
    # graded as two shards side by side (SHARD=1/2 and 2/2, each its own OUT), then merged into out
    start = time.time()
    shards = [subprocess.Popen(command + ["--shard", f"{k}/2", "--out", str(SCRATCH / f"shard-{k}")], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
              for k in (1, 2)]
    printed = [p.communicate()[0] for p in shards]
    merged = subprocess.run([sys.executable, str(ROOT / "scripts" / "grade_class.py"), str(out), "--merge",
                             f"{SCRATCH / 'shard-1'} {SCRATCH / 'shard-2'}"], cwd=ROOT, capture_output=True,
                            text=True, errors="replace")
    seconds = time.time() - start
    failures = []
    for k, (p, text) in enumerate(zip(shards, printed), 1):
        if p.returncode != 0:
            failures.append(f"grade-class's shard {k}/2 exited {p.returncode}:\n{text[-3000:]}")
    if merged.returncode != 0:
        failures.append(f"grade-class-merge exited {merged.returncode}:\n{merged.stdout[-2000:]}{merged.stderr[-2000:]}")
    first = subprocess.CompletedProcess(command, 0, "".join(printed) + merged.stdout, merged.stderr)
    print(first.stdout)
    counts = [len(list((SCRATCH / f"shard-{k}" / "results").glob("*.json"))) for k in (1, 2)]
    if counts != [(len(students) + 1) // 2, len(students) // 2]:
        failures.append(f"the shards graded {counts[0]} and {counts[1]} students, expected "
                        f"{(len(students) + 1) // 2} and {len(students) // 2} (every second one each)")
    # two gradings of one student that differ: the merge refuses, naming the student
    (SCRATCH / "conflict" / "results").mkdir(parents=True)
    first_result = sorted((SCRATCH / "shard-1" / "results").glob("*.json"))[0]
    (SCRATCH / "conflict" / "results" / first_result.name).write_text('{"student": "changed", "exercises": []}')
    conflict = subprocess.run([sys.executable, str(ROOT / "scripts" / "grade_class.py"), str(out), "--merge",
                               str(SCRATCH / "conflict")], cwd=ROOT, capture_output=True, text=True)
    if conflict.returncode == 0 or "graded in two shards" not in conflict.stderr:
        failures.append(f"a merge of two different gradings of {first_result.stem} was not refused: "
                        f"{conflict.stdout}{conflict.stderr}")
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
    if "LEAKED " in everything:  # (what dave prints before a line of a file it could read)
        failures.append("a submission read a file of the instructor's: " +
                        everything[everything.index("LEAKED "):][:200])
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
    print(f"== make grade-class, {len(students)} generated submissions of 1.1 (one with 3.2), in two shards "
          f"merged: {seconds:.0f} s; a second run kept all {kept}")
    failures += check_exports(results, students, out)
    listener.close()
    if failures:
        print("FAILED:")
        for f in failures:
            print("  " + f)
        sys.exit(1)
    shutil.rmtree(SCRATCH, ignore_errors=True)


def check_exports(results, students, out):
    """The class's verdicts in Gradescope's results.json format, the
    autograder's zip, run_autograder end to end on a hostile submission, and
    GitHub Classroom's workflow (scripts/autograder.py)."""
    import autograder as A
    failures = []
    config = {"exercises": ["sigmoid_backward", "multi_head"], "points": 10.0, "seed": None, "salt": None}
    ran = subprocess.CompletedProcess([], 0)
    for name, r in results.items():
        g = A.gradescope_results(r["exercises"], config, "bwrap", ran, 1.0)
        problems = A.validate(g)
        if problems:
            failures.append(f"{name}'s results.json is not Gradescope's format: {problems}")
        verdicts = {v["exercise"]: v for v in r["exercises"]}
        # the points: 10 an exercise passed, the share of checks right of a failed one, 0 otherwise
        want = sum(10.0 if v["status"] == "passed" else 10.0 * v["right"] / v["total"]
                   if v["status"] == "failed" and v["total"] else 0.0 for v in verdicts.values())
        if abs(g["score"] - want) > 1e-3:
            failures.append(f"{name}: results.json gives {g['score']} points, the verdicts {want:g}")
    bob = A.gradescope_results(results["bob"]["exercises"], config, "bwrap", ran, 1.0)
    if not any("This is a known mistake: tanh's derivative" in t["output"] for t in bob["tests"]) or \
            bob["score"] != 0:
        failures.append(f"bob's results.json: no test names tanh's derivative, or {bob['score']} points where "
                        f"every check of 1.1 is wrong")
    alice = A.gradescope_results(results["alice"]["exercises"], config, "bwrap", ran, 1.0)
    if alice["score"] != 20 or len(alice["tests"]) < 4:
        failures.append(f"alice's results.json: {alice['score']} points in {len(alice['tests'])} tests, expected "
                        f"20 in a test a check group")
    # the instructor's hidden cases' group: seen after the grades are published, and only then
    hand = [{"exercise": "additive_score", "number": "2.1", "title": "Additive score", "status": "failed", "right": 3,
             "total": 4, "score": 0.75, "mistakes": [], "words": "", "seconds": 1.0,
             "groups": [{"name": "additive_score (a batch)", "right": 2, "total": 2, "wrong": [], "hidden": False},
                        {"name": "hidden:additive_score (long keys)", "right": 1, "total": 2,
                         "wrong": ["gradients: input 0 wrong"], "hidden": True}]}]
    g = A.gradescope_results(hand, dict(config, exercises=["additive_score"]), "bwrap", ran, 1.0)
    expected = [("2.1.0", 0.0, 0.0, "visible"), ("2.1.1", 5.0, 5.0, "visible"), ("2.1.2", 2.5, 5.0, "after_published")]
    got = [(t["number"], t["score"], t["max_score"], t["visibility"]) for t in g["tests"]]
    if got != expected or g["score"] != 7.5:
        failures.append(f"a hand-made verdict's results.json: {got}, {g['score']} points; expected {expected}, 7.5")
    # the validator refuses what Gradescope would: it is not a check that passes everything
    for bad in [dict(g, visibility="public"), dict(g, tests=[dict(g["tests"][1], score=6.0)]),
                dict(g, tests=[dict(g["tests"][1], status="ok")]), dict(g, score="7.5"),
                dict(g, tests=[dict(g["tests"][1], points=5)]), dict(g, score=9.0)]:
        if not A.validate(bad):
            failures.append(f"the format check let a wrong results.json through: {json.dumps(bad)[:300]}")
    # the zip: setup.sh and run_autograder at its root, executable; the tree, the hidden cases with it
    archive = SCRATCH / "autograder.zip"
    made = subprocess.run([sys.executable, str(ROOT / "scripts" / "autograder.py"), "zip", "EX=sigmoid_backward",
                           "--seed", "per-student", str(archive)], cwd=ROOT, capture_output=True, text=True)
    if made.returncode != 0:
        failures.append(f"make autograder failed: {made.stdout}{made.stderr}")
    else:
        with zipfile.ZipFile(archive) as z:
            names = set(z.namelist())
            modes = {i.filename: i.external_attr >> 16 for i in z.infolist()}
            config_made = json.loads(z.read("autograder.json"))
        for member in ("setup.sh", "run_autograder", "autograder.json", "Makefile", "course/hidden/hidden_cases.cpp",
                       "autograd/ops_elementwise.cpp"):
            if member not in names:
                failures.append(f"the autograder zip lacks {member}")
        if not all(modes.get(m, 0) & 0o111 for m in ("setup.sh", "run_autograder")):
            failures.append("setup.sh or run_autograder is not executable in the zip")
        if config_made.get("exercises") != ["sigmoid_backward"] or not config_made.get("salt"):
            failures.append(f"the zip's autograder.json: {config_made}")
    # run_autograder end to end: a submission that reads the hidden cases, writes a results.json of its
    # own with full points, and gets 1.1 wrong (tanh's derivative); with root, as another user
    home = SCRATCH / "gradescope"
    (home / "source").mkdir(parents=True)
    (home / "source" / "autograder.json").write_text(json.dumps(
        {"exercises": ["sigmoid_backward"], "points": 10, "seed": "per-student", "salt": "00"}))
    (home / "submission_metadata.json").write_text(json.dumps({"users": [{"id": 4242, "name": "Zoe"}]}))
    forged = json.dumps({"score": 10, "tests": []}).replace('"', '\\"')
    answer = ('        for (const char* path : {"course/hidden/README.md", "@ROOT@/course/hidden/README.md"})\n'
              '            if (std::FILE* f = std::fopen(path, "r")) { char s[200] = {}; if (std::fgets(s, sizeof s, f)) '
              '{ std::fputs("LEAKED ", stdout); std::puts(s); } }\n'
              f'        if (std::FILE* f = std::fopen("{home}/results/results.json", "w")) std::fputs("{forged}", f);\n'
              '        bw.accumulate(0, pointwise(bw.grad(), bw.output(), [](real g, real z) { return g * (1 - z * z); }));')
    bob_spec = next(s for s in X.read_wheats(SPEC) if s["student"] == "bob")
    text = X.apply(dict(bob_spec, replace=answer)).replace("@ROOT@", str(ROOT))
    (home / "submission").mkdir()
    (home / "submission" / "ops_elementwise.cpp").write_text(text)
    (home / "results").mkdir()
    environment = dict(os.environ, AUTOGRADER_HOME=str(home))
    hidden = ROOT / "course" / "hidden"
    modes = {}
    if os.geteuid() == 0 and shutil.which("setpriv"):
        environment["AUTOGRADER_SANDBOX"] = "user"  # (what a Gradescope container gets, bubblewrap refused there)
        # while other users may read course/hidden/, SANDBOX=user refuses to start
        if any(f.stat().st_mode & 0o004 for f in hidden.rglob("*")):
            refused = subprocess.run([sys.executable, str(ROOT / "scripts" / "grade_class.py"), str(home),
                                      str(SCRATCH / "refused"), "--ex", "sigmoid_backward", "--sandbox", "user"],
                                     cwd=ROOT, capture_output=True, text=True)
            if refused.returncode == 0 or "can be read by other users" not in refused.stderr:
                failures.append(f"SANDBOX=user started with course/hidden/ readable by others: {refused.stderr[-500:]}")
        modes = {f: f.stat().st_mode for f in [hidden] + list(hidden.rglob("*"))}
        subprocess.run(["chmod", "-R", "go-rwx", str(hidden)], check=True)
    try:
        gs = subprocess.run([sys.executable, str(ROOT / "scripts" / "autograder.py"), "run"], cwd=ROOT,
                            capture_output=True, text=True, errors="replace", env=environment)
    finally:
        for f, mode in modes.items():
            f.chmod(mode)
    try:
        produced = json.loads((home / "results" / "results.json").read_text())
    except (OSError, ValueError) as e:
        produced = {}
        failures.append(f"run_autograder wrote no results.json that can be read ({e}):\n{gs.stdout[-2000:]}{gs.stderr}")
    if produced:
        sandbox = environment.get("AUTOGRADER_SANDBOX", "bubblewrap")
        outputs = "\n".join(t.get("output", "") for t in produced.get("tests", []))
        if A.validate(produced) or not produced.get("output", "").startswith("Graded by make grade-class") or \
                produced.get("score") != 0 or "tanh's derivative" not in outputs:
            failures.append(f"run_autograder ({sandbox}): a results.json that is not the grader's: "
                            f"{json.dumps(produced)[:1500]}\n{gs.stdout[-1500:]}")
        if "LEAKED " in gs.stdout + json.dumps(produced):
            failures.append(f"run_autograder ({sandbox}): the submission read the hidden cases")
        print(f"  run_autograder ({sandbox}), a hostile answer with tanh's derivative: {produced.get('score')} of 10 "
              f"points, {len(produced.get('tests', []))} tests, Gradescope's format")
    # GitHub Classroom: a workflow whose tests grade each exercise and whose reporter reads each test
    tree = SCRATCH / "classroom-tree"
    (tree / "course").mkdir(parents=True)
    shutil.copy(ROOT / "course" / "exercises.txt", tree / "course" / "exercises.txt")
    (tree / "course" / "assignment.txt").write_text("sigmoid_backward\nmulti_head\n")
    made = subprocess.run([sys.executable, str(ROOT / "scripts" / "autograder.py"), "classroom", str(tree)],
                          cwd=ROOT, capture_output=True, text=True)
    workflow = tree / ".github" / "workflows" / "classroom.yml"
    if made.returncode != 0 or not workflow.exists():
        failures.append(f"make classroom failed: {made.stdout}{made.stderr}")
    else:
        try:
            import yaml
        except ImportError:
            yaml = None
        if yaml is None:
            print("  (no PyYAML here: the Classroom workflow's structure not read back)")
        else:
            steps = yaml.safe_load(workflow.read_text())["jobs"]["run-autograding-tests"]["steps"]
            graders = [st for st in steps if "autograding-command-grader" in st.get("uses", "")]
            reporter = steps[-1]
            wanted = [("sigmoid-backward", "make grade EX=sigmoid_backward STRICT=1"), ("multi-head", "make grade EX=multi_head STRICT=1")]
            if [(st["id"], st["with"]["command"]) for st in graders] != wanted or \
                    reporter["with"]["runners"] != "sigmoid-backward,multi-head" or \
                    sorted(reporter["env"]) != ["MULTI-HEAD_RESULTS", "SIGMOID-BACKWARD_RESULTS"] or \
                    reporter["env"]["MULTI-HEAD_RESULTS"] != "${{steps.multi-head.outputs.result}}":
                failures.append(f"the Classroom workflow's steps are not a test a exercise and a reporter of "
                                f"each: {steps}")
    return failures


if __name__ == "__main__":
    main()
