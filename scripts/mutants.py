"""Small mistakes made automatically in C++ code: one change at a time, the
operators of mutation testing (after Offutt et al.'s sufficient set and
PIT's defaults), on the lines of a block of code. scripts/exercises.py uses
them to prove each exercise's grader against mistakes nobody wrote down
(make check-exercises), and to grade a capstone's tests (exercise 7.2).

    python3 scripts/mutants.py FILE 'OPENING LINE'    the mutants of one block, a line each

Each mutant is (line number, what changed, the new line). The operators:

    arithmetic     a + b ↔ a − b, a * b ↔ a / b, a % b → a / b
    relational     < ↔ <=, > ↔ >=, == ↔ !=
    logical        && ↔ ||, !x → x
    assignment     += → -=, += → = (overwrite instead of add), -= → +=, *= ↔ /=
    step           ++ ↔ --
    constant       an integer k → k + 1 and k − 1, a decimal x → 2x, true ↔ false
    index          a[i] → a[i + 1] and a[i − 1]
    condition      if (c) → if (true) and if (false)
    call           a library op for its neighbour (add ↔ sub, tanh ↔ sigmoid,
                   sum ↔ mean, std::min ↔ std::max, ...), a unary op dropped,
                   two neighbouring arguments swapped
    gradient       bw.accumulate(i, g) → bw.grad_buffer(i) = g (overwrites
                   what another consumer handed in)
    statement      a statement that is not a declaration, dropped

Lines that compute nothing a check could see are left alone: comments,
preprocessor lines, and the parts of a statement inside string literals (an
error's message). A mutant that does not compile is the builder's to leave
out (scripts/exercises.py counts it as "does not compile").
"""
import re
import sys

# ---- reading a line of C++ ------------------------------------------------------------------


def split_comment(line):
    """(code, comment) of a line: the comment starts at a // outside a string."""
    i, quote = 0, None
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif line.startswith("//", i):
            return line[:i], line[i:]
        i += 1
    return line, ""


def literal_mask(code):
    """The code with the inside of every string and character literal
    replaced by '_' (same length): what the operators may match."""
    out, i, quote = list(code), 0, None
    while i < len(code):
        c = code[i]
        if quote:
            if c == "\\":
                out[i] = "_"
                if i + 1 < len(code):
                    out[i + 1] = "_"
                i += 2
                continue
            if c == quote:
                quote = None
            else:
                out[i] = "_"
        elif c in "\"'":
            quote = c
        i += 1
    return "".join(out)


def matching(code, open_at, pairs={"(": ")", "[": "]"}):
    """The index of the bracket closing the one at open_at, or -1."""
    opening, depth = code[open_at], 0
    closing = pairs[opening]
    for i in range(open_at, len(code)):
        if code[i] == opening:
            depth += 1
        elif code[i] == closing:
            depth -= 1
            if depth == 0:
                return i
    return -1


def top_level_commas(code, open_at, close_at):
    """The indices of the commas at the top level of the bracket pair."""
    commas, depth = [], 0
    for i in range(open_at + 1, close_at):
        c = code[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            commas.append(i)
        elif c == "<" and depth == 0 and re.search(r"\w$", code[:i]) and re.match(r"<\w", code[i:]):
            depth += 0  # a template argument list: its commas are rare in this code
    return commas


# ---- the operators ----------------------------------------------------------------------------
SWAPPED_CALLS = {
    "add": "sub", "sub": "add", "mul": "div", "div": "mul", "tanh": "sigmoid", "sigmoid": "tanh",
    "sum": "mean", "mean": "sum", "exp": "square", "square": "abs", "maximum": "minimum", "minimum": "maximum",
    "std::min": "std::max", "std::max": "std::min", "softmax": "log_softmax", "relu": "tanh",
    "_mm256_fmadd_ps": "_mm256_fmsub_ps", "_mm256_mul_ps": "_mm256_add_ps",
}
UNARY_CALLS = ("tanh", "sigmoid", "relu", "exp", "log", "square", "sqrt", "abs", "neg", "softplus", "std::sqrt",
               "std::abs", "std::exp")
ARITHMETIC = {" + ": [" - "], " - ": [" + "], " * ": [" / "], " / ": [" * "], " % ": [" / "]}
RELATIONAL = {" < ": [" <= "], " <= ": [" < "], " > ": [" >= "], " >= ": [" > "], " == ": [" != "], " != ": [" == "]}
LOGICAL = {" && ": [" || "], " || ": [" && "]}
ASSIGNING = {" += ": [" -= ", " = "], " -= ": [" += "], " *= ": [" /= "], " /= ": [" *= "]}


def replace_at(code, start, end, new):
    return code[:start] + new + code[end:]


def operator_mutants(code, masked):
    for table, kind in ((ARITHMETIC, "arithmetic"), (RELATIONAL, "relational"), (LOGICAL, "logical"),
                        (ASSIGNING, "assignment")):
        for op, others in table.items():
            for m in re.finditer(re.escape(op), masked):
                # a - b that is really `x = -y` or `x, -y`: not a binary operator
                if op == " - " and re.search(r"[=(,?:]\s*$", masked[:m.start()]):
                    continue
                # `a < b` inside a template argument list never has spaces here; `*` of a
                # declaration (`real* p`) has none either.
                for other in others:
                    yield kind, f"{op.strip()} → {other.strip()}", replace_at(code, m.start(), m.end(), other)


def step_mutants(code, masked):
    for m in re.finditer(r"\+\+|--", masked):
        other = "--" if m.group(0) == "++" else "++"
        yield "step", f"{m.group(0)} → {other}", replace_at(code, m.start(), m.end(), other)


def constant_mutants(code, masked):
    for m in re.finditer(r"(?<![\w.])(\d+\.\d*(?:e-?\d+)?|\d*\.\d+(?:e-?\d+)?|\d+)(f?)(?![\w.])", masked):
        text, suffix = m.group(1), m.group(2)
        if "." in text or "e" in text:
            value = float(text)
            if value == 0:
                continue
            new = repr(2 * value)
            yield "constant", f"{text}{suffix} → {new}{suffix}", replace_at(code, m.start(), m.end(), new + suffix)
        else:
            value = int(text)
            for new in ([value + 1, value - 1] if value > 0 else [1]):
                yield "constant", f"{text} → {new}", replace_at(code, m.start(), m.end(), str(new) + suffix)
    for m in re.finditer(r"\b(true|false)\b", masked):
        other = "false" if m.group(1) == "true" else "true"
        yield "constant", f"{m.group(1)} → {other}", replace_at(code, m.start(), m.end(), other)


def index_mutants(code, masked):
    for m in re.finditer(r"(?<=[\w\])])\[", masked):
        close = matching(masked, m.start())
        inner = code[m.start() + 1:close]
        if close < 0 or not inner.strip() or re.fullmatch(r"\s*\d+\s*", inner):
            continue  # a literal index: the constant operator moves it
        if re.search(r"\b(new|delete)\b", code[:m.start()]) or masked[m.start() - 1] == "]" and "=" in inner:
            continue
        for sign in ("+", "-"):
            yield "index", f"[{inner}] → [{inner} {sign} 1]", replace_at(code, m.start() + 1, close,
                                                                         f"{inner} {sign} 1")


def condition_mutants(code, masked):
    for m in re.finditer(r"\b(if|while) \(", masked):
        open_at = m.end() - 1
        close = matching(masked, open_at)
        if close < 0:
            continue
        condition = code[open_at + 1:close]
        if m.group(1) == "while":
            continue  # `while (true)` never ends: the relational operators reach its condition
        for value in ("true", "false"):
            yield "condition", f"if ({condition}) → if ({value})", replace_at(code, open_at + 1, close, value)
    for m in re.finditer(r"(?<![\w!=])!(?=[\w(])", masked):
        yield "logical", "!x → x", replace_at(code, m.start(), m.end(), "")


def call_mutants(code, masked):
    for m in re.finditer(r"(?<![\w.:>])((?:std::)?\w+)\(", masked):
        name, open_at = m.group(1), m.end() - 1
        close = matching(masked, open_at)
        if close < 0:
            continue
        if name in SWAPPED_CALLS:
            other = SWAPPED_CALLS[name]
            yield "call", f"{name}( → {other}(", replace_at(code, m.start(), m.start() + len(name), other)
        commas = top_level_commas(masked, open_at, close)
        if name in UNARY_CALLS and not commas:
            yield "call", f"{name}(x) → (x)", replace_at(code, m.start(), m.start() + len(name), "")
        if name in ("if", "while", "for", "switch", "return", "static_cast", "sizeof") or name.startswith("check"):
            continue
        # two neighbouring arguments swapped, where both are short (a name, a member, a flag)
        bounds = [open_at] + commas + [close]
        args = [code[bounds[k] + 1:bounds[k + 1]] for k in range(len(bounds) - 1)]
        simple = re.compile(r"\s*!?[\w.]+(\(\))?\s*")
        for k in range(len(args) - 1):
            a, b = args[k], args[k + 1]
            if simple.fullmatch(a) and simple.fullmatch(b) and a.strip() != b.strip():
                # a number and a name, or the backward's handle: of different types, never compiles
                if re.fullmatch(r"\s*\d+\s*", a) or re.fullmatch(r"\s*\d+\s*", b) or "bw" in (a.strip(), b.strip()):
                    continue
                new = code[:bounds[k] + 1] + (" " if a.startswith(" ") else "") + b.strip() + "," + \
                    (" " if b.startswith(" ") else "") + a.strip() + code[bounds[k + 2]:]
                yield "call", f"{name}'s arguments {a.strip()} and {b.strip()} swapped", new


def gradient_mutants(code, masked):
    for m in re.finditer(r"\bbw\.accumulate\((\d+), ", masked):
        close = matching(masked, m.end() - len(m.group(0)) + len("bw.accumulate"))
        if close < 0:
            continue
        value = code[m.end():close]
        yield "gradient", "bw.accumulate(i, g) → bw.grad_buffer(i) = g (overwrites)", \
            code[:m.start()] + f"bw.grad_buffer({m.group(1)}) = {value}" + code[close + 1:]


DECLARATION = re.compile(r"\s*(const |static |constexpr |auto |typename )*[\w:<>,*& ]*[\w>*&] [*&]?\w+( = |\{|\(|;| =$)")


def statement_mutants(code, masked, starts_statement=True):
    stripped = code.strip()
    if not starts_statement:
        return  # the rest of a statement begun on an earlier line
    if not stripped.endswith(";") or stripped.startswith(("return", "}", "throw", "break", "continue")):
        return
    if DECLARATION.match(code) and not re.match(r"\s*[\w.\[\]>-]+(\(|\s*[-+*/]?=)", code):
        return
    if re.match(r"\s*(if|for|while) ", code):
        return  # a one-line if or for: its statement is not the line
    yield "statement", "the statement dropped", re.match(r"\s*", code).group(0) + "(void)0;  // " + stripped


OPERATORS = (operator_mutants, step_mutants, constant_mutants, index_mutants, condition_mutants, call_mutants,
             gradient_mutants, statement_mutants)


def line_mutants(code, starts_statement=True):
    """(kind, what, new code) for each one-place change of a line of code (no
    comment); starts_statement: whether a statement begins on this line."""
    masked = literal_mask(code)
    seen = set()
    for operator in OPERATORS:
        changes = operator(code, masked, starts_statement) if operator is statement_mutants else operator(code, masked)
        for kind, what, new in changes:
            if new != code and new not in seen:
                seen.add(new)
                yield kind, what, new


# ---- a block of code ----------------------------------------------------------------------------
def statement_has_string(lines, k):
    """Whether the statement line k belongs to holds a string literal or a
    throw: an error being built, whose words the operators leave alone."""
    start = k
    while start > 0 and not re.search(r"[;{}]\s*$", split_comment(lines[start - 1])[0]):
        start -= 1
    end = k
    while end < len(lines) - 1 and not re.search(r"[;{}]\s*$", split_comment(lines[end])[0]):
        end += 1
    statement = "\n".join(split_comment(l)[0] for l in lines[start:end + 1])
    return '"' in statement or re.search(r"\bthrow\b", statement)


def block_mutants(text, start, end):
    """[(line number, kind, what, new text)] for the body text[start:end] of
    a block in a file's text; line numbers count from 1 in the file."""
    first_line = text.count("\n", 0, start) + 1
    lines = text[start:end].split("\n")
    found, offset = [], start
    for k, line in enumerate(lines):
        code, comment = split_comment(line)
        skip = not code.strip() or code.lstrip().startswith("#") or code.strip().startswith("asm")
        if not skip and statement_has_string(lines, k):
            # an error being built: only the condition of `if (...) throw` is mutated
            m = re.match(r"\s*(?:else )?if \(", code)
            close = matching(literal_mask(code), m.end() - 1) if m else -1
            skip = close < 0
            if not skip:
                code = code[:close + 1]
        if not skip:
            rest = line[len(code):]
            before = next((split_comment(l)[0].strip() for l in reversed(lines[:k]) if split_comment(l)[0].strip()), "{")
            starts = bool(re.search(r"[;{}]$|^(if|for|while|else)\b.*\)$|^else$", before))
            for kind, what, new in line_mutants(code, starts):
                mutated = text[:offset] + new + rest + text[offset + len(line):]
                found.append((first_line + k, kind, what, mutated))
        offset += len(line) + 1
    return found


def main():
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
    import exercises
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path = exercises.ROOT / sys.argv[1]
    text = path.read_text()
    start, end = exercises.block_span(text, sys.argv[2], sys.argv[1])
    for number, kind, what, mutated in block_mutants(text, start, end):
        print(f"{sys.argv[1]}:{number}: {kind}: {what}: {mutated.split(chr(10))[number - 1].strip()}")


if __name__ == "__main__":
    main()
