"""A class's submissions graded, each in a sandbox, into a gradebook
(make grade-class; docs/course/instructors.md).

    python3 scripts/grade_class.py SUBMISSIONS OUT [--ex ID,...] [--seed N] [--roster FILE]
                                   [--sandbox bwrap|none]

SUBMISSIONS holds one entry per student, named by the student: a folder, a
.zip, or a .tar/.tar.gz/.tgz, holding a student's tree or only the files of
the exercises' cut code (at their paths in the tree, or by their names
alone). Every (student, exercise) gets a verdict of its own:

  1. the student's files found in the submission, unpacked with every member
     checked (no absolute path, no '..', no link, at most 5,000 files and
     50 MB; a build/ or .git/ folder in it is left out);
  2. the bodies of the student's blocks spliced into a fresh copy of this
     tree that shares this tree's compiled files (exercises.py: spliced_files,
     write_tree), with no preprocessor directive but #pragma and no asm
     with an instruction in them (what could read a file of this machine
     into the build); one exercise's files a tree, so that one exercise
     that does not compile costs that exercise alone;
  3. built here (compiling runs none of the student's code), with a time and
     a memory limit;
  4. graded, and judged (exercises.py: judge_words), by the grader run in
     the sandbox: bubblewrap (Debian's bubblewrap), with no network, its own
     process and user namespaces, this machine's files read-only, the home
     folders, /tmp, this tree (course/hidden/ included), the submissions and
     OUT hidden, only the copy's build/course/ writable, and limits on
     time, processes, file size and output; the judge's comparison made
     here, in this process, which runs no student code.

Each student's verdicts are written to OUT/results/STUDENT.json at once
(written whole to a new file, then renamed), so a run stopped half way
goes on where it stopped and grades nothing twice; OUT/gradebook.csv and
the class at a glance, OUT/class.html (scripts/class_page.py), are
written from all of them at the end. --sandbox none runs the students'
code as you, unsandboxed: only for code you trust.
"""
import concurrent.futures
import csv
import glob
import io
import itertools
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import exercises as X  # noqa: E402  (the tree's tools: splicing, the shared build, the judge)
import class_page  # noqa: E402  (OUT/class.html)

ROOT = X.ROOT
SKIPPED = {"build", ".git"}    # folders of a submission never read (a student's build, a repository's history)
MOST_FILES = 5000
MOST_BYTES = 50 << 20
MOST_OUTPUT = 1 << 20          # a grader run's output kept: its first and its last MOST_OUTPUT bytes
BUILD_SECONDS = 600
GRADE_SECONDS = 900            # a trainer exercise (6.1) trains inside it
MOST_PROCESSES = 256           # beyond those the machine's user runs already
MOST_FILE_BYTES = 256 << 20    # any one file the grader's run writes
GRADE_RSS_MB = 4096            # AddressSanitizer's own limit on the grader's memory (it cannot run under RLIMIT_AS)
TIME_CAP = None                # --time-cap S: every check of the grader at most S seconds
GRADE_MEMORY = 6 << 30         # the control group's (Limits), above ASan's own


class Refused(Exception):
    """A submission, or one exercise of it, that cannot be graded: the words say why."""


# ---- 1. unpacking ----------------------------------------------------------------------------
def student_name(entry):
    name = entry.name
    for suffix in (".tar.gz", ".tgz", ".tar", ".zip"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def checked_member(name, where):
    p = pathlib.PurePosixPath(name)
    if p.is_absolute() or ".." in p.parts or "\\" in name:
        raise Refused(f"{where}: a member outside the folder ({name!r}): refused")
    return p


def unpack(entry, into):
    """The submission `entry` as plain files under `into`."""
    into.mkdir(parents=True)
    count = size = 0

    def add(name, data_reader, length):
        nonlocal count, size
        if SKIPPED & set(pathlib.PurePosixPath(name).parts):
            return  # a build or a repository's history: never a student's answer, and often large
        count += 1
        size += length
        if count > MOST_FILES or size > MOST_BYTES:
            raise Refused(f"{entry.name}: more than {MOST_FILES} files or {MOST_BYTES >> 20} MB: refused")
        target = into / checked_member(name, entry.name)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data_reader())

    if entry.is_dir():
        for folder, subfolders, names in os.walk(entry):
            subfolders[:] = sorted(d for d in subfolders if d not in SKIPPED)
            for name in sorted(names) + [d for d in subfolders if os.path.islink(os.path.join(folder, d))]:
                path = pathlib.Path(folder) / name
                if path.is_symlink():
                    raise Refused(f"{path}: a link: refused (submit plain files)")
                if path.is_file():
                    add(path.relative_to(entry).as_posix(), path.read_bytes, path.stat().st_size)
    elif entry.name.endswith(".zip"):
        try:
            with zipfile.ZipFile(entry) as z:
                for info in z.infolist():
                    if info.is_dir():
                        continue
                    if (info.external_attr >> 16) & 0o170000 == 0o120000:
                        raise Refused(f"{entry.name}: {info.filename} is a link: refused (submit plain files)")
                    add(info.filename, lambda info=info: z.read(info), info.file_size)
        except zipfile.BadZipFile as e:
            raise Refused(f"{entry.name}: not a zip file that can be read ({e})")
    elif entry.name.endswith((".tar", ".tar.gz", ".tgz")):
        try:
            with tarfile.open(entry) as t:
                for m in t.getmembers():
                    if m.isdir():
                        continue
                    if not m.isfile():
                        raise Refused(f"{entry.name}: {m.name} is not a plain file (a link or a device): refused")
                    add(m.name, lambda m=m: t.extractfile(m).read(), m.size)
        except tarfile.TarError as e:
            raise Refused(f"{entry.name}: not a tar archive that can be read ({e})")
    else:
        raise Refused(f"{entry.name}: not a folder, a .zip or a .tar(.gz): not graded")


def student_view(unpacked, chosen, into):
    """A folder holding the student's file of each chosen exercise at its
    path in the tree, found in the submission at that path (under at most one
    wrapping folder) or, failing that, by its name alone where only one file
    has it. Files not found are left out (that exercise: no submission)."""
    roots = [unpacked] + [d for d in unpacked.iterdir() if d.is_dir()]
    every = [p for p in unpacked.rglob("*") if p.is_file()]
    for e in chosen:
        wanted = [file for file, _ in e.cuts]
        if e.id == "capstone":
            wanted = ["course/capstone.txt"]
            for root in roots:
                if (root / "course" / "capstone.txt").is_file():
                    code, named = X.read_capstone(root / "course" / "capstone.txt")
                    wanted += named + [file for file, _ in code]
                    break
        for file in wanted:
            found = next((root / file for root in roots if (root / file).is_file()), None)
            if found is None:
                same_name = [p for p in every if p.name == pathlib.PurePosixPath(file).name]
                found = same_name[0] if len(same_name) == 1 else None
            if found is not None:
                (into / file).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(found, into / file)


# ---- 2. what may be compiled -----------------------------------------------------------------
DIRECTIVE = re.compile(r"^\s*#\s*(?!pragma\b)\w+", re.M)
ASM_WITH_TEXT = re.compile(r"\b(?:asm|__asm__|__asm)\b\s*(?:volatile\s*|__volatile__\s*)?\(\s*\"[^\"]")


def refuse_directives(files, exercise):
    """Raises Refused where a spliced body holds a preprocessor directive
    other than #pragma (an #include of a file of this machine would be
    compiled into the build, and its text shown in an error), or an asm
    statement with an instruction in it (.incbin reads a file too)."""
    for file, opening in exercise.cuts:
        text = files.get(file)
        if text is None:
            continue
        start, end = X.block_span(text, opening, file)
        body = text[start:end]
        for pattern, what in ((DIRECTIVE, "a preprocessor directive other than #pragma"),
                              (ASM_WITH_TEXT, "an asm statement with an instruction in it")):
            m = pattern.search(body)
            if m:
                line = body[: m.start()].count("\n") + 1
                raise Refused(f"{file}: {what} in the block to write ({m.group(0).strip()!r}, its line {line}): "
                              f"refused (the headers the file includes are the block's; nothing else is read)")


# ---- 3. building, 4. the sandbox ---------------------------------------------------------------
def compiler_limits(seconds, address_bytes):
    """prlimit's words for a build: CPU time and memory (a template that
    instantiates without end stops there)."""
    return ["prlimit", f"--cpu={seconds}", f"--as={address_bytes}", "--core=0", "--"]


class Limits:
    """A control group of its own for one grader run: at most MOST_PROCESSES
    processes (a fork bomb stops there) and GRADE_MEMORY bytes (the kernel
    kills what goes past), for the run and everything it starts. Linux's
    cgroup v1 (/sys/fs/cgroup/pids and /memory, writable by root) or v2 (a
    folder of /sys/fs/cgroup this user may write, with both controllers);
    where neither can be made, `missing` says so and prlimit's limits alone
    hold (RLIMIT_NPROC, which the kernel does not apply to root)."""
    numbers = itertools.count(1)

    def __init__(self, sandbox="bwrap"):
        name = f"attn-grade-{os.getpid()}-{next(Limits.numbers)}"
        self.folders, self.missing = [], ""
        self.user = NOBODY if sandbox == "user" else None  # close(): every process of that user killed too
        v1 = [pathlib.Path("/sys/fs/cgroup/pids"), pathlib.Path("/sys/fs/cgroup/memory")]
        try:
            if all(os.access(d, os.W_OK) for d in v1):
                pids, memory = (d / name for d in v1)
                pids.mkdir(), memory.mkdir()
                self.folders = [pids, memory]
                (pids / "pids.max").write_text(str(MOST_PROCESSES))
                (memory / "memory.limit_in_bytes").write_text(str(GRADE_MEMORY))
                return
            v2 = pathlib.Path("/sys/fs/cgroup")
            mine = v2 / pathlib.Path("/proc/self/cgroup").read_text().strip().split("::")[-1].lstrip("/")
            if (v2 / "cgroup.controllers").exists() and os.access(mine, os.W_OK) and \
                    {"pids", "memory"} <= set((mine / "cgroup.controllers").read_text().split()):
                folder = mine / name
                folder.mkdir()
                self.folders = [folder]
                (folder / "pids.max").write_text(str(MOST_PROCESSES))
                (folder / "memory.max").write_text(str(GRADE_MEMORY))
                return
        except OSError as e:
            self.close()
            self.missing = f"no control group could be made ({e})"
            return
        self.missing = "no control group this user may make (cgroup v1 pids and memory, or v2 with both controllers)"

    def wrap(self, command):
        """command, started inside the groups (a shell joins them, then
        becomes the command: no Python runs between fork and exec, which is
        not safe with the threads of --jobs)."""
        if not self.folders:
            return command
        groups = " ".join(shlex.quote(str(f / "cgroup.procs")) for f in self.folders)
        return ["sh", "-c", f'for g in {groups}; do echo $$ > "$g" || exit 97; done; exec "$@"', "sh"] + command

    def close(self):
        """Kills what is left in the groups and removes them (and, in the
        user sandbox, every process of the students' user: one left
        running, its session left, could still write)."""
        while self.user is not None:
            left = []
            for d in pathlib.Path("/proc").iterdir():
                try:
                    if d.name.isdigit() and d.stat().st_uid == self.user:
                        left.append(int(d.name))
                except OSError:
                    pass  # (it ended)
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, 9)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.02)
        for folder in self.folders:
            for _ in range(50):
                procs = (folder / "cgroup.procs").read_text().split() if folder.exists() else []
                if not procs:
                    break
                for pid in procs:
                    try:
                        os.kill(int(pid), 9)
                    except (ProcessLookupError, ValueError):
                        pass
                time.sleep(0.02)
            try:
                folder.rmdir()
            except OSError:
                pass
        self.folders = []


NOBODY = 65534                 # --sandbox user: the user the students' code runs as (Debian's and Ubuntu's nobody)


def sandboxed(tree, argv, hidden, sandbox):
    """The command that runs argv (the grader in `tree`) in the sandbox."""
    limits = ["prlimit", f"--nproc={MOST_PROCESSES}", f"--fsize={MOST_FILE_BYTES}", "--core=0",
              f"--cpu={GRADE_SECONDS}", "--"]
    if sandbox == "none":
        return limits + argv
    if sandbox == "user":
        # another user's process: the limit on processes is the kernel's (RLIMIT_NPROC, per user),
        # the instructor's files (course/hidden/ made 0700, OUT's results 0600) and the results are root's
        return limits + ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"] + argv
    command = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
               "--unshare-all", "--die-with-parent", "--new-session"]
    for folder in ["/root", "/home"] + [str(h) for h in hidden]:
        if pathlib.Path(folder).is_dir():
            command += ["--tmpfs", folder]
    # the copy read-only again over what was hidden, its build/course/ (the grader, a trainer's output) writable
    # (the copy's course/hidden/, the instructor's cases' source, hidden too: the grader holds them compiled)
    command += ["--ro-bind", str(tree), str(tree), "--tmpfs", str(tree / "course" / "hidden"),
                "--bind", str(tree / "build" / "course"),
                str(tree / "build" / "course"), "--chdir", str(tree), "--setenv", "HOME", "/tmp",
                "--setenv", "ASAN_OPTIONS", f"symbolize=1:hard_rss_limit_mb={GRADE_RSS_MB}"]
    return command + ["--"] + limits + argv


def run_capped(command, cwd, seconds, limits=None):
    """(exit status, output, timed out): at most MOST_OUTPUT bytes of the
    output kept (the rest counted), a run past `seconds` killed with its
    whole session (and, given `limits`, all that is left in its groups)."""
    start = time.time()
    p = subprocess.Popen(limits.wrap(command) if limits else command, cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True)
    # the first MOST_OUTPUT bytes and the last: a grader's summary, and the
    # judge's draws, come last, after whatever the student's code printed
    head, tail, total, timed_out = io.BytesIO(), bytearray(), 0, False
    os.set_blocking(p.stdout.fileno(), False)
    while True:
        chunk = p.stdout.read(65536)
        if chunk:
            total += len(chunk)
            room = max(MOST_OUTPUT - head.tell(), 0)
            head.write(chunk[:room])
            tail += chunk[room:]
            if len(tail) > 2 * MOST_OUTPUT:
                del tail[: len(tail) - MOST_OUTPUT]
            continue
        if p.poll() is not None:
            break
        if time.time() - start > seconds:
            timed_out = True
            try:
                os.killpg(p.pid, 9)
            except ProcessLookupError:
                pass
            p.wait()
            break
        time.sleep(0.02)
    p.stdout.close()
    if limits:
        limits.close()
    tail = bytes(tail[-MOST_OUTPUT:])
    dropped = total - head.tell() - len(tail)
    text = head.getvalue().decode(errors="replace")
    if dropped:
        text += f"\n[{dropped} more bytes of output not kept: the first and the last {MOST_OUTPUT >> 20} MiB are]\n"
    text += tail.decode(errors="replace")
    return p.returncode, text, timed_out


# ---- one student, one exercise ------------------------------------------------------------------
SUMMARY = re.compile(r"^Exercise \S+: (?:all (\d+) checks right|(\d+) of (\d+) checks wrong)", re.M)
KNOWN = re.compile(r"This is a known mistake: (.+?)\.$", re.M)
CHECK = re.compile(r"^  (right|WRONG)  (.*)$")


def check_groups(out, right, total):
    """The grader's checks by group: each group a heading (a catalog case,
    "sigmoid (a vector)"; an op's case; a list of checks, "the engine's
    order"), after a blank line, then its check lines, right or WRONG; the
    instructor's cases are those whose heading starts "hidden:". Kept only
    when the groups' counts add up to the grader's own summary (`right` of
    `total`): a student's code that prints check lines of its own, or a
    case that crashed half way (its lines printed, one check counted), leaves
    the exercise one group (Gradescope's tests, scripts/autograder.py)."""
    groups, current, previous = [], None, ""
    for line in out.splitlines():
        m = CHECK.match(line)
        if m:
            if current is None:
                current = {"name": "checks", "right": 0, "total": 0, "wrong": []}
                groups.append(current)
            current["total"] += 1
            if m.group(1) == "right":
                current["right"] += 1
            elif len(current["wrong"]) < 5:
                current["wrong"].append(m.group(2)[:400])
        elif line and not line.startswith(" ") and not previous and not line.startswith(("Exercise ", "== ")):
            current = {"name": line.strip()[:200], "right": 0, "total": 0, "wrong": []}
            groups.append(current)
        previous = line
    groups = [g for g in groups if g["total"]]
    if sum(g["total"] for g in groups) != total or sum(g["right"] for g in groups) != right:
        return []
    for g in groups:
        g["hidden"] = g["name"].startswith("hidden:")
    return groups


def grade_exercise(view, e, work, seed, base, trusted, sandbox, hidden):
    """The verdict of one exercise: a dict (status, right, total, score,
    mistakes, words, seconds)."""
    start = time.time()
    verdict = {"exercise": e.id, "number": e.number, "title": e.title, "status": "", "right": 0, "total": 0,
               "score": 0.0, "mistakes": [], "groups": [], "words": "", "seconds": 0.0}
    try:
        try:
            files, notes = X.spliced_files(view, [e])
        except SystemExit as stop:
            words = str(stop.code)
            raise Refused(words.replace(str(view) + "/", ""))
        refuse_directives(files, e)
        tree = work / e.id
        shutil.rmtree(tree, ignore_errors=True)
        X.write_tree(files, tree, hidden=True)
        # the grader, and a trainer exercise's program (its grader would build it, and the sandbox is read-only)
        targets = [X.GRADER] + (["build/examples/seq2seq"] if any(g.startswith("trainer") for g in e.grade) else [])
        rc, out, timed_out = run_capped(compiler_limits(BUILD_SECONDS, 8 << 30) +
                                        ["make", "--no-print-directory", "-j1", "WERROR="] + targets + X.FAST_LINK,
                                        tree,
                                        BUILD_SECONDS)
        if timed_out:
            raise Refused(f"does not compile: the build was still running after {BUILD_SECONDS} s")
        if rc != 0:
            errors = [l for l in out.splitlines() if " error: " in l or "error:" in l[:80]]
            raise Refused("does not compile: " + ("; ".join(errors[:3]) if errors else out.strip()[-400:]))
        if sandbox == "user":  # the students' user writes the copy's build/course/ alone, reads no hidden source
            for folder, _, names in os.walk(tree / "build" / "course"):
                for name in ["."] + names:
                    os.chown(os.path.join(folder, name), NOBODY, NOBODY)
            (tree / "course" / "hidden").chmod(0o700)
        argv = [str(tree / X.GRADER), "--hidden"] + (["--seed", seed] if seed is not None else []) + \
            (["--time-cap", TIME_CAP] if TIME_CAP else []) + [e.id]
        rc, out, timed_out = run_capped(sandboxed(tree, argv, hidden, sandbox), tree, GRADE_SECONDS,
                                        limits=Limits(sandbox))
        # the grader's own summary is its last such line (a student's code printing one runs before it)
        summaries = SUMMARY.findall(out)
        if summaries:
            all_right, wrong, total = summaries[-1]
            verdict["total"] = int(all_right or total)
            verdict["right"] = int(all_right) if all_right else int(total) - int(wrong)
        verdict["mistakes"] = sorted(set(KNOWN.findall(out)))
        verdict["groups"] = check_groups(out, verdict["right"], verdict["total"])
        verdict["words"] = out[-4000:]
        cut = re.search(r"^\[\d+ more bytes of output not kept.*$", out, re.M)
        if cut and cut.start() < len(out) - 4000:
            verdict["words"] = cut.group(0) + "\n…\n" + verdict["words"]
        last = list(SUMMARY.finditer(out))
        if last and last[-1].start() < len(out) - 4000:  # (what the student's processes printed after it)
            line = out[last[-1].start():].split("\n", 1)[0]
            verdict["words"] = line + "\n…\n" + verdict["words"]
        if timed_out:
            verdict["status"] = "timed out"
            verdict["words"] += f"\n(stopped after {GRADE_SECONDS} s)"
        elif rc != 0:
            verdict["status"] = "failed"
            if not verdict["mistakes"] and (seed is not None or "--hidden" in argv):
                # known mistakes are named at the default seed without the hidden cases (their
                # fingerprints): a second run, for the names alone
                plain = [str(tree / X.GRADER)] + (["--time-cap", TIME_CAP] if TIME_CAP else []) + [e.id]
                _, named, _ = run_capped(sandboxed(tree, plain, hidden, sandbox), tree, GRADE_SECONDS,
                                         limits=Limits(sandbox))
                verdict["mistakes"] = sorted(set(KNOWN.findall(named)))
                if verdict["mistakes"]:
                    verdict["words"] += "\n" + "\n".join(f"This is a known mistake: {m}." for m in verdict["mistakes"])
        elif X.probed(e):
            # (the draws in a file of their own: a fork bomb's complaints never mix with them)
            theirs = X.judged_draws(tree, e, base, lambda args: run_capped(
                sandboxed(tree, [str(tree / X.GRADER)] + args, hidden, sandbox), tree, 600, limits=Limits(sandbox))[1])
            agrees, words = X.judge_words(e, base, theirs, trusted[e.id])
            verdict["words"] += "\n" + words
            verdict["status"] = "passed" if agrees else "failed by the judge"
            if not agrees:
                verdict["right"] = 0  # (the counts came from a report the values do not bear out)
        else:
            verdict["status"] = "passed"
        for note in notes:
            verdict["words"] = "note: " + note + "\n" + verdict["words"]
    except Refused as r:
        words = str(r)
        verdict["status"] = "no submission" if "missing from the student's tree" in words else \
            "does not compile" if words.startswith("does not compile") else "refused"
        verdict["words"] = words
    if verdict["status"] == "passed" and verdict["total"] == 0:
        verdict["status"] = "failed"  # (a pass the grader printed no count for: none)
    verdict["score"] = round(verdict["right"] / verdict["total"], 4) if verdict["total"] and \
        verdict["status"] not in ("no submission", "refused", "does not compile") else 0.0
    if verdict["status"] == "passed":
        verdict["score"] = 1.0
    elif verdict["status"] == "failed by the judge":
        verdict["score"] = 0.0
    verdict["seconds"] = round(time.time() - start, 1)
    return verdict


def write_atomically(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix="." + path.name + ".")
    with os.fdopen(fd, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)


def all_results(out):
    """Every student's results in OUT/results/, this run's and earlier runs'
    (a shard's, merged ones): what the gradebook and the class page show."""
    return [json.loads(p.read_text()) for p in sorted((out / "results").glob("*.json"))]


def merge(out, sources):
    """The results of shards graded apart (each its own OUT, another
    machine's copied here) gathered into `out`: a student's file copied
    when `out` lacks it or holds the same, refused when the two differ (two
    gradings of one student: which counts is the instructor's to say)."""
    (out / "results").mkdir(parents=True, exist_ok=True)
    copied = 0
    for source in sources:
        files = sorted((source / "results").glob("*.json"))
        if not files:
            sys.exit(f"{source}: no results/*.json in it (not a grade-class OUT)")
        for f in files:
            json.loads(f.read_text())  # a file cut short by a copy stops the merge here, named
            target = out / "results" / f.name
            if target.exists() and target.read_bytes() != f.read_bytes():
                sys.exit(f"{f}: {f.stem} was graded in two shards ({target} differs): remove the one that "
                         f"does not count, then merge again")
            if not target.exists():
                write_atomically(target, f.read_text())
                copied += 1
    return copied


def plan(out, count, command):
    """Scripts that grade a class in `count` shards on other machines, with
    the engines that exist for it: a Slurm job array, and GNU parallel across
    the hosts of a file; each shard writes its own OUT/shards/K, and one merge
    makes the gradebook (docs/course/instructors.md)."""
    quoted = " ".join(shlex.quote(a) for a in command)
    root = shlex.quote(str(ROOT))
    (out / "shards").mkdir(parents=True, exist_ok=True)
    slurm = out / "grade-class.slurm"
    slurm.write_text(f"""#!/usr/bin/env bash
# A Slurm job array: shard K of {count} of the class on one node each
# (made by make grade-class PLAN={count}). Submit: sbatch {slurm.name}
# then, when every task has ended: make grade-class-merge OUT={out} FROM="{out}/shards/*"
#SBATCH --job-name=grade-class
#SBATCH --array=1-{count}
#SBATCH --cpus-per-task=2
#SBATCH --time=04:00:00
set -euo pipefail
cd {root}
{quoted} --shard "$SLURM_ARRAY_TASK_ID/{count}" --out {shlex.quote(str(out))}/shards/"$SLURM_ARRAY_TASK_ID"
""")
    parallel = out / "grade-class.parallel"
    parallel.write_text(f"""#!/usr/bin/env bash
# GNU parallel: shard K of {count} of the class on the hosts of a file (one
# host a line, each with this tree at {ROOT} and its build made), one shard a
# host at a time (made by make grade-class PLAN={count}). Run: sh {parallel.name} HOSTFILE
# The shards' results come back into {out}/shards/K (--return), then:
# make grade-class-merge OUT={out} FROM="{out}/shards/*"
set -eu
parallel --sshloginfile "${{1:?a file of hosts}}" -j1 --workdir {root} \\
    --return {shlex.quote(str(out))}/shards/{{}} --cleanup \\
    {quoted} --shard {{}}/{count} --out {shlex.quote(str(out))}/shards/{{}} ::: $(seq 1 {count})
""")
    return slurm, parallel


def gradebook(out, results):
    rows = io.StringIO()
    w = csv.writer(rows)
    w.writerow(["student", "exercise", "checks right", "checks", "score", "named mistakes", "status", "seconds"])
    for r in results:
        for v in r["exercises"]:
            w.writerow([r["student"], v["exercise"], v["right"], v["total"], v["score"], "; ".join(v["mistakes"]),
                        v["status"], v["seconds"]])
    write_atomically(out / "gradebook.csv", rows.getvalue())


def main():
    args = sys.argv[1:]

    def option(name, default=None):
        nonlocal args
        if name in args:
            at = args.index(name)
            if at + 1 >= len(args):
                sys.exit(f"{name} needs a value")
            value = args[at + 1]
            args = args[:at] + args[at + 2:]
            return value
        return default

    sources = option("--merge")
    if sources is not None:  # make grade-class-merge OUT=dir FROM="dir ...": no grading, the shards gathered
        if len(args) != 1:
            sys.exit('make grade-class-merge OUT=<the class\'s folder> FROM="<a shard\'s OUT> ..."')
        out = pathlib.Path(args[0]).resolve()
        # (FROM="grades/shards/*": make passes the pattern as it is)
        folders = [pathlib.Path(f).resolve() for word in sources.split()
                   for f in (sorted(glob.glob(word)) if glob.has_magic(word) else [word])]
        if not folders:
            sys.exit('FROM="<a shard\'s OUT> ...": no folder named')
        copied = merge(out, folders)
        results = all_results(out)
        gradebook(out, results)
        page = class_page.write(out)
        print(f"{copied} students' results gathered from {len(folders)} shards: {len(results)} students in "
              f"{out / 'gradebook.csv'} and {page}")
        return
    names = [n for n in option("--ex", "").split(",") if n]
    seed = option("--seed")
    roster_file = option("--roster")
    jobs = option("--jobs", "1")
    shard = option("--shard")
    shard_out = option("--out")
    plan_count = option("--plan")
    if not jobs.isdigit() or not 0 < int(jobs) <= 256:
        sys.exit(f"JOBS={jobs}: expected a whole number of students graded at once, from 1")
    sandbox = option("--sandbox", "bwrap")
    global TIME_CAP
    TIME_CAP = option("--time-cap")
    if TIME_CAP is not None and (not TIME_CAP.isdigit() or not 0 < int(TIME_CAP) < 100000):
        sys.exit(f"--time-cap {TIME_CAP}: expected a whole number of seconds")
    if shard_out is not None:  # (a shard's own OUT, from the plan's scripts: --out replaces OUT)
        args = args[:1] + [shard_out]
    if len(args) != 2 or not args[0] or not args[1]:
        sys.exit("make grade-class SUBMISSIONS=<a folder: one entry per student> OUT=<a folder for the results> "
                 "[EX=id,...] [SEED=n] [ROSTER=file] [JOBS=n] [SHARD=k/n] [PLAN=n] [SANDBOX=none|user]")
    submissions, out = pathlib.Path(args[0]).resolve(), pathlib.Path(args[1]).resolve()
    shard_k = shard_n = 1
    if shard is not None:
        m = re.fullmatch(r"(\d+)/(\d+)", shard)
        if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
            sys.exit(f"SHARD={shard}: expected k/n, 1 <= k <= n (shard k of n: every n-th student from the k-th)")
        shard_k, shard_n = int(m.group(1)), int(m.group(2))
    if plan_count is not None:
        if not plan_count.isdigit() or not 1 <= int(plan_count) <= 10000:
            sys.exit(f"PLAN={plan_count}: expected a number of shards")
        command = ["python3", str(pathlib.Path(__file__).resolve()), str(submissions)] + sys.argv[3:]
        at = command.index("--plan")
        del command[at:at + 2]
        for written in plan(out, int(plan_count), command):
            print(f"written: {written}")
        return
    if not submissions.is_dir():
        sys.exit(f"SUBMISSIONS={args[0]}: not a folder")
    if sandbox not in ("bwrap", "user", "none"):
        sys.exit(f"SANDBOX={sandbox}: expected bwrap (the default), user (as another user, where bubblewrap "
                 f"cannot make a sandbox: a container) or none")
    if sandbox == "user" and (os.geteuid() != 0 or not shutil.which("setpriv")):
        sys.exit("SANDBOX=user runs the students' code as user nobody: it needs root and util-linux's setpriv")
    if sandbox == "user" and (ROOT / "course" / "hidden").exists() and \
            any(os.stat(f).st_mode & 0o007 for f in [ROOT / "course" / "hidden"] + list((ROOT / "course" / "hidden")
                                                                                       .rglob("*"))):
        sys.exit("SANDBOX=user: course/hidden/ can be read by other users, the students' among them: "
                 "chmod -R go-rwx course/hidden first (the autograder's setup.sh does)")
    if sandbox == "user" and jobs != "1":
        sys.exit("SANDBOX=user grades one student at a time (what is left of a run is every process of user "
                 "nobody, killed): JOBS=1")
    if sandbox == "bwrap" and not shutil.which("bwrap"):
        sys.exit("bubblewrap is not installed, and the students' code must not run as you: apt-get install "
                 "bubblewrap (or SANDBOX=none, for code you trust)")
    if seed is not None and (not seed.isdigit() or len(seed) > 18):
        sys.exit(f"SEED={seed}: expected a whole number")
    chosen = X.pick(X.read_exercises(), names or [l.strip() for l in (ROOT / "course" / "assignment.txt").read_text()
                                                  .splitlines() if l.strip() and not l.startswith("#")]
                    if names or (ROOT / "course" / "assignment.txt").exists() else [])
    if not chosen:
        sys.exit("EX=id,... names the exercises to grade")
    entries, seen = [], {}
    for p in sorted(submissions.iterdir()):
        if p.name.startswith("."):
            continue
        if student_name(p) in seen:
            print(f"{p.name}: a second submission of {student_name(p)} (beside {seen[student_name(p)].name}): "
                  f"not graded")
            continue
        seen[student_name(p)] = p
        entries.append(p)
    seeds = {}  # a student's own hidden seed, from the roster
    if roster_file:
        roster = []
        for number, line in enumerate(pathlib.Path(roster_file).read_text().splitlines(), 1):
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            if len(words) > 2 or (len(words) == 2 and (not words[1].isdigit() or len(words[1]) > 18)):
                sys.exit(f"{roster_file}:{number}: expected a student's name, and after it a seed of their own "
                         f"(a whole number) or nothing; found {line.strip()!r}")
            roster.append(words[0])
            if len(words) == 2:
                seeds[words[0]] = words[1]
        by_name = {student_name(p): p for p in entries}
        unknown = sorted(set(by_name) - set(roster))
        if unknown:
            print(f"not on the roster, not graded: {', '.join(unknown)}")
        entries = [by_name.get(s, submissions / s) for s in roster]
    entries = entries[shard_k - 1::shard_n]
    if not X.build_grader():
        sys.exit("this tree's grader does not build (above)")
    base = X.judge_base()
    trusted = {e.id: X.run_grader(X.judge_args(e, base))[1] for e in chosen if X.probed(e)}
    hidden = [ROOT, submissions, out]
    probe = Limits(sandbox)
    probe.close()
    print("sandbox: " + {"bwrap": "bubblewrap", "user": f"another user's processes (user {NOBODY}, nobody)",
                         "none": "NONE (the students' code runs as you)"}[sandbox] + "; limits: "
          + (f"at most {MOST_PROCESSES} processes and {GRADE_MEMORY >> 30} GiB a run (a control group)"
             if not probe.missing else f"prlimit's alone ({probe.missing})")
          + f", {GRADE_SECONDS} s, files of {MOST_FILE_BYTES >> 20} MiB, {MOST_OUTPUT >> 20} MiB of output kept")
    started = time.time()

    def one(entry):
        student = student_name(entry)
        result_file = out / "results" / f"{student}.json"
        if result_file.exists():
            print(f"{student}: graded before ({result_file.relative_to(out)}): kept", flush=True)
            return json.loads(result_file.read_text())
        work = out / "work" / student
        shutil.rmtree(work, ignore_errors=True)
        verdicts = []
        try:
            if not entry.exists():
                raise Refused("no submission")
            unpack(entry, work / "submission")
            student_view(work / "submission", chosen, work / "view")
            for e in chosen:
                verdicts.append(grade_exercise(work / "view", e, work, seeds.get(student, seed), base, trusted,
                                               sandbox, hidden))
        except Refused as r:
            verdicts = [{"exercise": e.id, "number": e.number, "status": "no submission" if str(r) == "no submission"
                         else "refused", "right": 0, "total": 0, "score": 0.0, "mistakes": [], "words": str(r),
                         "seconds": 0.0} for e in chosen]
        result = {"student": student, "exercises": verdicts}
        write_atomically(result_file, json.dumps(result, indent=1, ensure_ascii=False))
        shutil.rmtree(work, ignore_errors=True)
        print(f"{student}: " + ", ".join(f"{v['number']} {v['status']}" for v in verdicts), flush=True)
        return result

    # students graded side by side (--jobs): each in folders of its own, its results in a file of its own
    with concurrent.futures.ThreadPoolExecutor(int(jobs)) as pool:
        results = list(pool.map(one, entries))
    gradebook(out, all_results(out))
    page = class_page.write(out)
    print(f"{len(results)} students" + (f" (shard {shard_k} of {shard_n})" if shard_n > 1 else "") +
          f", {len(chosen)} exercises, {time.time() - started:.0f} s: "
          f"{out / 'gradebook.csv'}, the class at a glance in {page}, one file a student in {out / 'results'}")


if __name__ == "__main__":
    main()
