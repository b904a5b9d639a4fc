"""The course in the tools instructors grade with (docs/course/instructors.md).

    python3 scripts/autograder.py zip EX=id,... [--seed N|per-student] [--points P] OUT.zip
        (make autograder EX=... [SEED=] [POINTS=] [OUT=]): a Gradescope
        autograder, a zip of this tree (course/hidden/ included: the zip is
        the instructor's, never the students') with setup.sh, run_autograder
        and autograder.json at its root.
    python3 scripts/autograder.py run
        run_autograder's body, on Gradescope's machine: the submission in
        /autograder/submission graded by make grade-class (one student; the
        same unpacking, splicing, sandbox and judge), its verdicts written to
        /autograder/results/results.json in Gradescope's format. AUTOGRADER_HOME
        replaces /autograder (the check runs it in a folder of its own).
    python3 scripts/autograder.py validate results.json
        the file checked against Gradescope's documented format (every
        field's type and values; the tests' scores adding up).
    python3 scripts/autograder.py classroom TREE
        (make classroom TREE=dir): a GitHub Classroom autograding workflow,
        .github/workflows/classroom.yml, in a student's tree (make exercise
        OUT=dir): one test a exercise of its course/assignment.txt, `make
        grade EX=id`, its points when it passes.

Gradescope's format (gradescope-autograders.readthedocs.io, "Autograder
Specifications"): results.json holds an optional score, execution_time,
output, visibility and stdout_visibility, and `tests`, each with score,
max_score, status ("passed" or "failed"), name, number, output, tags and
visibility: "visible", "hidden", "after_due_date" or "after_published".

What a student sees: one test per group of the grader's checks (a catalog
case, an op's case, a list of checks), scored by the share of the exercise's
checks it holds; the instructor's hidden cases' groups "after_published",
so that a hidden case's words are seen only once grades are out; and for
each exercise a zero-point test with its verdict in words (the named known
mistake, the judge's sentence). The grader's whole output, the student's
prints among it, goes to results/stdout, which Gradescope shows the
instructor alone (stdout_visibility "hidden").
"""
import hashlib
import json
import os
import pathlib
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import zipfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import exercises as X  # noqa: E402  (the exercise list, this tree's files)

ROOT = X.ROOT
CONFIG = "autograder.json"

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image
# (made by make autograder). It installs the compiler and the sandbox, builds
# this tree's grader once (every submission's build shares its objects), and
# makes the instructor's hidden cases' source readable by root alone (a
# student's code runs as another user where bubblewrap cannot make a sandbox).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq make python3 bubblewrap util-linux >/dev/null
# g++ 12 or later (what the project is built with): Ubuntu 22.04's g++ is 11,
# its g++-12 package is 12; made the g++ that make finds first on the PATH
if ! g++ -dumpversion 2>/dev/null | grep -qE '^(1[2-9]|[2-9][0-9])'; then
    apt-get install -y -qq g++-12 >/dev/null
    ln -sf "$(command -v g++-12)" /usr/local/bin/g++
fi
cd /autograder/source
make -j"$(nproc)" {targets}
chmod -R go-rwx course/hidden
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for each submission (made by make autograder).
cd /autograder/source && exec python3 scripts/autograder.py run
"""


# ---- the zip ------------------------------------------------------------------------------------
def make_zip(args):
    names, seed, points, out = [], None, "10", None
    while args:
        a = args.pop(0)
        if a.startswith("EX="):
            names = [n for n in a[3:].split(",") if n]
        elif a == "--seed" and args:
            seed = args.pop(0)
        elif a == "--points" and args:
            points = args.pop(0)
        elif out is None and not a.startswith("-"):
            out = a
        else:
            sys.exit(f"{a}: not a flag of make autograder (EX=id,... SEED=n|per-student POINTS=p OUT=file.zip)")
    if not names:
        sys.exit("make autograder EX=id,... [SEED=n|per-student] [POINTS=p] [OUT=file.zip]: name the exercises")
    chosen = X.pick(X.read_exercises(), names)
    if seed not in (None, "", "per-student") and (not seed.isdigit() or len(seed) > 18):
        sys.exit(f"SEED={seed}: expected a whole number, or per-student")
    try:
        worth = float(points)
        if not 0 < worth <= 1000:
            raise ValueError
    except ValueError:
        sys.exit(f"POINTS={points}: expected a number of points an exercise, above 0")
    config = {"exercises": [e.id for e in chosen], "points": worth, "seed": seed or None,
              # a student's own seed is drawn from their Gradescope id and this salt, which the students never see
              "salt": secrets.token_hex(16) if seed == "per-student" else None}
    out = pathlib.Path(out or "autograder.zip").resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    trainer = any(g.startswith("trainer") for e in chosen for g in e.grade)
    targets = X.GRADER + (" build/examples/seq2seq" if trainer else "")
    temporary = out.with_name("." + out.name + ".part")
    with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as z:
        def add(name, text, mode=0o644):
            info = zipfile.ZipInfo(name, date_time=time.localtime()[:6])
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, text)
        for path in X.tracked_files():
            source = ROOT / path
            if source.is_file() and not source.is_symlink():
                add(path, source.read_bytes(), 0o755 if os.access(source, os.X_OK) else 0o644)
        add("setup.sh", SETUP.format(targets=targets), 0o755)
        add("run_autograder", RUN, 0o755)
        add(CONFIG, json.dumps(config, indent=1) + "\n")
    os.replace(temporary, out)
    print(f"{out}: a Gradescope autograder for {', '.join(e.number + ' ' + e.id for e in chosen)}, "
          f"{worth:g} points an exercise" + (f", seed {seed}" if seed else "") +
          ": upload it as the assignment's autograder (Configure Autograder, Zip file upload)")


# ---- run_autograder ----------------------------------------------------------------------------------
def student_seed(config, home):
    """The seed of this submission's hidden cases: the zip's, or (per-student)
    drawn from the submitter's Gradescope id and the zip's salt."""
    if config.get("seed") != "per-student":
        return config.get("seed")
    try:
        metadata = json.loads((home / "submission_metadata.json").read_text())
        who = str(metadata["users"][0]["id"])
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        who = "unknown"
    digest = hashlib.sha256((config["salt"] + ":" + who).encode()).hexdigest()
    return str(int(digest, 16) % 10 ** 15)


def sandbox_here():
    """bubblewrap where it can make a sandbox, else another user (a container
    run as root, where user namespaces are refused), else none (said)."""
    if shutil.which("bwrap") and subprocess.run(
            ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all",
             "--die-with-parent", "true"], capture_output=True).returncode == 0:
        return "bwrap"
    if os.geteuid() == 0 and shutil.which("setpriv"):
        return "user"
    return "none"


def run(_args):
    home = pathlib.Path(os.environ.get("AUTOGRADER_HOME", "/autograder"))
    # (on Gradescope this tree is home/source; a check runs this tree on a home of its own)
    config_file = home / "source" / CONFIG if (home / "source" / CONFIG).exists() else ROOT / CONFIG
    config = json.loads(config_file.read_text())
    started = time.time()
    work = pathlib.Path(tempfile.mkdtemp(prefix="attn-autograder-"))
    work.chmod(0o711)  # (the students' user reaches its copy of the tree inside; it lists nothing here)
    try:
        submissions, out = work / "submissions", work / "out"
        submissions.mkdir()
        # the submission as one student's folder (links left as links: grade-class refuses them)
        shutil.copytree(home / "submission", submissions / "submission", symlinks=True)
        sandbox = os.environ.get("AUTOGRADER_SANDBOX") or sandbox_here()
        seed = student_seed(config, home)
        command = [sys.executable, str(ROOT / "scripts" / "grade_class.py"), str(submissions), str(out),
                   "--ex", ",".join(config["exercises"]), "--sandbox", sandbox]
        command += ["--seed", seed] if seed else []
        r = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, errors="replace")
        sys.stdout.write(r.stdout + r.stderr)  # Gradescope's results/stdout: the instructor's to read
        result_file = out / "results" / "submission.json"
        verdicts = json.loads(result_file.read_text())["exercises"] if result_file.exists() else []
        results = gradescope_results(verdicts, config, sandbox, r, time.time() - started)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    problems = validate(results)
    if problems:  # (never upload a file Gradescope would refuse: say why instead)
        results = {"score": 0, "output": "The autograder made a results.json outside Gradescope's format: " +
                   "; ".join(problems) + ". Tell the instructor.", "tests": []}
    target = home / "results" / "results.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(".results.json.part")
    temporary.write_text(json.dumps(results, indent=1, ensure_ascii=False))
    os.replace(temporary, target)
    print(f"{target}: {results.get('score')} points")


STATUS_WORDS = {
    "passed": "passed",
    "failed": "not passed: some checks wrong",
    "failed by the judge": "not passed: the judge's fresh draws do not agree with this tree's solution",
    "timed out": "not passed: still running after the time limit",
    "does not compile": "not passed: it does not compile",
    "refused": "not graded: refused",
    "no submission": "not graded: no file of this exercise in the submission",
}


def gradescope_results(verdicts, config, sandbox, run_result, seconds):
    """Gradescope's results.json from one student's grade-class verdicts."""
    worth = float(config["points"])
    by_id = {v["exercise"]: v for v in verdicts}
    tests, total = [], 0.0
    for k, ex_id in enumerate(config["exercises"], 1):
        v = by_id.get(ex_id)
        if v is None:
            tests.append({"name": f"{ex_id}: not graded", "number": f"{k}", "score": 0.0, "max_score": worth,
                          "status": "failed", "visibility": "visible", "output":
                          "The grading stopped before this exercise (the instructor sees why in the "
                          "autograder's output)."})
            continue
        label = f"{v['number']} {v.get('title', ex_id)}"
        words = [f"Exercise {label} ({ex_id}): {STATUS_WORDS.get(v['status'], v['status'])}."]
        if v["total"]:
            words.append(f"{v['right']} of {v['total']} checks right.")
        words += [f"This is a known mistake: {m}." for m in v["mistakes"]]
        judge = [line for line in v["words"].splitlines() if line.startswith("the judge:")]
        words += judge[-1:]
        if v["status"] in ("does not compile", "refused", "timed out", "no submission"):
            words.append(v["words"].strip()[-1500:])
        groups = v.get("groups") or []
        # a test a group of checks, when the groups' counts are the grader's (check_groups); else the exercise whole
        scored = v["status"] in ("passed", "failed") and groups
        tests.append({"name": f"{label}: the verdict", "number": f"{v['number']}.0", "score": 0.0,
                      "max_score": 0.0 if scored else worth,
                      "status": "passed" if v["status"] == "passed" else "failed",
                      "visibility": "visible", "output": "\n".join(words)})
        if not scored:  # (the gradebook's score: 1 for a pass, the share of checks right of a failure, else 0)
            points = worth if v["status"] == "passed" else \
                round(worth * v["right"] / v["total"], 4) if v["status"] == "failed" and v["total"] else 0.0
            tests[-1]["score"] = points
            total += points
            continue
        for j, g in enumerate(groups, 1):
            right = g["total"] if v["status"] == "passed" else g["right"]
            share = worth / v["total"]
            output = "\n".join(["all right"] if right == g["total"] else
                               [f"{g['total'] - g['right']} of {g['total']} checks wrong:"] +
                               [f"  {w}" for w in g["wrong"]])
            tests.append({"name": f"{label}: {g['name']}", "number": f"{v['number']}.{j}",
                          "score": round(share * right, 4), "max_score": round(share * g["total"], 4),
                          "status": "passed" if right == g["total"] else "failed",
                          "visibility": "after_published" if g.get("hidden") else "visible",
                          "tags": [ex_id] + (["hidden"] if g.get("hidden") else []), "output": output})
            total += share * right
    output = (f"Graded by make grade-class in {'bubblewrap' if sandbox == 'bwrap' else 'a user of its own'}"
              if sandbox != "none" else "Graded WITHOUT a sandbox (neither bubblewrap nor another user was "
                                        "possible here)")
    output += f"; {len(config['exercises'])} exercises, {worth:g} points each."
    if run_result.returncode != 0:
        output += " The grading did not end well: the instructor sees why in the autograder's output."
    total = sum(t["score"] for t in tests)  # (the tests' rounded scores: Gradescope shows their sum)
    return {"score": round(total, 4), "execution_time": int(seconds), "output": output,
            "output_format": "text", "visibility": "visible", "stdout_visibility": "hidden", "tests": tests}


# ---- Gradescope's format, checked -------------------------------------------------------------------
VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}
FORMATS = {"text", "html", "simple_format", "md", "ansi"}
TOP = {"score": (int, float), "execution_time": (int, float), "output": str, "output_format": str,
       "test_output_format": str, "test_name_format": str, "visibility": str, "stdout_visibility": str,
       "extra_data": dict, "tests": list, "leaderboard": list}
TEST = {"score": (int, float), "max_score": (int, float), "status": str, "name": str, "name_format": str,
        "number": str, "output": str, "output_format": str, "tags": list, "visibility": str, "extra_data": dict}


def validate(results):
    """The problems of `results` against Gradescope's documented format: no
    field outside it, every field of its type, the visibility and format
    words of its lists, a score where Gradescope needs one (top-level or
    on every test), a test's score within 0 and its max_score."""
    problems = []

    def fields(obj, allowed, where):
        if not isinstance(obj, dict):
            problems.append(f"{where}: not an object")
            return
        for key, value in obj.items():
            if key not in allowed:
                problems.append(f"{where}: {key!r} is not a field of the format")
            elif isinstance(value, bool) or not isinstance(value, allowed[key]):
                problems.append(f"{where}.{key}: {type(value).__name__}, not the format's type")
        for key in ("visibility", "stdout_visibility"):
            if key in obj and obj[key] not in VISIBILITIES:
                problems.append(f"{where}.{key}: {obj[key]!r}, not one of {sorted(VISIBILITIES)}")
        for key in ("output_format", "test_output_format", "test_name_format", "name_format"):
            if key in obj and obj[key] not in FORMATS:
                problems.append(f"{where}.{key}: {obj[key]!r}, not one of {sorted(FORMATS)}")

    fields(results, TOP, "results")
    if problems:
        return problems
    tests = results.get("tests", [])
    for i, t in enumerate(tests):
        fields(t, TEST, f"tests[{i}]")
        if not isinstance(t, dict):
            continue
        if "status" in t and t["status"] not in ("passed", "failed"):
            problems.append(f"tests[{i}].status: {t['status']!r}, not passed or failed")
        if "tags" in t and not all(isinstance(tag, str) for tag in t["tags"]):
            problems.append(f"tests[{i}].tags: not a list of strings")
        if isinstance(t.get("score"), (int, float)) and isinstance(t.get("max_score"), (int, float)) and \
                not 0 <= t["score"] <= t["max_score"] + 1e-9:
            problems.append(f"tests[{i}]: score {t['score']} outside 0 to its max_score {t['max_score']}")
    if "score" not in results and not all(isinstance(t, dict) and "score" in t for t in tests):
        problems.append("no top-level score, and a test without one (Gradescope needs one or the other)")
    if "score" in results and tests and all(isinstance(t, dict) and "score" in t for t in tests):
        added = sum(t["score"] for t in tests)
        if abs(added - results["score"]) > 1e-3:
            problems.append(f"the score {results['score']} is not the tests' sum, {added:g}")
    return problems


# ---- GitHub Classroom -----------------------------------------------------------------------------------
def classroom(args):
    """.github/workflows/classroom.yml in a student's tree: GitHub Classroom's
    autograding (the command grader, then the reporter), a test a exercise."""
    if len(args) != 1 or not args[0]:
        sys.exit("make classroom TREE=<a student's tree (make exercise EX=... OUT=dir)> [POINTS=p]")
    tree = pathlib.Path(args[0]).resolve()
    points = os.environ.get("POINTS") or "10"
    if not (tree / "course" / "exercises.txt").exists():
        sys.exit(f"{tree}: not a student's tree (no course/exercises.txt): make exercise EX=... OUT={args[0]} first")
    assignment = tree / "course" / "assignment.txt"
    names = [l.strip() for l in assignment.read_text().splitlines() if l.strip() and not l.startswith("#")] \
        if assignment.exists() else []
    if not names:
        sys.exit(f"{assignment}: no exercise in it (make exercise EX=id,... writes it)")
    if not points.isdigit() or not 0 < int(points) <= 1000:
        sys.exit(f"POINTS={points}: expected a whole number of points an exercise (GitHub Classroom's max-score)")
    chosen = X.pick(X.read_exercises(), names)
    steps, runners = [], []
    for e in chosen:
        step = e.id.replace("_", "-")
        runners.append(step)
        trainer = any(g.startswith("trainer") for g in e.grade)
        steps.append(f"""    - name: {e.number} {e.id}
      id: {step}
      uses: classroom-resources/autograding-command-grader@v1
      with:
        test-name: "{e.number} {e.title.replace('"', "'")}"
        command: make grade EX={e.id} STRICT=1
        timeout: {30 if trainer else 20}
        max-score: {points}
""")
    env = "".join(f'        {r.upper()}_RESULTS: "${{{{steps.{r}.outputs.result}}}}"\n' for r in runners)
    text = f"""# GitHub Classroom's autograding for this tree's exercises (made by make
# classroom): each test runs the grader, `make grade EX=id STRICT=1`, which exits 0
# when every check is right; the reporter sends the points to the classroom.
# The first test builds the library (a few minutes); the others reuse it.
# This runs the student's own repository: a student can change what it runs.
# It is feedback for the student, not the grade (make grade-class and make
# autograder grade with the hidden cases, the judge and a sandbox).
name: Autograding Tests
'on':
- push
- repository_dispatch
permissions:
  checks: write
  actions: read
  contents: read
jobs:
  run-autograding-tests:
    runs-on: ubuntu-latest
    if: github.actor != 'github-classroom[bot]'
    steps:
    - name: Checkout code
      uses: actions/checkout@v4
    - name: Install the compiler
      run: sudo apt-get update -qq && sudo apt-get install -y -qq g++ make python3
{"".join(steps)}    - name: Autograding Reporter
      uses: classroom-resources/autograding-grading-reporter@v1
      env:
{env}      with:
        runners: {",".join(runners)}
"""
    target = tree / ".github" / "workflows" / "classroom.yml"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    print(f"{target}: {len(chosen)} tests ({', '.join(e.number for e in chosen)}), {points} points each: push the "
          f"tree as the assignment's template repository")


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("zip", "run", "validate", "classroom"):
        sys.exit(__doc__)
    command, args = sys.argv[1], sys.argv[2:]
    if command == "zip":
        make_zip(args)
    elif command == "run":
        run(args)
    elif command == "validate":
        if len(args) != 1:
            sys.exit("python3 scripts/autograder.py validate results.json")
        try:
            results = json.loads(pathlib.Path(args[0]).read_text())
        except (OSError, ValueError) as e:
            sys.exit(f"{args[0]}: not a JSON file that can be read ({e})")
        problems = validate(results)
        for p in problems:
            print(f"{args[0]}: {p}")
        if problems:
            sys.exit(1)
        print(f"{args[0]}: Gradescope's format, {len(results.get('tests', []))} tests, score {results.get('score')}")
    else:
        classroom(args)


if __name__ == "__main__":
    main()
