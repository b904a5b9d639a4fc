"""Find the bug: a student's tree with one deliberate mistake in it, and its
grader.

    python3 scripts/bugs.py list [LAYER]            (make bug: how many mistakes each layer has)
    python3 scripts/bugs.py tree SEED OUT [LAYER]   (make bug SEED=n OUT=dir [LAYER=attention])
    python3 scripts/bugs.py grade                   (make bug-grade, in the student's tree)
    python3 scripts/bugs.py check                   (part of make check-exercises)
    python3 scripts/bugs.py walk [SEED]             (part of make check-exercises, in a built tree)

The mistakes are the mutation lists' (tests/mutations/*.txt): each one is a
line or two of the library changed so that some test of `make test` fails
(make mutation-check proves it of every one). The seed chooses one, among
those of LAYER if given (tensor, autograd, nn, io, attention, examples); the tree
is the project's tracked files with that mistake made and its entry left out
of its list, so that the lists do not say where it is. The kernels written
for one instruction set (*_avx2.cpp, *_avx512.cpp, *_neon.cpp) are left out:
a CPU without it never runs them.

course/bug.txt records the seed, the layer and one SHA-256 over every file
of the library and the programs as they were before the mistake was made
(course/bug-files.txt lists them): one sum, so that it says whether they are
all as they were, not which file differs. `grade` compares the tree with it, then runs `make test`: the
mistake is found when both agree. It then says which mistake it was.
"""
import base64
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

import exercises  # the mutation lists and the tracked files, read as the exercises read them

ROOT = pathlib.Path(__file__).resolve().parent.parent
MUTATIONS = ROOT / "tests" / "mutations"
LISTS = "tests/mutations/"
RECORD = "course/bug.txt"
MANIFEST = "course/bug-files.txt"  # the files the sum covers, one path a line
# Where the mistakes are, and what the sum covers: the library and the programs.
LAYERS = ("tensor", "autograd", "nn", "io", "attention", "examples")
ONE_ISA = re.compile(r"_(avx2|avx512|neon)\.cpp$")


def read_mistakes():
    """Every mutation of tests/mutations/ (exercises.read_mutations: title,
    file, find, replace, where), `list` as a path in the project, in a fixed
    order: by list, then by line.
    (Only mistakes of the layers the sum covers: one in a script would be
    "found" by make bug-grade before it was mended.)"""
    return [dict(m, list=m["list"].relative_to(ROOT).as_posix())
            for m in exercises.read_mutations()
            if not ONE_ISA.search(m.get("file", "")) and layer_of(m.get("file", "")) in LAYERS]


def layer_of(path):
    return path.split("/")[0]


def candidates(layer):
    mistakes = read_mistakes()
    if layer:
        if layer not in LAYERS:
            sys.exit(f"LAYER={layer}: not a layer (one of {', '.join(LAYERS)})")
        mistakes = [m for m in mistakes if layer_of(m["file"]) == layer]
        if not mistakes:
            sys.exit(f"LAYER={layer}: the mutation lists have no mistake there")
    return mistakes


def choose(mistakes, seed):
    """The seed's mistake: the same for the same seed and lists on any machine."""
    digest = hashlib.sha256(f"find the bug {seed}".encode()).digest()
    return mistakes[int.from_bytes(digest[:8], "big") % len(mistakes)]


def unescape(text):
    return text.replace("\\n", "\n")


def project_files():
    """The tracked files a student's tree holds (not the instructor's hidden cases)."""
    return sorted(f for f in exercises.tracked_files() if not f.startswith("course/hidden/"))


def summed(files):
    """One SHA-256 over {path: bytes} of the library's and the programs' files."""
    h = hashlib.sha256()
    for path in sorted(files):
        if layer_of(path) in LAYERS:
            h.update(path.encode() + b"\0" + hashlib.sha256(files[path]).digest())
    return h.hexdigest()


def tree_files():
    """The tracked files a bug tree starts from: the student's tree less the
    mutation lists, which would name the mistake's file and its neighbours
    (the lists' own test, in make test, passes without them in a bug tree)."""
    return {path: (ROOT / path).read_bytes() for path in project_files() if not path.startswith(LISTS)}


def planted(files, mistake):
    """files with the mistake made in its file, or None when it cannot be
    made there (its find: not exactly once)."""
    path = mistake["file"]
    find, replace = unescape(mistake.get("find", "")), unescape(mistake.get("replace", ""))
    text = files[path].decode() if path in files else ""
    if not find or text.count(find) != 1 or find == replace:
        return None
    return dict(files, **{path: text.replace(find, replace).encode()})


def bug_tree(seed, layer, files=None):
    """{path: bytes} of the student's tree for this seed, and the mistake."""
    mistake = choose(candidates(layer), seed)
    files = files if files is not None else tree_files()
    original = summed(files)
    changed = planted(files, mistake)
    if changed is None:
        sys.exit(f"{mistake['where']}: its find: does not occur exactly once in {mistake['file']} "
                 "(make test's mutation-lists case says more)")
    files = changed
    files[MANIFEST] = "".join(p + "\n" for p in sorted(files) if layer_of(p) in LAYERS).encode()
    answer = base64.b64encode(f"{mistake['file']}: {mistake['title']}".encode()).decode()
    files[RECORD] = (
        "# Find the bug (docs/course/find-the-bug.md). One deliberate mistake was made in\n"
        "# this tree's library or programs. make test shows what it breaks; make\n"
        "# bug-grade says when every file is as it was and the suite passes, then which\n"
        "# mistake it was.\n"
        f"seed: {seed}\n"
        f"layer: {layer or 'any'}\n"
        f"sum: {original}\n"
        "# The answer, in base64 so that it is not read by accident:\n"
        f"answer: {answer}\n").encode()
    return files, mistake


def make_tree(seed, out, layer):
    if not re.fullmatch(r"\d+", seed or ""):
        sys.exit("make bug SEED=<a whole number> OUT=<dir> [LAYER=...]: SEED chooses the mistake")
    if not out:
        sys.exit("make bug SEED=<n> OUT=<dir>: OUT names the folder to write the student's tree to")
    out = pathlib.Path(out).expanduser()
    if out.exists() and any(out.iterdir()):
        sys.exit(f"{out} exists and is not empty: choose a new folder (nothing a student saved is overwritten)")
    files, _ = bug_tree(seed, layer)
    _, shared = write_tree(files, out)
    where = f"the {layer} layer" if layer else "the library or the programs"
    print(f"wrote {out}: {len(files)} files, one deliberate mistake somewhere in {where}")
    first = "what it breaks (the first build takes a few minutes)"
    if shared:
        print(f"building its tests, {shared} compiled files copied from this clone's build; what make compiles "
              "is not shown (it would name the file)...", flush=True)
        if build_out_of_sight(out):
            first = "what it breaks (built: it runs the tests)"
        else:
            print("  the tree's build stopped: make test there shows where")
    for command, why in ((f"cd {out} && make test", first), ("make bug-grade", "when you have mended it")):
        print(f"  {command:<{len(str(out)) + 16}}  # {why}")
    print("  read docs/course/find-the-bug.md first")


def write_tree(files, out):
    """Writes the bug tree's files into `out`, each with the time and mode of
    this tree's file of that path (the changed one too: its time says
    nothing), and copies in it this tree's compiled objects of every file it
    holds unchanged (exercises.share_build): make finds them up to date.
    Copies, not links: a link's count would single out the objects compiled
    in the tree. Returns the paths written unchanged and how many objects
    were copied (0 when this tree has no build)."""
    unchanged = set()
    for path, data in files.items():
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        source = ROOT / path
        if source.exists():
            shutil.copystat(source, target)
            if source.read_bytes() == data:
                unchanged.add(path)
    return unchanged, exercises.share_build(out, unchanged, copy=True)


def build_out_of_sight(out):
    """make tests-built in the tree `out`, its output not shown: the files it
    compiles are the mistake's and those that include it. Then each object
    compiled there takes the time of this tree's object of the same path
    (when that is still after all it was compiled from), and every folder
    of its build one time: a listing by time does not single them out
    either. The student's make test finds everything built. False when the
    build failed (make test there says where, as it would have anyway)."""
    objects = out / "build" / "obj"
    before = {f for f in objects.rglob("*") if f.is_file()}
    r = subprocess.run(["make", "--no-print-directory", "tests-built"], cwd=out, env=exercises.make_env(),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if r.returncode != 0:
        return False
    for compiled in sorted(f for f in objects.rglob("*") if f.is_file() and f not in before):
        if compiled.suffix not in (".o", ".d"):
            continue
        mine = ROOT / compiled.relative_to(out)
        d_file = compiled.with_suffix(".d") if compiled.suffix == ".o" else compiled
        if not mine.exists() or not d_file.exists():
            continue
        read = [pathlib.Path(dep) if dep.startswith("/") else out / dep for dep in exercises.dependencies(d_file)]
        newest = max((p.stat().st_mtime_ns for p in read if p.exists()), default=0)
        if mine.stat().st_mtime_ns >= newest:
            os.utime(compiled, ns=(mine.stat().st_atime_ns, mine.stat().st_mtime_ns))
    now = max(f.stat().st_mtime_ns for f in (out / "build").rglob("*") if f.is_file())
    for folder in [out / "build"] + [d for d in (out / "build").rglob("*") if d.is_dir()]:
        os.utime(folder, ns=(now, now))
    return True


def record_of(root):
    path = root / RECORD
    if not path.exists():
        sys.exit(f"{RECORD} is missing: make bug-grade grades a tree made by make bug SEED=n OUT=dir")
    fields = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition(": ")
            fields[key] = value
    for key in ("seed", "sum", "answer"):
        if key not in fields:
            sys.exit(f"{RECORD}: no '{key}:' line (the file was edited?)")
    return fields


def files_of_tree(root):
    """The tree's files that the sum covers (course/bug-files.txt): those the
    tree was made with. A file missing counts as changed; files the student
    added are not looked at."""
    manifest = root / MANIFEST
    if not manifest.exists():
        sys.exit(f"{MANIFEST} is missing: make bug-grade grades a tree made by make bug SEED=n OUT=dir")
    files = {}
    for path in manifest.read_text().split():
        files[path] = (root / path).read_bytes() if (root / path).exists() else b"(missing)"
    return files


def grade(root=ROOT):
    record = record_of(root)
    print(f"find the bug, seed {record['seed']} ({record.get('layer', 'any')}):")
    if summed(files_of_tree(root)) != record["sum"]:
        print("  NOT YET  some file of the library or the programs still differs from the tree before the "
              "mistake.\n           make test shows what the mistake breaks; mend it, and undo anything else "
              "you changed there\n           (debugging prints included): every file must be as it was.")
        return 1
    print("  every file of the library and the programs is as it was; make test:")
    # The mended file made newer than its object, which was compiled with the
    # mistake: a file copied back with its old time (cp -p) is compiled again.
    answer_file = root / base64.b64decode(record["answer"]).decode().split(": ", 1)[0]
    if answer_file.exists():
        os.utime(answer_file)
    r = subprocess.run(["make", "--no-print-directory", "test"], cwd=root, env=exercises.make_env())
    if r.returncode != 0:
        print("  NOT YET  make test fails (above)")
        return 1
    answer = base64.b64decode(record["answer"]).decode()
    print(f"  FOUND    the mistake was {answer}")
    return 0


def check():
    """Every mistake a seed can draw, in every layer, planted without building
    a tree: the tree differs from this one in the mistake's file alone (by
    exactly that change), holds no mutation list, and mending the file
    restores the sum; then a few seeds' trees made whole, as make bug makes
    them."""
    here = tree_files()
    total = summed(here)
    if any(p.startswith(LISTS) for p in here):
        sys.exit("find the bug: a bug tree would hold the mutation lists, which name its mistake")
    mistakes = read_mistakes()
    for mistake in mistakes:
        files = planted(here, mistake)
        if files is None:
            sys.exit(f"find the bug: {mistake['where']} '{mistake['title']}' cannot be planted: its find: does "
                     f"not occur exactly once in {mistake['file']}")
        if summed(files) == total:
            sys.exit(f"find the bug: {mistake['where']}: the sum does not see the mistake in {mistake['file']}")
        files[mistake["file"]] = here[mistake["file"]]
        if summed(files) != total:
            sys.exit(f"find the bug: {mistake['where']}: the mended tree's sum differs")
    check_counts(mistakes)
    trees = 0
    for layer in (None,) + LAYERS:
        if layer and not any(layer_of(m["file"]) == layer for m in mistakes):
            continue
        for seed in range(1, 4):
            files, mistake = bug_tree(str(seed), layer, here)
            changed = sorted(p for p in files if p not in (RECORD, MANIFEST) and files[p] != here.get(p))
            if changed != [mistake["file"]]:
                sys.exit(f"find the bug, seed {seed} {layer or ''}: changed {changed}, expected {mistake['file']}")
            if layer and layer_of(mistake["file"]) != layer:
                sys.exit(f"find the bug, seed {seed}: LAYER={layer} chose {mistake['file']}")
            trees += 1
    print(f"find the bug: all {len(mistakes)} mistakes plant (so every seed and layer draws one that does), "
          f"{trees} trees made whole; no mutation list in a tree")


def walk(seed="1"):
    """A student's find-the-bug, walked with this tree's build (make
    check-exercises, after check): make bug's tree of SEED written and built
    out of sight; make test there compiles nothing (so it names no file),
    fails, and does not print the mistake's file; no object of the tree's
    build has a time that differs from this tree's; the file copied back with
    its old time (cp -p, the hardest mend for make to see) and make bug-grade
    says FOUND. Skipped when this tree has no build to share."""
    if not (ROOT / "build" / "obj").is_dir():
        print("find the bug, walked: no build here to share (nothing to walk)")
        return
    failures = []

    def make(*args, cwd):
        r = subprocess.run(["make", "--no-print-directory", *args], cwd=cwd, env=exercises.make_env(), capture_output=True,
                           text=True)
        return r.returncode, r.stdout + r.stderr

    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "bug"
        files, mistake = bug_tree(seed, None)
        started = time.monotonic()
        _, shared = write_tree(files, out)
        if not build_out_of_sight(out):
            sys.exit(f"find the bug, walked: seed {seed}'s tree did not build ({mistake['where']})\n"
                     + make("tests-built", cwd=out)[1][-3000:])
        made = time.monotonic() - started
        if make("-q", "tests-built", cwd=out)[0] != 0:
            failures.append("make test would compile in the tree (and name what it compiles)")
        for compiled in (out / "build" / "obj").rglob("*"):
            mine = ROOT / compiled.relative_to(out)
            if compiled.is_file() and compiled.stat().st_nlink > 1:
                failures.append(f"{compiled.relative_to(out)}: a link, where the compiled files are not")
            if compiled.suffix in (".o", ".d") and mine.exists() and \
                    compiled.stat().st_mtime_ns != mine.stat().st_mtime_ns:
                failures.append(f"{compiled.relative_to(out)}: its time is not this tree's object's")
        started = time.monotonic()
        status, said = make("test", cwd=out)
        tested = time.monotonic() - started
        if status == 0:
            failures.append(f"make test passed with the mistake in ({mistake['where']})")
        if mistake["file"] in said:
            failures.append(f"make test printed the mistake's file, {mistake['file']}")
        shutil.copy2(ROOT / mistake["file"], out / mistake["file"])  # mended as cp -p would
        status, said = make("bug-grade", cwd=out)
        if status != 0 or "FOUND" not in said:
            failures.append("make bug-grade did not say FOUND in the mended tree:\n" + said[-3000:])
        elif "warning" in said:
            failures.append("make bug-grade warned:\n" + "\n".join(l for l in said.splitlines() if "warning" in l))
    for failure in failures[:10]:
        print(f"FAIL find the bug, walked: {failure}")
    if len(failures) > 10:
        print(f"FAIL find the bug, walked: ... and {len(failures) - 10} more")
    if failures:
        sys.exit(1)
    print(f"find the bug, walked: seed {seed}'s tree made and built in {made:.0f} s ({shared} compiled files "
          f"copied); make test compiled nothing and ran in {tested:.0f} s, failing without naming the file; "
          "mended with its old time, make bug-grade said FOUND")


def check_counts(mistakes):
    """The counts the docs give are the lists': docs/course/find-the-bug.md's
    table, a row a layer, and the README's total."""
    counts = {}
    for m in mistakes:
        counts[layer_of(m["file"])] = counts.get(layer_of(m["file"]), 0) + 1
    page = (ROOT / "docs" / "course" / "find-the-bug.md").read_text()
    said = {layer: int(n) for layer, n in re.findall(r"^\| `(\w+)` \| (\d+) \|", page, re.M)}
    if said != counts:
        sys.exit(f"find the bug: docs/course/find-the-bug.md's table says {said}; the lists have {counts}")
    readme = re.search(r"one of the (\d+) deliberate", (ROOT / "README.md").read_text())
    if not readme or int(readme.group(1)) != len(mistakes):
        sys.exit(f"find the bug: README.md says {readme.group(1) if readme else 'no'} mistakes "
                 f"('one of the N deliberate'); the lists have {len(mistakes)}")


def list_layers(layer):
    mistakes = candidates(layer)
    counts = {}
    for m in mistakes:
        counts[layer_of(m["file"])] = counts.get(layer_of(m["file"]), 0) + 1
    for name in LAYERS:
        if name in counts:
            print(f"{name:10} {counts[name]:4} mistakes")
    print(f"{'all':10} {len(mistakes):4}")
    print("\nmake bug SEED=<n> OUT=<dir> [LAYER=<layer>]   a tree with one of them in it")


def main():
    args = sys.argv[1:]
    if not args or args[0] == "list":
        list_layers(args[1] if len(args) > 1 and args[1] else None)
    elif args[0] == "tree" and len(args) in (3, 4):
        make_tree(args[1], args[2], args[3] if len(args) == 4 and args[3] else None)
    elif args[0] == "grade" and len(args) == 1:
        sys.exit(grade())
    elif args[0] == "check" and len(args) == 1:
        check()
    elif args[0] == "walk" and len(args) in (1, 2):
        walk(*args[1:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
