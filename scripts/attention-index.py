"""Rewrites the status columns of docs/attention/README.md from the tree, with
the rules tests/test_attention_index.cpp checks:

  implemented  attention/ has `return "id";` (a module's id()) or a function id(...)
  tested       tests/ registers it in the catalog registry: RegisterEntry x(N, "id", ...)
  documented   the id appears as a word in a docs/attention/ page other than README.md
               (the page column links the page that names it most)
  example      the id appears as a word in examples/

Run it from the repository root after adding a mechanism: python3 scripts/attention-index.py
"""
import pathlib
import re

root = pathlib.Path(".")
index = root / "docs/attention/README.md"


def corpus(folder, exts, skip=None):
    out = {}
    base = root / folder
    if not base.exists():
        return out
    for p in sorted(base.rglob("*")):
        if p.is_file() and p.suffix in exts and p != skip:
            out[p] = p.read_text(errors="replace")
    return out


def word(id_, text, then=None):
    tail = re.escape(then) if then else r"(?![a-z0-9_])"
    return re.search(r"(?<![a-z0-9_])" + re.escape(id_) + tail, text) is not None


code = "\n".join(corpus("attention", {".hpp", ".cpp"}).values())
tests = "\n".join(corpus("tests", {".hpp", ".cpp"}).values())
docs = corpus("docs/attention", {".md"}, skip=index)
examples = "\n".join(corpus("examples", {".hpp", ".cpp"}).values())

lines = index.read_text().splitlines()
for k, line in enumerate(lines):
    m = re.match(r"^\| (\d+) \| `([a-z0-9_]+)` \| ([^|]+) \| ([^|]*) \|", line)
    if not m:
        continue
    n, id_, group, paper = m.groups()
    yes = lambda b: "yes" if b else "no"
    implemented = f'return "{id_}";' in code or word(id_, code, "(")
    # The page that names it most often is its own page.
    pages = sorted((p for p, text in docs.items() if word(id_, text)),
                   key=lambda p: -len(re.findall(r"(?<![a-z0-9_])" + id_ + r"(?![a-z0-9_])", docs[p])))
    page = f"[{pages[0].stem}]({pages[0].name})" if pages else ""
    registered = f'({n}, "{id_}"' in tests
    lines[k] = (f"| {n} | `{id_}` | {group.strip()} | {paper.strip()} | {yes(implemented)} | "
                f"{yes(registered)} | {yes(bool(pages))} | {yes(word(id_, examples))} | {page} |")
index.write_text("\n".join(lines) + "\n")
