"""tools/lint_c.py -- the house rules a compiler does not check, on C files:

  * lines of at most 80 columns (tabs count as 8);
  * no assignment inside a condition: `if`, `while`, `do ... while`, the
    middle clause of `for`, and `?:` tests hold no `=`, `+=`, ... (compound
    assignments too; `++`/`--` are allowed). Write the assignment on its
    own line.

    lint_c.py FILE...     prints FILE:LINE: rule: text, exits 1 on any.

Comments, strings and character literals are blanked first (lengths kept),
so their contents never count. Standard library only.
"""
import re
import sys

COLUMNS = 80
ASSIGN = re.compile(r"(?<![=!<>+\-*/%&|^])(?:[+\-*/%&|^]|<<|>>)?=(?!=)")


def blank(text):
    """text with comments, strings and char literals replaced by spaces
    (newlines kept), so offsets and line numbers stay."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
        elif c == "#" and (i == 0 or text[i - 1] == "\n"):
            # Preprocessor lines (with continuations) are not code here.
            j = i
            while True:
                k = text.find("\n", j)
                if k < 0:
                    k = n
                    break
                if text[k - 1] != "\\":
                    break
                j = k + 1
            out.append(re.sub(r"[^\n]", " ", text[i:k]))
            i = k
        else:
            out.append(c)
            i += 1
    return "".join(out)


def closing(code, i):
    """Index of the ')' matching the '(' at code[i]."""
    depth = 0
    for j in range(i, len(code)):
        if code[j] == "(":
            depth += 1
        elif code[j] == ")":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


def conditions(code):
    """(offset, text) of every condition in blanked code."""
    for m in re.finditer(r"\b(if|while|for)\s*\(", code):
        start = m.end() - 1
        end = closing(code, start)
        inner = code[start + 1:end]
        if m.group(1) == "for":
            parts = inner.split(";")
            if len(parts) == 3:
                off = start + 1 + len(parts[0]) + 1
                yield off, parts[1]
            continue
        yield start + 1, inner
    # The test of a ?: : from the last '(' , '=' , ',' or 'return' before
    # the '?' (a rough but conservative cut).
    for m in re.finditer(r"\?", code):
        j = m.start() - 1
        depth = 0
        while j >= 0:
            c = code[j]
            if c == ")":
                depth += 1
            elif c == "(":
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0 and c in ";,{}":
                break
            elif depth == 0 and c == "=" and code[j - 1:j + 1] not in (
                    "==", "!=", "<=", ">=") and code[j + 1] != "=":
                break
            j -= 1
        yield j + 1, code[j + 1:m.start()]


def check(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    bad = []
    for no, line in enumerate(text.split("\n"), 1):
        width = len(line.expandtabs(8))
        if width > COLUMNS:
            bad.append((no, "columns", "%d > %d" % (width, COLUMNS)))
    code = blank(text)
    for off, cond in conditions(code):
        m = ASSIGN.search(cond)
        if m:
            no = code.count("\n", 0, off + m.start()) + 1
            line = text.split("\n")[no - 1].strip()
            bad.append((no, "assignment in condition", line))
    return bad


def main(paths):
    total = 0
    for p in paths:
        for no, rule, what in sorted(check(p)):
            print("%s:%d: %s: %s" % (p, no, rule, what))
            total += 1
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
