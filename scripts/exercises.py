"""The coursework's tools: a student's tree, the graders' proof, the known
mistakes' fingerprints. The exercises are listed in course/exercises.txt;
the grader is course/grade.cpp (make grade).

    python3 scripts/exercises.py list                  (make exercise)
    python3 scripts/exercises.py tree EX OUT           (make exercise EX=id OUT=dir; EX=all)
    python3 scripts/exercises.py check [EX ...]        (make check-exercises)
    python3 scripts/exercises.py fingerprints [EX ...] (make fingerprints)
    python3 scripts/exercises.py grade-student DIR [--seed N] [EX ...]   (make grade-student STUDENT=dir)
    python3 scripts/exercises.py mistakes EX           (run by make grade for exercises 7.1 and 7.2)

A student's tree is the project's tracked files (no git history) with the
body of every cut block replaced by a stub that throws "not implemented:
exercise N (page)", every fast twin of a cut block cut the same way (so that
every program, trainers included, runs the student's code), the mutations
whose `find` lies in a cut block left out of tests/mutations/ (their
`replace` lines are near-answers), and course/assignment.txt naming the
exercises. `check` then looks for every code line of the cut blocks in every
file of that tree: none may remain.

`check` proves each grader in this tree's build (build/, the g++ build): the
stub compiles and fails with more than zero checks run; the solution passes;
every mutation inside a cut block fails and is named by its words. Each
stub and mistake is built in a copy of the tree (build/check-exercises/, two
side by side on two cores), so this tree's files are never changed.
`fingerprints` records what each of those mutations computes on the
grading cases, into course/fingerprints.txt, which the grader compares a
student's outputs with.
"""
import concurrent.futures
import math
import os
import pathlib
import queue
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

import mutants

ROOT = pathlib.Path(__file__).resolve().parent.parent
LIST = ROOT / "course" / "exercises.txt"
FINGERPRINTS = ROOT / "course" / "fingerprints.txt"
MUTATIONS = ROOT / "tests" / "mutations"
GRADER = "build/course/grade"


# ---- the exercise list ------------------------------------------------------------------
class Exercise:
    def __init__(self, number, title, line):
        self.number, self.title, self.line = number, title, line
        self.id, self.cuts, self.twins, self.grade, self.read, self.hints = "", [], [], [], [], []

    def page(self):
        return self.read[0] if self.read else "course/exercises.txt"


def read_exercises():
    exercises = []
    for number, raw in enumerate(LIST.read_text().splitlines(), 1):
        line = raw.rstrip()
        if line.startswith("## "):
            num, _, title = line[3:].strip().partition(" ")
            exercises.append(Exercise(num, title.strip(), number))
            continue
        if not line.strip() or line.startswith("#"):
            continue
        key, sep, value = line.partition(": ")
        if not sep or not exercises:
            sys.exit(f"{LIST}:{number}: expected 'KEY: VALUE' after a '## NUMBER TITLE'")
        e = exercises[-1]
        if key in ("cut", "twin"):
            file, bar, opening = value.partition(" | ")
            if not bar:
                sys.exit(f"{LIST}:{number}: expected '{key}: FILE | OPENING LINE'")
            (e.cuts if key == "cut" else e.twins).append((file.strip(), opening))
        elif key == "id":
            e.id = value.strip()
        elif key in ("grade", "read", "hint"):
            getattr(e, key if key != "hint" else "hints").append(value.strip())
        elif key == "speed":
            e.speed = value.strip()
        else:
            sys.exit(f"{LIST}:{number}: unknown key '{key}'")
    return exercises


def pick(exercises, names):
    if not names or names == ["all"]:
        return exercises
    chosen = []
    for name in names:
        found = [e for e in exercises if name in (e.id, e.number)]
        if not found:
            sys.exit(f"no exercise '{name}': make exercise lists them")
        chosen += found
    return chosen


# ---- finding a block in C++ source ------------------------------------------------------
def skip_literal(text, i):
    """i at a quote: the index after the string or character literal."""
    quote = text[i]
    i += 1
    while i < len(text) and text[i] != quote:
        i += 2 if text[i] == "\\" else 1
    return i + 1


def block_span(text, opening, where):
    """(start, end) of the body of the block whose opening line is `opening`:
    from just after its first '{' to its matching '}' (exclusive)."""
    lines = text.split("\n")
    hits = [k for k, line in enumerate(lines) if line.rstrip() == opening.rstrip()]
    if len(hits) != 1:
        sys.exit(f"{where}: the opening line occurs {len(hits)} times, expected once: {opening.strip()}")
    i = sum(len(line) + 1 for line in lines[: hits[0]])
    # The block opens at the '{' that ends the opening line, or, for a
    # signature that goes on to further lines, at the first '{' after it
    # (an initialiser list such as {a} earlier on the line is not it).
    if opening.rstrip().endswith("{"):
        i += len(lines[hits[0]].rstrip()) - 1
    else:
        i += len(lines[hits[0]])
    depth, start = 0, None
    while i < len(text):
        c = text[i]
        if text.startswith("//", i):
            i = text.index("\n", i)
            continue
        if text.startswith("/*", i):
            i = text.index("*/", i) + 2
            continue
        if c in "\"'":
            i = skip_literal(text, i)
            continue
        if c == "{":
            depth += 1
            if start is None:
                start = i + 1
        elif c == "}":
            depth -= 1
            if depth == 0 and start is not None:
                return start, i
        i += 1
    sys.exit(f"{where}: no matching '}}' for the block of {opening.strip()}")


def code_lines(body):
    """The lines of a cut body that would give it away: code (comments
    dropped), spaces squeezed, at least 20 characters."""
    out = set()
    for line in body.split("\n"):
        code = re.sub(r"\s+", " ", line.split("//")[0]).strip()
        if len(code) >= 20:
            out.add(code)
    return out


PRAGMAS = """// (Exercise stubs below: helpers and parameters they leave unused are not warned about.)
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-variable"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#ifdef __clang__
#pragma GCC diagnostic ignored "-Wunused-lambda-capture"
#pragma GCC diagnostic ignored "-Wunused-private-field"
#endif
#include <stdexcept>
"""


def stub_body(body, message, comment, opening=""):
    """The stub in place of `body`, indented as its first line was, its
    closing brace where it was. A registry entry's list of cases (exercise
    7.1) is left empty: the grader says it is not written yet."""
    lines = body.split("\n")
    inner = next((re.match(r"\s*", l).group(0) for l in lines if l.strip()), "    ")
    closing = lines[-1] if not lines[-1].strip() else ""
    if "RegisterEntry" in opening:
        return f"\n{inner}// {comment} Your cases: {{.variant = ..., .inputs = ..., ...}}, ...\n{closing}"
    return f"\n{inner}// {comment}\n{inner}throw std::logic_error(\"{message}\");\n{closing}"


def stubbed(text, blocks, where):
    """text with the body of each (opening, message) block replaced by a stub."""
    spans = []
    for opening, message, comment in blocks:
        start, end = block_span(text, opening, where)
        spans.append((start, end, stub_body(text[start:end], message, comment, opening)))
    for start, end, stub in sorted(spans, reverse=True):
        text = text[:start] + stub + text[end:]
    if "#pragma GCC diagnostic ignored \"-Wunused-function\"" not in text:
        # after the file's first #include, so that the pragmas follow its header comment
        m = re.search(r"^#include .*$", text, re.M)
        at = m.end() + 1 if m else 0
        text = text[:at] + PRAGMAS + text[at:]
    return text


def message(e):
    return f"not implemented: exercise {e.number} ({e.page()})"


def twin_message(e):
    return (f"not implemented: exercise {e.number} switched this fast twin off, so that every program runs "
            f"your code ({e.page()})")


def blocks_by_file(chosen):
    files = {}
    for e in chosen:
        for file, opening in e.cuts:
            files.setdefault(file, []).append(
                (opening, message(e), f"Exercise {e.number}: yours to write ({e.page()})."))
        for file, opening in e.twins:
            files.setdefault(file, []).append(
                (opening, twin_message(e), f"Exercise {e.number}: this fast twin is switched off; the readable code is yours."))
    return files


def cut_bodies(e):
    """(file, body) of every block of e the student writes (not the twins,
    whose own text is cut from the student's tree too)."""
    bodies = []
    for file, opening in e.cuts:
        text = (ROOT / file).read_text()
        start, end = block_span(text, opening, f"{file} (exercise {e.number})")
        bodies.append((file, text[start:end]))
    return bodies


# ---- mutations inside the cut blocks ----------------------------------------------------
def read_mutations():
    mutations, current = [], None
    for path in sorted(MUTATIONS.glob("*.txt")):
        for number, raw in enumerate(path.read_text().splitlines(), 1):
            line = raw.rstrip("\n")
            if line.startswith("## "):
                current = {"title": line[3:].strip(), "where": f"{path.name}:{number}", "list": path}
                mutations.append(current)
            elif current is not None and not line.startswith("#") and re.match(r"[a-z_]+:( |$)", line):
                # "key: value", or "key:" alone for an empty value (a replace: that deletes the line)
                key, _, value = line.partition(":")
                current[key.strip()] = value[1:] if value.startswith(" ") else value
    return mutations


def mistake_words(title):
    """'additive_score: the bias b dropped' → 'the bias b dropped'."""
    head, sep, rest = title.partition(": ")
    return rest if sep and re.fullmatch(r"[\w ,()]+", head) else title


def mutations_within(blocks, mutations):
    """The mutations whose find lies inside one of the (file, opening) blocks."""
    found = []
    for file, opening in blocks:
        text = (ROOT / file).read_text()
        start, end = block_span(text, opening, file)
        for m in mutations:
            find = m.get("find", "").replace("\\n", "\n")
            at = text.find(find) if m.get("file") == file and find else -1
            if at >= 0 and start <= at and at + len(find) <= end and m not in found:
                found.append(m)
    return found


def mutations_of(e, mutations):
    """e's known mistakes: the mutations inside its cut blocks (not the twins:
    the student does not write those)."""
    return mutations_within(e.cuts, mutations)


def mutations_in_blocks(chosen, mutations):
    """Every mutation inside a cut or twin block of the chosen: left out of a student's tree."""
    return mutations_within([b for e in chosen for b in e.cuts + e.twins], mutations)


# ---- the student's tree -----------------------------------------------------------------
def tracked_files():
    """The tree's files: git's tracked ones and the new ones it does not
    ignore (a student's own files); in a student's tree, which has no git,
    every file outside build/."""
    r = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                       capture_output=True)
    if r.returncode == 0 and (ROOT / ".git").exists():
        return sorted({f for f in r.stdout.decode().split("\0") if f and (ROOT / f).is_file()})
    return sorted(path.relative_to(ROOT).as_posix() for path in ROOT.rglob("*")
                  if path.is_file() and path.relative_to(ROOT).parts[0] not in ("build", ".git"))


def without_mutations(text, titles):
    """A mutation list with the blocks of these titles left out."""
    kept, skipping = [], False
    for line in text.split("\n"):
        if line.startswith("## "):
            skipping = line[3:].strip() in titles
        if not skipping:
            kept.append(line)
    return "\n".join(kept)


def student_files(chosen):
    """{path: text} of every tracked text file as the student's tree has it
    (binary files: None, copied as they are)."""
    blocks = blocks_by_file(chosen)
    dropped = {}
    for m in mutations_in_blocks(chosen, read_mutations()):
        dropped.setdefault(m["list"].relative_to(ROOT).as_posix(), set()).add(m["title"])
    files = {}
    for path in tracked_files():
        if path.startswith("course/hidden/"):
            continue  # the instructor's cases (make grade-student)
        data = (ROOT / path).read_bytes()
        try:
            text = data.decode()
        except UnicodeDecodeError:
            files[path] = None
            continue
        if path in blocks:
            text = stubbed(text, blocks[path], path)
        if path in dropped:
            text = without_mutations(text, dropped[path])
        files[path] = text
    if any(e.id == "capstone" for e in chosen):
        files["course/capstone.txt"] = capstone_template()
    files["course/assignment.txt"] = (
        "# The exercises of this tree: make grade grades them, make progress shows where you are.\n" +
        "".join(e.id + "\n" for e in chosen))
    return files


LIBRARY = ("tensor/", "autograd/", "nn/", "io/", "attention/", "examples/")


def leaks(chosen, files):
    """(exercise, file, line) for every code line of a cut block found in the
    student's tree. A line the library itself still holds outside the cut
    blocks (`for (int64_t i = 0; i < m; ++i) {`, `check_scores(id(), in);`)
    is an idiom of the library, which a student is meant to read: not a leak."""
    squeezed = {path: re.sub(r"[ \t]+", " ", text) for path, text in files.items() if text is not None}
    # (So is a line the tests hold, `.masks = {keep_first({4, 2}, 4)},` say:
    # exercise 7.1 cuts a test.)
    idioms = set()
    for path, text in squeezed.items():
        if path.startswith(LIBRARY + ("tests/",)) and path.endswith((".cpp", ".hpp")):
            idioms |= code_lines(text)
    found = []
    for e in chosen:
        for _, body in cut_bodies(e):
            for code in code_lines(body) - idioms:
                found += [(e, path, code) for path, text in squeezed.items() if code in text]
    return found


def make_tree(names, out):
    chosen = pick(read_exercises(), names)
    if not out:
        sys.exit("make exercise EX=<id> OUT=<dir>: OUT names the folder to write the student's tree to")
    out = pathlib.Path(out)
    if out.exists() and any(out.iterdir()):
        sys.exit(f"{out} exists and is not empty: choose a new folder (nothing a student saved is overwritten)")
    files = student_files(chosen)
    bad = leaks(chosen, files)
    if bad:
        for e, path, code in bad[:10]:
            print(f"exercise {e.number}: {path} still holds a line of the answer: {code}")
        sys.exit("not written: the tree would give answers away (make check-exercises says where)")
    shared, _ = write_tree(files, out)
    print(f"wrote {out}: {len(files)} files, exercises {', '.join(e.number + ' ' + e.id for e in chosen)}")
    if shared:
        print(f"  {shared} compiled files of this tree's build reused (hard links in {out}/build/obj): "
              "the first make grade compiles the files your exercises cut, and links")
        print(f"  cd {out} && make grade      # every exercise's verdict")
    else:
        print(f"  cd {out} && make grade      # every exercise's verdict (the first build takes a few minutes: "
              "this tree has no build to share)")
    pages = sorted({e.page().split("#")[0] for e in chosen})
    print(f"  read docs/course/README.md (the course) and {', '.join(pages)} first")


def write_tree(files, out, hidden=False):
    """Writes `files` ({path: text, or None for a copy}) into the folder
    `out`, the files as they are here copied with their times, and shares
    this tree's build with it (share_build; `hidden`: the instructor's hidden
    cases' objects too). Returns how many objects it shares, and the paths
    written as they are here."""
    unchanged = set()
    for path, text in files.items():
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        source = ROOT / path
        if text is None or (source.exists() and text.encode() == source.read_bytes()):
            shutil.copy2(source, target)  # with its time: this tree's objects of it stay up to date (share_build)
            unchanged.add(path)
        else:
            target.write_text(text)
            if os.access(source, os.X_OK) if source.exists() else False:
                target.chmod(0o755)
    return share_build(out, unchanged, hidden), unchanged


def make_env():
    """The environment for a make these scripts start: without the outer
    make's MAKEFLAGS, whose jobserver Python does not pass on (the inner make
    would warn and build on one core); the Makefile's own -j then applies."""
    return {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}


def dependencies(d_file):
    """The prerequisites of the first rule of a compiler's dependency file
    (target: source header ... with backslash continuations)."""
    text = d_file.read_text().replace("\\\n", " ")
    first = text.split("\n", 1)[0]
    _, sep, deps = first.partition(": ")
    return deps.split() if sep else []


def link_file(source, target, copy=False):
    """`target` made a hard link to `source` (a copy with its time on another
    file system), or a copy when it is a dependency file, which the compiler
    rewrites in place: the compiler and the linker write their outputs as new
    files, so a build at `target` never changes `source`. (copy=True: a copy
    with its time whatever the file.)"""
    target.unlink(missing_ok=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    if copy or source.suffix == ".d":
        shutil.copy2(source, target)
        return
    try:
        os.link(source, target)
    except OSError:  # another file system
        shutil.copy2(source, target)


def share_build(out, unchanged, hidden=False, copy=False):
    """Hard links in `out` to this tree's compiled objects (build/obj) whose
    every source and header is in `out` unchanged (`unchanged`, copied with
    their times), with their dependency files and the precompiled headers: make
    finds them up to date, and the student's first build compiles only what
    the exercises cut, and links. Never an object of a file that holds an
    answer (its source or a header differs: it would hold the solution,
    compiled), nor of the instructor's hidden cases, nor an archive or a
    program (they hold such objects; they are made again). The compiler and
    the linker write a new file rather than into a link, so building in `out`
    never changes this tree's build (the dependency files, which the compiler
    rewrites in place, are copies). Returns how many objects were linked; 0
    when this tree has no build. (hidden=True: the hidden cases' too, for
    the instructor's own copy, make grade-student's. copy=True: copies with
    their times, not links, for make bug: a link's count would single out the
    one object compiled in the tree.)"""
    obj = ROOT / "build" / "obj"
    if not obj.is_dir():
        return 0
    shared = 0
    for d_file in sorted(obj.rglob("*.d")):
        relative = d_file.relative_to(ROOT)
        if "hidden" in relative.parts and not hidden:
            continue
        if d_file.name.endswith(".hpp.d"):  # a precompiled header: build/obj/pch/CONFIG/std.hpp.d
            compiled = d_file.with_name(d_file.name[:-2] + ".gch")
        else:
            compiled = d_file.with_suffix(".o")
        if not compiled.exists():
            continue
        deps = [dep for dep in dependencies(d_file) if not dep.startswith("/")]  # the system's headers: the same
        # (the precompiled header's own copy, build/obj/pch/CONFIG/std.hpp, counts as pch/std.hpp)
        if not deps or any(dep not in unchanged and not dep.startswith("build/obj/pch/") for dep in deps):
            continue
        link_file(compiled, out / compiled.relative_to(ROOT), copy)
        link_file(d_file, out / relative)
        if compiled.suffix == ".gch":
            header = compiled.with_suffix("")  # build/obj/pch/CONFIG/std.hpp, the copy the objects -include
            if header.exists():
                shutil.copy2(header, out / header.relative_to(ROOT))
        shared += 1
    return shared


# ---- proving the graders ----------------------------------------------------------------
def grader_objects(path):
    """The objects of a source file that the float64 build's grader may link:
    its own (the float library's for the GEMM's files, which it shares), and
    the memory-checked one of a file that holds an exercise's cut code
    (the Makefile)."""
    build = "float" if path.startswith("tensor/gemm/") else "double"
    return [pathlib.Path("build/obj") / b / pathlib.Path(path).with_suffix(".o") for b in (build, "checked")]


class Worker:
    """A copy of this tree in which one deliberate change at a time is built
    and graded (build/check-exercises/wK/), so that this tree's files are never
    changed and two changes are built side by side, one per core. The copy
    holds every tracked file with its time, and hard links to this tree's
    objects, archive and grader of the float64 build: make finds them up to
    date, and the compiler and the linker write a new file rather than into a
    link, so building in the copy never changes this tree's build. (The
    dependency files, which the compiler rewrites in place, are copied.)
    After each change the copy gets its original files, times and links
    back: the next change rebuilds only its own files."""

    LINKED = ["build/obj/double", "build/obj/float/tensor/gemm", "build/obj/pch", "build/obj/checked",
              "build/lib/libattn_double.a", "build/lib/libattn_double_grade.a", "build/course"]

    def __init__(self, number, files):
        self.root = ROOT / "build" / "check-exercises" / f"w{number}"
        shutil.rmtree(self.root, ignore_errors=True)
        for path in files:
            (self.root / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / path, self.root / path)
        for linked in self.LINKED:
            self._link(ROOT / linked, self.root / linked)

    @staticmethod
    def _link(source, target):
        if source.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            for child in source.iterdir():
                Worker._link(child, target / child.name)
        elif source.exists():
            link_file(source, target)

    def _restore(self, paths):
        for path in paths:
            shutil.copy2(ROOT / path, self.root / path)
            for obj in grader_objects(path):
                if (ROOT / obj).exists():
                    self._link(ROOT / obj, self.root / obj)
                else:  # (a build without it: the mistake's own must not stay)
                    (self.root / obj).unlink(missing_ok=True)
        for linked in ["build/lib/libattn_double.a", "build/lib/libattn_double_grade.a", GRADER]:
            self._link(ROOT / linked, self.root / linked)

    def run(self, writes, args, werror):
        """writes: {path: text}. Builds the grader with them and runs it with
        args: (built, exit status, output). args may also be a list of
        argument lists: the grader runs once with each, and the exit status
        and output are lists."""
        try:
            for path, text in writes.items():
                (self.root / path).write_text(text)
            command = ["make", "--no-print-directory", "-j1", GRADER] + ([] if werror else ["WERROR="]) + FAST_LINK
            r = subprocess.run(command, cwd=self.root, capture_output=True, text=True)
            if r.returncode != 0:
                return False, r.returncode, r.stdout[-3000:] + r.stderr[-3000:]
            if args and isinstance(args[0], list):
                # several runs; one marked "--if-passed" only when the run before it passed
                runs = []
                for a in args:
                    if a and a[0] == "--if-passed":
                        if runs and runs[-1][0] != 0:
                            runs.append((None, ""))
                            continue
                        a = a[1:]
                    runs.append(grader_run(self.root, a))
                return True, [rc for rc, _ in runs], [out for _, out in runs]
            return (True,) + grader_run(self.root, args)
        finally:
            self._restore(writes)


# A mistake's build links the grader again (most of its time with GNU ld):
# lld or gold, where installed, links it in a quarter of the time. The
# grader is the same program either way.
FAST_LINK = (["LDFLAGS=-fuse-ld=lld"] if shutil.which("ld.lld") else
             ["LDFLAGS=-fuse-ld=gold"] if shutil.which("ld.gold") else [])


# A memory error's report names the function and line (symbolized, about half
# a second each): what a student reads, and what none of these runs needs.
GRADER_ENV = dict(os.environ, ASAN_OPTIONS="symbolize=0")


def grader_run(root, args, seconds=120, env=None):
    """(exit status, output) of the grader built in root, run with args. A
    grader still running after `seconds` (a mistake that loops forever in a
    check the grader times only after 600 s) is stopped: exit status −1."""
    start = time.time()
    try:
        r = subprocess.run([str(root / GRADER)] + args, cwd=root, capture_output=True, text=True,
                           timeout=seconds, errors="replace", env=env or GRADER_ENV)
        return r.returncode, r.stdout + r.stderr + f"\n[graded in {time.time() - start:.1f} s]"
    except subprocess.TimeoutExpired as stopped:
        out = stopped.stdout.decode(errors="replace") if isinstance(stopped.stdout, bytes) else (stopped.stdout or "")
        return -1, out + f"\n(the grader was still running after {seconds} s: stopped)"


def in_workers(jobs):
    """Runs each job (writes, grader args, werror) in a Worker, one per core
    (at most two: each job is one compile, one link and one grader run),
    and yields the results in the jobs' order."""
    count = max(1, min(len(jobs), os.cpu_count() or 1, 2))
    files = tracked_files()
    free = queue.Queue()
    for k in range(count):
        free.put(Worker(k, files))

    def one(job):
        w = free.get()
        try:
            return w.run(*job)
        finally:
            free.put(w)

    with concurrent.futures.ThreadPoolExecutor(count) as pool:
        yield from pool.map(one, jobs)
    shutil.rmtree(ROOT / "build" / "check-exercises", ignore_errors=True)


def build_grader():
    r = subprocess.run(["make", "--no-print-directory", "-j2", GRADER], cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout[-3000:] + r.stderr[-3000:])
    return r.returncode == 0


def run_grader(args):
    r = subprocess.run([GRADER] + args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout + r.stderr


def checks_in(output):
    m = re.search(r"all (\d+) checks right|(\d+) of (\d+) checks wrong", output)
    if not m:
        return 0, 0
    if m.group(1):
        return int(m.group(1)), 0
    return int(m.group(3)), int(m.group(2))


def apply(mutation):
    path = mutation["file"]
    text = (ROOT / path).read_text()
    find = mutation["find"].replace("\\n", "\n")
    return text.replace(find, mutation["replace"].replace("\\n", "\n"), 1)


def check(args):
    mode = "sample"
    if "--mutants" in args:
        at = args.index("--mutants")
        mode = args[at + 1] if at + 1 < len(args) else ""
        args = args[:at] + args[at + 2:]
    if mode not in ("sample", "all", "only", "none"):
        sys.exit("--mutants takes sample (a spread of each exercise's, the default), all, only (all, and "
                 "nothing else) or none")
    names = args
    exercises = read_exercises()
    chosen = pick(exercises, names)
    if mode == "only":
        failures = []
        if not build_grader():
            sys.exit("the grader does not build")
        prove_against_mutants(chosen, "all", failures)
        if failures:
            print("FAILED:")
            for f in failures:
                print("  " + f)
            sys.exit(1)
        return
    mutations = read_mutations()
    failures = []
    start = time.time()
    # The solutions first, in this tree's build: every grader passes them.
    if not build_grader():
        sys.exit("the grader does not build")
    for e in chosen:
        rc, out = run_grader([e.id])
        checks, _ = checks_in(out)
        print(f"== exercise {e.number} {e.id}: the solution {'passes' if rc == 0 else 'FAILS'} ({checks} checks)")
        if rc != 0:
            failures.append(f"{e.id}: the solution fails its grader")
            print(out[-2000:])
    # Each stub, then every mutation inside the exercise's cut blocks (a
    # deliberate mistake, whose unused parameter or variable is not what it
    # is about: built without -Werror), each in a copy of the tree.
    jobs, what = [], []
    answer_wheats = read_wheats(ANSWER_WHEATS)
    hostile = read_wheats(HOSTILE)
    base = judge_base()
    ours = {e.id: run_grader(judge_args(e, base))[1] for e in chosen if probed(e)}
    for e in chosen:
        if e.id == "capstone":  # the stub: course/capstone.txt as a student's tree has it
            jobs.append(({"course/capstone.txt": capstone_template()}, [e.id], True))
            what.append((e, "none"))
            continue
        if not e.cuts:  # nothing to write (a trainer run on the rest): no stub, no known mistakes
            continue
        stub = {path: stubbed((ROOT / path).read_text(), blocks, path) for path, blocks in blocks_by_file([e]).items()}
        # A weak answer (course/hidden/weak/ID/: tests that catch too few
        # mistakes) must fail, the mistakes that got through named.
        weak = ROOT / "course" / "hidden" / "weak" / e.id
        if weak.is_dir():
            jobs.append(({f.relative_to(weak).as_posix(): f.read_text() for f in weak.rglob("*") if f.is_file()},
                         [e.id], False))
            what.append((e, "weak"))
        jobs.append((stub, [e.id], True))
        what.append((e, None))
        mine = mutations_of(e, mutations)
        for m in mine:
            jobs.append(({m["file"]: apply(m)}, [e.id], False))
            what.append((e, m))
        if not mine:
            what[-1] = (e, "none")
        # correct answers written another way (course/hidden/wheats.txt): each
        # must pass, the judge included; answers that try to pass without being
        # right (course/hidden/hostile.txt): each must fail, the judge too.
        judge = [["--if-passed"] + judge_args(e, base)] if probed(e) else []
        for w in answer_wheats:
            if w.get("exercise") == e.id:
                jobs.append(({w["file"]: apply(w)}, [[e.id]] + judge, False))
                what.append((e, ("wheat", w)))
        for h in hostile:
            if h.get("exercise") == e.id:
                jobs.append(({h["file"]: apply(h)}, [[e.id]] + judge, False))
                what.append((e, ("hostile", h)))
    totals = {"mistakes": 0, "named": 0, "wheats": 0, "accepted": 0}
    for (e, m), (built, rc, out) in zip(what, in_workers(jobs)):
        if built and isinstance(rc, list):  # a wheat's or a hostile answer's run, and its judge's
            rc, out = judged(e, base, rc, out, ours.get(e.id, ""))
        if isinstance(m, tuple) and m[0] == "hostile":
            h = m[1]
            took = re.search(r"\[graded in ([\d.]+) s\]", out) if built else None
            seconds = float(took.group(1)) if took else float("inf")
            ok = built and rc == int(h.get("expect-exit", "1")) and h["expect"] in out and \
                seconds <= float(h.get("seconds", "60"))
            print(f"   hostile answer: {'handled' if ok else 'NOT HANDLED'} in {seconds:.1f} s: {h['title']}")
            for line in out.splitlines():
                if line.startswith("the judge:") and rc != 0:
                    print(f"      {line}")
            if not ok:
                failures.append(f"{e.id}: the hostile answer '{h['title']}' ({h['where']}): exit {rc}, "
                                f"{seconds:.1f} s, expected exit {h.get('expect-exit', '1')} and '{h['expect']}'\n"
                                + out[-1500:])
            continue
        if isinstance(m, tuple):
            w = m[1]
            ok = built and rc == 0
            totals["wheats"] += 1
            totals["accepted"] += ok
            print(f"   correct answer written another way: {'accepted' if ok else 'REJECTED'}: {mistake_words(w['title'])}")
            if not ok:
                failures.append(f"{e.id}: its grader rejects a correct answer ({w['where']}: {mistake_words(w['title'])})"
                                + ("" if built else ": it does not compile") + "\n" + out[-1500:])
            continue
        if m == "weak":
            ok = built and rc == 1 and "these got through:" in out
            print(f"   weak answer: {'fails, what got through named' if ok else 'NOT FAILED'} ({checks_in(out)[1]} "
                  f"of {checks_in(out)[0]} checks wrong)")
            if not ok:
                failures.append(f"{e.id}: the grader does not fail the weak answer of course/hidden/weak/")
            continue
        if m is None or m == "none":
            print(f"== exercise {e.number} {e.id}")
            if not built:
                print(out)
                failures.append(f"{e.id}: the stub does not compile")
            else:
                checks, wrong = checks_in(out)
                ok = rc == 1 and checks > 0 and wrong > 0 and "not written yet" in out
                print(f"   stub: {'fails' if ok else 'DOES NOT FAIL'} ({wrong} of {checks} checks wrong)")
                if not ok:
                    failures.append(f"{e.id}: the grader does not fail on the stub (exit {rc}, {checks} checks)")
            if m == "none" and any(g.split()[0] in ("write-test", "capstone") for g in e.grade):
                print("   (its mistakes are for the student's checks to catch: make grade builds them, above)")
            elif m == "none":
                print("   (no mutation lies inside its cut blocks)")
            continue
        words = mistake_words(m["title"])
        totals["mistakes"] += 1
        if not built:
            print(f"   mistake does not compile: {m['title']} ({m['where']})")
            failures.append(f"{e.id}: {m['where']} does not compile")
            continue
        named = f"This is a known mistake: {words}." in out
        status = ("fails, named" if rc == 1 and named else "fails, NOT NAMED" if rc == 1
                  else "PASSES" if rc == 0 else f"GRADER STOPPED (exit {rc})")
        print(f"   mistake {status}: {words}")
        totals["named"] += rc == 1 and named
        if not (rc == 1 and named):
            failures.append(f"{e.id}: {m['where']} ({words}): {status}")
    # nothing of an answer in the student's tree
    files = student_files(chosen)
    bad = leaks(chosen, files)
    lines = sum(len(code_lines(body)) for e in chosen for _, body in cut_bodies(e))
    for e, path, code in bad:
        failures.append(f"{e.id}: {path} still holds a line of the answer: {code}")
    print(f"== student's tree: {len(files)} files, {lines} code lines of cut blocks looked for, {len(bad)} found")
    check_shared_tree(chosen, files, failures)
    if {"sigmoid_backward", "multi_head"} <= {e.id for e in chosen}:
        check_grade_student(failures)
    if mode != "none":
        prove_against_mutants(chosen, mode, failures)
    print(f"== {len(chosen)} exercises: stubs fail, solutions pass; {totals['named']} of "
          f"{totals['mistakes']} known mistakes fail and are named; {totals['accepted']} of {totals['wheats']} "
          f"correct answers written another way pass; {time.time() - start:.0f} s")
    if failures:
        print("FAILED:")
        for f in failures:
            print("  " + f)
        sys.exit(1)


def check_grade_student(failures):
    """make grade-student end to end, on a student's tree whose 1.1 is the
    hostile answer that writes a well-formed result with the nonce read from
    the grader's own pipe (its grader run says "all right") and whose 3.2 is
    right: 1.1 must not pass, by the judge's words, and 3.2 must."""
    forger = next(h for h in read_wheats(HOSTILE) if h["title"].startswith("the nonce read"))
    with tempfile.TemporaryDirectory() as folder:
        tree = pathlib.Path(folder) / "student"
        r = subprocess.run([sys.executable, __file__, "tree", "sigmoid_backward,multi_head", str(tree)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            failures.append("grade-student: the student's tree was not written: " + r.stdout + r.stderr)
            return
        for path in ["attention/scaled_dot_product.cpp", "attention/multi_head.cpp"]:
            shutil.copy(ROOT / path, tree / path)
        (tree / forger["file"]).write_text(apply(forger))
        start = time.time()
        r = subprocess.run([sys.executable, __file__, "grade-student", str(tree)], capture_output=True, text=True,
                           errors="replace")
    out = r.stdout + r.stderr
    verdicts = re.findall(r"^  \S+\s+(\w+)\s+(passed|NOT PASSED)$", out, re.M)
    ok = r.returncode == 1 and verdicts == [("sigmoid_backward", "NOT PASSED"), ("multi_head", "passed")] and \
        "are not this tree's solution's" in out and re.search(r"Exercise 1.1: all \d+ checks right", out) is not None
    print(f"== make grade-student, a forged 1.1 and a right 3.2: {'1.1 failed by the judge, 3.2 passed' if ok else 'WRONG'} "
          f"({time.time() - start:.0f} s)")
    if not ok:
        failures.append(f"grade-student: expected 1.1 failed by the judge and 3.2 passed, got exit {r.returncode}, "
                        f"{verdicts}\n" + out[-2500:])


def check_shared_tree(chosen, files, failures):
    """The student's tree written as make exercise writes it, with this tree's
    build shared (share_build): no compiled file of a file that differs there
    (it would hold an answer, compiled) is in it, and make there finds a shared
    object up to date and the object of a cut file not."""
    if not (ROOT / "build" / "obj").is_dir():
        print("== student's tree: no build here to share (nothing to check)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "tree"
        shared, unchanged = write_tree(files, out)
        changed = set(files) - unchanged
        objects = [o for o in (out / "build" / "obj").rglob("*") if o.suffix in (".o", ".gch")]
        leaked = []
        for o in objects:
            parts = o.relative_to(out / "build" / "obj").parts  # CONFIG/path/of/file.o
            source = pathlib.Path(*parts[1:]).with_suffix(".cpp").as_posix()
            if source in changed:
                leaked.append(f"{o.relative_to(out)}: compiled from {source}, which differs in the tree")
            d_file = o.with_name(o.name[:-4] + ".d") if o.suffix == ".gch" else o.with_suffix(".d")
            if not d_file.exists():
                leaked.append(f"{o.relative_to(out)}: shared without its dependency file")
                continue
            for dep in dependencies(d_file):
                if dep in changed:
                    leaked.append(f"{o.relative_to(out)}: reads {dep}, which differs in the tree")
        # a cut file that the grader compiles memory-checked (the Makefile's CUT_SRC)
        cut = sorted(f for f in blocks_by_file(chosen) if f.endswith(".cpp") and not f.startswith("tensor/gemm/")
                     and f.split("/")[0] in ("tensor", "autograd", "nn", "attention"))
        env = make_env()

        def make_q(target):  # 0: up to date, 1: to build, 2: make could not tell (no rule)
            return subprocess.run(["make", "-q", target], cwd=out, env=env, capture_output=True).returncode

        plain = next((o.relative_to(out).as_posix() for o in objects
                      if o.suffix == ".o" and "double" in o.parts), None)
        cut_object = "build/obj/checked/" + pathlib.Path(cut[0]).with_suffix(".o").as_posix() if cut else None
        reused = plain is not None and make_q(plain) == 0
        rebuilt = cut_object is None or make_q(cut_object) == 1
    for problem in leaked[:10]:
        failures.append(f"student's tree: {problem}")
    if not reused:
        failures.append(f"student's tree: make does not find the shared {plain} up to date")
    if not rebuilt:
        failures.append(f"student's tree: make finds {cut_object} (of a cut file) up to date")
    print(f"== student's tree, this build shared: {shared} compiled files linked, {len(leaked)} of a changed file; "
          f"make finds {plain} {'up to date' if reused else 'OUT OF DATE'} and {cut_object} "
          f"{'to build' if rebuilt else 'UP TO DATE'}")


# ---- mistakes nobody wrote down: the graders against every small change --------------------
PROBE_DRAWS = 40
EQUIVALENT = ROOT / "course" / "hidden" / "equivalent.txt"
MUTANTS_SAMPLED = 2  # per exercise, in make check-exercises (MUTANTS=all: every one; docs/performance.md)


def exercise_mutants(e):
    """[(words, {file: text})]: every one-change mutant of e's cut blocks
    (scripts/mutants.py), in the order of their lines."""
    found = []
    for file, opening in e.cuts:
        text = (ROOT / file).read_text()
        start, end = block_span(text, opening, file)
        for number, kind, what, mutated in mutants.block_mutants(text, start, end):
            line = mutated.split("\n")[number - 1].strip()
            found.append((f"{file}:{number}: {what}: {line}", {file: mutated}))
    return found


def probed(e):
    """Whether e's grader is proven against generated mutants: an exercise
    whose cut code course/probes.cpp draws inputs for (not a trainer run,
    and not 7.1 and 7.2, where the student's code is a test)."""
    kinds = {g.split()[0] for g in e.grade}
    return bool(e.cuts) and not kinds & {"write-test", "capstone", "trainer"}


def read_equivalent():
    """course/hidden/equivalent.txt: {(file, change)}: generated mutants that
    differ from the solution on some draw of course/probes.cpp yet are right
    for the exercise, each with why (the mutants of a branch no student's tree
    runs, say)."""
    listed, current = set(), None
    if not EQUIVALENT.exists():
        return listed
    for raw in EQUIVALENT.read_text().splitlines():
        if raw.startswith("## "):
            current = raw[3:].strip()
        elif raw.startswith("change: ") and current:
            listed.add((current, raw[8:].strip()))
    return listed


def mutant_key(words):
    """(file, 'what: new line') of a mutant's words, without its line number."""
    file, number, rest = words.split(":", 2)
    return file, rest.strip()


def probe_values(output):
    """{draw: [tokens]} of the grader's --probe output."""
    draws = {}
    for line in output.splitlines():
        head, sep, rest = line.partition(": ")
        if sep and head.startswith("draw "):
            draws[head] = rest.split()
    return draws


def first_difference(a, b, tolerance=1e-9):
    """None when two --probe outputs (probe_values) agree, draw by draw, to
    `tolerance` relative to 1 + |b|; else where they first differ, in words
    (a is the code under test, b the solution)."""
    if not a:
        return "no draw came back"
    if "draw 0" in a:  # the grader's own line: the draws stopped
        return "the draws " + " ".join(a["draw 0"])
    if a.keys() != b.keys():
        missing = sorted(b.keys() - a.keys(), key=lambda d: int(d.split()[1]))
        return f"{missing[0]} never came back" if missing else "draws came back that were not asked for"
    for draw, xs in b.items():
        ys = a[draw]
        if len(xs) != len(ys):
            return f"{draw}: {len(ys)} values where the solution computes {len(xs)} (a shape, or a refusal, differs)"
        for k, (y, x) in enumerate(zip(ys, xs)):
            if x == y:
                continue
            try:
                fx, fy = float(x), float(y)
            except ValueError:
                return f"{draw}, value {k + 1}: {y!r} where the solution gives {x!r}"
            if not (math.isnan(fx) and math.isnan(fy)) and not abs(fy - fx) <= tolerance * (1 + abs(fx)):
                return f"{draw}, value {k + 1}: {probe_words(fy)} where the solution gives {probe_words(fx)}"
    return None


def probe_words(x):
    """A value of course/probes.cpp's records, in words where it marks an event."""
    marks = {1e300: "no gradient", 2e300: "a refusal (std::logic_error)", 3e300: "another exception"}
    return marks.get(x, repr(x))


def same_values(a, b):
    """Whether two --probe outputs agree, draw by draw, to 1e-9 relative."""
    return first_difference(a, b) is None


# ---- the judge: a pass borne out by values computed here ---------------------------------
# A grader run's verdict comes from a process that holds the student's code
# (course/child.cpp frames each check's result with a nonce, but code that
# reads the nonce from its own process can write a well-formed frame). So
# where a verdict counts (make grade-student, and the hostile answers of make
# check-exercises), a pass needs the judge too: course/probes.cpp's draws,
# numbered from a base drawn here at run time (no answer can have been written
# for them), run on the student's code and on this tree's solution, and
# compared here, in this process, which runs no student code. The student's
# process can only report values; values that are the solution's on fresh
# inputs are a right answer, whoever wrote the report.
JUDGE_DRAWS = 40
JUDGE_TOLERANCE = {"gemm_kernel": 1e-3}  # float sums of up to ~1000 terms in another order
JUDGE_DEFAULT_TOLERANCE = 1e-7           # the double build: another algebra differs by ~1e-13


def judge_base():
    """A base for the judge's draw numbers, drawn now (--probe-from)."""
    return secrets.randbelow(10 ** 15 - 10 ** 6)


def judge_args(e, base):
    return ["--time-cap", "10", "--probe", str(JUDGE_DRAWS), "--probe-from", str(base), e.id]


def judged_draws(root, e, base, run):
    """The student's draws for the judge: run(argv) runs the grader built in
    root with argv and returns what it printed. The draws are read from a
    file of their own (--probe-out), apart from anything the student's code
    printed (what was printed stands in when no file came)."""
    draws = root / "build" / "course" / "judge-draws.txt"
    draws.unlink(missing_ok=True)
    printed = run(["--probe-out", str(draws)] + judge_args(e, base))
    return draws.read_text(errors="replace") if draws.is_file() else printed


def judge_words(e, base, theirs_output, ours_output):
    """(agrees, a sentence): the student's --probe output against this tree's."""
    ours = probe_values(ours_output)
    if len(ours) != JUDGE_DRAWS:
        return False, f"the judge: this tree's own probe did not run ({ours_output.strip()[-300:]})"
    theirs = probe_values(theirs_output)
    problem = first_difference(theirs, ours, JUDGE_TOLERANCE.get(e.id, JUDGE_DEFAULT_TOLERANCE))
    if not theirs:
        printed = "\n".join(l for l in theirs_output.splitlines() if not l.startswith("[graded in ")).strip()
        problem += f" (what the run printed instead: {printed[:160]!r})"
    if problem is None:
        return True, (f"the judge: your code's values on {JUDGE_DRAWS} fresh draws (course/probes.cpp, from "
                      f"{base + 1}) are this tree's solution's")
    return False, (f"the judge: your code's values on {JUDGE_DRAWS} fresh draws (course/probes.cpp, from {base + 1}) "
                   f"are not this tree's solution's: {problem}")


def judged(e, base, rcs, outs, ours_output):
    """A grader run and, when it passed, its judge's run (the exit statuses
    and outputs of [[…, e.id], judge_args(e, base)]; the judge's missing for an
    exercise without probes): (exit status, output). A pass (0) needs both;
    the judge's sentence is added to the output whenever it ran."""
    rc, out = rcs[0], outs[0]
    if rc != 0 or len(rcs) < 2 or rcs[1] is None:
        return rc, out
    agrees, words = judge_words(e, base, outs[1], ours_output)
    return (0 if agrees else 1), out + "\n" + words + ("" if agrees else ": not a pass, whatever the lines above say") + "\n"


def spread(items, most):
    """At most `most` of items, evenly spread over them."""
    if len(items) <= most:
        return items
    return [items[round(i * (len(items) - 1) / (most - 1))] for i in range(most)]


def prove_against_mutants(chosen, mode, failures):
    """Every (mode 'all') or a spread of (mode 'sample') the generated mutants
    of each exercise's solution: built in turn, graded, and drawn on by
    course/probes.cpp. A mutant the grader passes whose every draw agrees with
    the solution's is equivalent (set aside); one whose draws differ got
    through: listed, and a failure unless course/hidden/equivalent.txt says why
    it is right. Prints, per exercise, the share of the others the grader fails."""
    listed = read_equivalent()
    exercises = [e for e in chosen if probed(e)]
    baseline, jobs, what = {}, [], []
    for e in exercises:
        rc, out = run_grader(["--probe", str(PROBE_DRAWS), e.id])
        baseline[e.id] = probe_values(out)
        if rc != 0 or len(baseline[e.id]) != PROBE_DRAWS:
            failures.append(f"{e.id}: the probe does not run on the solution (course/probes.cpp)")
            print(out[-2000:])
            continue
        generated = exercise_mutants(e)
        picked = generated if mode == "all" else spread(generated, MUTANTS_SAMPLED)
        for words, writes in picked:
            # (every check capped at 20 s: a mistake that loops forever is failed by the time-out alone)
            # (drawn on only when the grader passes it: a mistake it fails needs no more)
            jobs.append((writes, [["--time-cap", "20", e.id],
                                  ["--if-passed", "--time-cap", "10", "--probe", str(PROBE_DRAWS), e.id]], False))
            what.append((e, words, len(generated)))
    results = {}
    for (e, words, generated), (built, rcs, outs) in zip(what, in_workers(jobs)):
        r = results.setdefault(e.id, {"generated": generated, "tried": 0, "unbuilt": [], "equivalent": [],
                                      "listed": [], "caught": 0, "survived": []})
        r["tried"] += 1
        if not built:
            r["unbuilt"].append(words)
            verdict = "does not compile"
        elif rcs[0] != 0:
            r["caught"] += 1
            verdict = "failed"
        elif same_values(probe_values(outs[1]), baseline[e.id]):
            r["equivalent"].append(words)
            verdict = "equivalent"
        elif mutant_key(words) in listed:
            r["listed"].append(words)
            verdict = "equivalent (listed)"
        else:
            r["survived"].append(words)
            verdict = "GOT THROUGH"
        if mode == "all":
            print(f"   {e.id}: {verdict}: {words}", flush=True)
    shares = []
    for e in exercises:
        r = results.get(e.id)
        if not r:
            continue
        differing = r["caught"] + len(r["survived"])
        share = r["caught"] / differing if differing else 1.0
        shares.append((e, r, share))
        print(f"== exercise {e.number} {e.id}: {r['tried']} of {r['generated']} generated mistakes built: "
              f"{len(r['unbuilt'])} do not compile, {len(r['equivalent']) + len(r['listed'])} equivalent "
              f"(set aside), the grader fails {r['caught']} of the other {differing} ({100 * share:.0f} %)")
        for words in r["equivalent"]:
            print(f"   equivalent (every draw agrees): {words}")
        for words in r["listed"]:
            print(f"   equivalent (course/hidden/equivalent.txt): {words}")
        for words in r["survived"]:
            print(f"   GOT THROUGH: {words}")
            failures.append(f"{e.id}: a generated mistake got through its grader: {words}")
        if share < 0.95:
            failures.append(f"{e.id}: its grader fails {100 * share:.0f} % of the generated mistakes (95 % needed)")
    caught = sum(r["caught"] for _, r, _ in shares)
    differing = sum(r["caught"] + len(r["survived"]) for _, r, _ in shares)
    print(f"== generated mistakes ({mode}): the graders fail {caught} of {differing} that differ from a solution")


def fingerprints(names):
    exercises = read_exercises()
    chosen = pick(exercises, names)
    mutations = read_mutations()
    if not build_grader():
        sys.exit("the grader does not build")
    # keep the other exercises' fingerprints when only some are made again
    kept, current = [], None
    if FINGERPRINTS.exists():
        for line in FINGERPRINTS.read_text().splitlines():
            if line.startswith("exercise: "):
                current = line[10:]
            if current and current not in [e.id for e in chosen] and not line.startswith("#"):
                kept.append(line)
    out = ["# What each known mistake (a mutation of tests/mutations/ inside an exercise's cut",
           "# blocks) computes on the grading cases: a few values of every output and gradient.",
           "# Made by make fingerprints (scripts/exercises.py); course/grade.cpp names a",
           "# student's mistake when the student's values match. Do not edit by hand."] + kept
    what = [(e, m) for e in chosen for m in mutations_of(e, mutations)]
    jobs = [({m["file"]: apply(m)}, ["--fingerprint", e.id], False) for e, m in what]
    for (e, m), (built, _, printed) in zip(what, in_workers(jobs)):
        if built:
            lines = [l for l in printed.strip().splitlines() if l.strip() and not l.startswith("[graded in ")]
            out += [f"exercise: {e.id}", f"mistake: {mistake_words(m['title'])}"] + lines[-2:]
            print(f"{e.id}: {mistake_words(m['title'])}")
    FINGERPRINTS.write_text("\n".join(out) + "\n")
    print(f"wrote {FINGERPRINTS.relative_to(ROOT)}")


def spliced_files(student, chosen):
    """({path: text or None}, [notes]): this tree's tracked files (None: as
    they are here), with the bodies of the student's blocks of each chosen
    exercise's cut code spliced into this tree's files (the capstone: the
    student's own files, whole). Only the bodies of the blocks the student was
    given are theirs; the rest of each file is this tree's. So nothing a
    student adds outside those blocks (a static initialiser that runs before
    the grader's main, a second definition) is compiled; a file that differs
    there gets a note. Exits (SystemExit, with the words) on a file missing,
    a block whose first line was changed, a capstone file outside the tree."""
    files = {path: None for path in tracked_files()}
    notes = []
    spliced = {}
    for e in chosen:
        if e.id == "capstone":
            # the capstone's files are the student's own: those course/capstone.txt names
            code, named = read_capstone(student / "course" / "capstone.txt")
            for file in ["course/capstone.txt"] + named + [file for file, _ in code]:
                theirs = student / file
                if theirs.is_symlink() or not theirs.is_file():
                    sys.exit(f"{theirs}: missing from the student's tree, or not a plain file")
                relative = pathlib.PurePosixPath(file)
                if relative.is_absolute() or ".." in relative.parts:
                    sys.exit(f"{theirs}: outside the tree graded: refused")
                files[file] = theirs.read_text(errors="replace")
            continue
        for file, opening in e.cuts:
            theirs = student / file
            if theirs.is_symlink() or not theirs.is_file():
                sys.exit(f"{theirs}: missing from the student's tree, or not a plain file")
            text = theirs.read_text(errors="replace")
            if opening.rstrip() not in [l.rstrip() for l in text.split("\n")]:
                sys.exit(f"{theirs}: the block to write is not there (its first line, {opening.strip()!r}, was changed "
                         f"or removed): only the bodies of the blocks given are graded")
            start, end = block_span(text, opening, str(theirs))
            spliced.setdefault(file, []).append((opening, text[start:end]))
    for file, blocks in spliced.items():
        ours = (ROOT / file).read_text()
        text = ours
        spans = [(block_span(text, opening, file), body) for opening, body in blocks]
        for (start, end), body in sorted(spans, reverse=True):
            text = text[:start] + body + text[end:]
        # the student's file with this tree's bodies in the blocks: anything else that differs is not graded
        outside = (student / file).read_text(errors="replace")
        for opening, _ in blocks:
            start, end = block_span(outside, opening, file)
            ours_start, ours_end = block_span(ours, opening, file)
            outside = outside[:start] + ours[ours_start:ours_end] + outside[end:]
        if outside != ours:
            notes.append(f"{file} differs from this tree's outside the blocks to write: those lines are not graded "
                         f"(this tree's are)")
        files[file] = text
    return files, notes


def grade_student(args):
    """A student's tree graded here, with the hidden cases and the judge: this
    tree's files written to build/grade-student/tree, fresh for each student,
    the bodies of the student's blocks of each exercise's cut code spliced
    into them, and this tree's build shared (share_build): the student's
    files compile, the rest is linked. Each exercise is graded on its own, and
    an exercise course/probes.cpp draws on passes only when the judge agrees
    (judge_words). Exit status 0 when every exercise passed."""
    seed = None
    if "--seed" in args:
        at = args.index("--seed")
        seed = args[at + 1] if at + 1 < len(args) else ""
        args = args[:at] + args[at + 2:]
    if not args or not args[0]:
        sys.exit("make grade-student STUDENT=<a student's tree> [EX=id] [SEED=n]")
    student, names = pathlib.Path(args[0]).expanduser(), args[1:]
    if not (student / "course" / "exercises.txt").exists():
        sys.exit(f"{student}: not a student's tree (no course/exercises.txt)")
    if not names:
        assignment = student / "course" / "assignment.txt"
        names = [l.strip() for l in assignment.read_text().splitlines() if l.strip() and not l.startswith("#")] \
            if assignment.exists() else []
    chosen = pick(read_exercises(), names)
    files, notes = spliced_files(student, chosen)
    for note in notes:
        print("note: " + note)
    # this tree's grader first: its objects are what the copy shares, and it is the judge's
    started = time.time()
    if not build_grader():
        sys.exit("this tree's grader does not build (above)")
    scratch = ROOT / "build" / "grade-student" / "tree"
    shutil.rmtree(scratch, ignore_errors=True)  # fresh: nothing of the last student's build is left in it
    shared, _ = write_tree(files, scratch, hidden=True)
    jobs = str(os.cpu_count() or 1)
    # (WERROR= : a student's warnings are not the grader's business, whatever the environment says)
    r = subprocess.run(["make", "--no-print-directory", "-j" + jobs, GRADER, "WERROR="], cwd=scratch,
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout[-3000:] + r.stderr[-3000:])
        sys.exit(f"the student's code does not compile (above), in {scratch}")
    print(f"(built in {time.time() - started:.0f} s: the student's files compiled, {shared} of this tree's "
          f"compiled files shared)")
    base = judge_base()
    verdicts = []
    for e in chosen:
        command = [str(scratch / GRADER), "--hidden"] + (["--seed", seed] if seed is not None else []) + [e.id]
        rc, out = grader_run(scratch, command[1:], seconds=3600, env=os.environ)
        print(out, end="" if out.endswith("\n") else "\n")
        if rc == 0 and probed(e):
            theirs = judged_draws(scratch, e, base, lambda argv: grader_run(scratch, argv, seconds=600)[1])
            agrees, words = judge_words(e, base, theirs, run_grader(judge_args(e, base))[1])
            print(words + ("" if agrees else ": not a pass, whatever the lines above say"))
            rc = 0 if agrees else 1
        verdicts.append((e, rc))
    print("\n" + "\n".join(f"  {e.number:5} {e.id:22} {'passed' if rc == 0 else 'NOT PASSED'}" for e, rc in verdicts))
    sys.exit(0 if all(rc == 0 for _, rc in verdicts) else 1)


# ---- the student's tests against wrong code (exercises 7.1 and 7.2) ---------------------
WHEATS = ROOT / "course" / "wheats.txt"
CAPSTONE = ROOT / "course" / "capstone.txt"
def capstone_template():
    """A student's course/capstone.txt: this tree's header, up to its first blank line."""
    return CAPSTONE.read_text().split("\n\n", 1)[0] + "\n"


ANSWER_WHEATS = ROOT / "course" / "hidden" / "wheats.txt"
HOSTILE = ROOT / "course" / "hidden" / "hostile.txt"


def read_wheats(path=WHEATS):
    """course/wheats.txt: correct variants of a mechanism, in the mutation
    lists' format: a student's checks must pass on each. (path
    course/hidden/wheats.txt: correct answers to the exercises, written another
    way, that every grader must pass; each names its `exercise`.)"""
    wheats, current = [], None
    if not path.exists():
        return wheats
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        if raw.startswith("## "):
            current = {"title": raw[3:].strip(), "where": f"{path.relative_to(ROOT)}:{number}"}
            wheats.append(current)
        elif current is not None and ": " in raw and not raw.startswith("#"):
            key, _, value = raw.partition(": ")
            current[key.strip()] = value
    return wheats


CAPSTONE_FOLDERS = ("tensor", "autograd", "nn", "io", "attention", "tests")


def inside_tree(name, where):
    """name, a path a student wrote in course/capstone.txt, if it names a C++
    source of the library or its tests: relative, no '..', in one of their
    folders. Anything else (the Makefile, a script, a path out of the tree) is
    refused: the grader copies these files into an instructor's tree and
    builds there."""
    p = pathlib.PurePosixPath(name)
    if not name or p.is_absolute() or ".." in p.parts or "\\" in name or len(p.parts) < 2 or \
            p.parts[0] not in CAPSTONE_FOLDERS or p.suffix not in (".cpp", ".hpp"):
        sys.exit(f"{where}: '{name}' is not a C++ file of the library's folders ({', '.join(CAPSTONE_FOLDERS)}; "
                 f"a relative path, no '..'): refused")
    return p.as_posix()


def read_capstone(path=CAPSTONE):
    """([(file, opening)], files) of course/capstone.txt: the functions the
    mistakes are made in, and the files it names. (Its entries the grader
    reads itself.)"""
    code, files = [], []
    if not path.exists():
        return code, files
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        if not raw.strip() or raw.startswith("#"):
            continue
        key, sep, value = raw.partition(": ")
        if not sep:
            sys.exit(f"{path}:{number}: expected 'KEY: VALUE' (paper, entry, code, file)")
        if key in ("entry", "paper"):
            continue
        if key == "code":
            file, bar, opening = value.partition(" | ")
            if not bar:
                sys.exit(f"{path}:{number}: expected 'code: FILE | OPENING LINE'")
            code.append((inside_tree(file.strip(), f"{path}:{number}"), opening))
        elif key == "file":
            files.append(inside_tree(value.strip(), f"{path}:{number}"))
        else:
            sys.exit(f"{path}:{number}: unknown key '{key}' (paper, entry, code, file)")
    return code, files


# The small mistakes made in a capstone's code, one at a time: the operators
# of mutation testing (after Offutt's sufficient set) on the library's ops:
# an op for its neighbour, a unary op dropped, arguments swapped, an
# arithmetic operator replaced, a transpose flag flipped, a reduction over
# another axis, a constant doubled, a minus sign dropped, an assignment
# dropped.
UNARY = ("tanh", "sigmoid", "relu", "exp", "log", "square", "sqrt", "abs", "neg")
SWAPPED = {"add": "sub", "sub": "add", "mul": "div", "div": "mul", "tanh": "sigmoid", "sigmoid": "tanh",
           "sum": "mean", "mean": "sum", "exp": "square", "square": "abs"}
REDUCING = re.compile(r"\b(softmax|log_softmax|sum|mean|max|concat|unsqueeze|transpose|split)\(")


def call_argument_end(code, open_paren):
    """The index of the ')' closing the call whose '(' is at open_paren, and
    whether its argument list has a comma at its top level."""
    depth, comma = 0, False
    for i in range(open_paren, len(code)):
        if code[i] == "(":
            depth += 1
        elif code[i] == ")":
            depth -= 1
            if depth == 0:
                return i, comma
        elif code[i] == "," and depth == 1:
            comma = True
    return -1, comma


def line_mutants(code):
    """(description, new code) for each one-place change of a line of code."""
    out = []
    for m in re.finditer(r"(?<![\w:.])(\w+)\(", code):  # a call of the library's (not std::sqrt)
        name = m.group(1)
        if name in SWAPPED:
            out.append((f"{name}( → {SWAPPED[name]}(", code[:m.start()] + SWAPPED[name] + code[m.start() + len(name):]))
        if name in UNARY:
            end, comma = call_argument_end(code, m.end() - 1)
            if end > 0 and not comma:
                out.append((f"{name}(x) → (x)", code[:m.start()] + code[m.start() + len(name):]))
        if name in ("sub", "div", "matmul"):  # (add and mul commute: swapped, they are still right)
            a = re.match(r"([\w.]+), ([\w.]+)(?=[,)])", code[m.end():])
            if a and a.group(1) != a.group(2):
                swapped = f"{a.group(2)}, {a.group(1)}"
                out.append((f"{name}'s arguments swapped", code[:m.end()] + swapped + code[m.end() + a.end():]))
    for m in re.finditer(r" ([*/+-]) ", code):
        other = {"*": "/", "/": "*", "+": "-", "-": "+"}[m.group(1)]
        out.append((f"{m.group(1)} → {other}", code[:m.start() + 1] + other + code[m.end() - 1:]))
    for m in re.finditer(r"\b(true|false)\b", code):
        other = "false" if m.group(1) == "true" else "true"
        out.append((f"{m.group(1)} → {other}", code[:m.start()] + other + code[m.end():]))
    if REDUCING.search(code):
        for m in re.finditer(r", (-?[12])\b", code):
            other = {"-1": "-2", "-2": "-1", "1": "2", "2": "1"}[m.group(1)]
            out.append((f"axis {m.group(1)} → {other}", code[:m.start() + 2] + other + code[m.end():]))
    for m in re.finditer(r"(?<![\w.])(\d+\.\d*|\d*\.\d+)(?![\w.])|(?<=real\()(\d+)(?=\))", code):
        number = m.group(0)
        doubled = repr(2 * float(number)) if m.group(1) else str(2 * int(number))
        out.append((f"{number} → {doubled}", code[:m.start()] + doubled + code[m.end():]))
    for m in re.finditer(r"(?<=[=(,] )-(?=[\w(])|(?<=\()-(?=[\w(])", code):
        out.append(("a minus sign dropped", code[:m.start()] + code[m.end():]))
    if re.fullmatch(r"\s*(if \(.*\)\s*)?[\w.\[\]]+ [-+*/]?= .*;\s*", code):
        # an assignment to a name that exists already (not a declaration): dropped
        out.append(("the statement dropped", re.match(r"\s*", code).group(0) + "// " + code.strip()))
    return out


def capstone_mutants(code_blocks, most=40):
    """[(words, {file: text})]: one small change at a time in the capstone's
    functions, on the lines that compute (not the shape checks and their
    messages); at most `most`, spread evenly over the functions."""
    found = []
    for file, opening in code_blocks:
        text = (ROOT / file).read_text()
        start, end = block_span(text, opening, f"{CAPSTONE.name}: {file}")
        first_line = text.count("\n", 0, start) + 1
        offset = start
        for k, line in enumerate(text[start:end].split("\n")):
            code, _, comment = line.partition("//")
            skip = not code.strip() or re.search(r"\bcheck\w*\(|\bthrow\b|\"", code)
            if not skip:
                for what, new in line_mutants(code):
                    mutated = text[:offset] + new + ("//" + comment if comment else "") + text[offset + len(line):]
                    words = f"{file}:{first_line + k}: {what}: {new.strip()}"
                    found.append((words, {file: mutated}))
            offset += len(line) + 1
    if len(found) > most:
        found = [found[round(i * (len(found) - 1) / (most - 1))] for i in range(most)]
    return found


def mistakes(name):
    """Exercise 7.1 or 7.2: the student's checks (grade --checks-only) on
    each correct variant and each mistake, built into a copy of the tree in
    turn. Prints one line each, which the grader reads: accepted/rejected
    WORDS for a correct variant, caught/missed WORDS for a mistake, unbuilt
    WORDS for one that does not compile here."""
    e = pick(read_exercises(), [name])[0]
    grade = next((g.split() for g in e.grade if g.split()[0] in ("write-test", "capstone")), None)
    if grade is None:
        sys.exit(f"exercise {e.number} does not grade the student's tests")
    if grade[0] == "write-test":
        ids = set(grade[2:])
        chaff = [(mistake_words(m["title"]), {m["file"]: apply(m)}) for m in read_mutations()
                 if ids & set(m.get("ids", "").split(","))]
        wheat = [(w["title"], {w["file"]: apply(w)}) for w in read_wheats() if ids & set(w.get("ids", "").split(","))]
    else:
        chaff, wheat = capstone_mutants(read_capstone()[0]), []
    for words, writes in wheat + chaff:
        for path, text in writes.items():
            if text == (ROOT / path).read_text():
                sys.exit(f"{words}: its `find` is no longer in {path}: the list needs mending")
    if not chaff:
        sys.exit("no mistakes to build: the exercise names no code (course/capstone.txt: code: FILE | OPENING)")
    # A capstone's mistakes are made blind: some compute the same function (a
    # shift common to a softmax's row, a sum in another order). A mistake the
    # student's checks miss is drawn on (the grader's --probe: the entries'
    # outputs and gradients on inputs and parameters drawn anew, 20 times); one
    # that agrees with the student's code every time is left out, not counted.
    capstone = grade[0] == "capstone"
    probe = ["--probe", "20", "capstone"]
    baseline = probe_values(run_grader(probe)[1]) if capstone else {}
    jobs = [(writes, [["--checks-only", e.id]] + ([probe] if capstone and kind == "chaff" else []), False)
            for (_, writes), kind in zip(wheat + chaff, ["wheat"] * len(wheat) + ["chaff"] * len(chaff))]
    kinds = ["wheat"] * len(wheat) + ["chaff"] * len(chaff)
    for (words, _), kind, (built, rcs, outs) in zip(wheat + chaff, kinds, in_workers(jobs)):
        rc = rcs[0] if built else rcs
        if not built or rc not in (0, 1):
            tag = "unbuilt"
            words += " (does not compile here)" if not built else f" (the grader stopped, exit {rc})"
        elif kind == "wheat":
            tag = "accepted" if rc == 0 else "rejected"
        elif rc == 1:
            tag = "caught"
        else:
            tag = "equivalent" if capstone and same_values(probe_values(outs[1]), baseline) else "missed"
        print(f"{tag}\t{words}", flush=True)


def list_exercises():
    exercises = read_exercises()
    for e in exercises:
        print(e.id)
    print()
    for e in exercises:
        print(f"{e.number:5} {e.id:20} {e.title}")
        for file, opening in e.cuts:
            print(f"      cut: {file}: {opening.strip()}")
        print(f"      graded by: {'; '.join(e.grade)}")
    print("\nmake exercise EX=<id> OUT=<dir>   a student's tree (EX=all: every exercise)")


def main():
    args = sys.argv[1:]
    if not args or args[0] == "list":
        list_exercises()
    elif args[0] == "tree" and len(args) == 3:
        make_tree(args[1].split(","), args[2])
    elif args[0] == "check":
        check(args[1:])
    elif args[0] == "fingerprints":
        fingerprints(args[1:])
    elif args[0] == "mistakes" and len(args) == 2:
        mistakes(args[1])
    elif args[0] == "grade-student":
        grade_student(args[1:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
