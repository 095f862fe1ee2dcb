#!/usr/bin/env python3
"""Functions longer than the project allows (default 80 lines).

Why it exists: the project's rule is that no orchestration function is longer than
80 lines. A function that runs a sequence of steps (validate, prune, renumber,
assemble, ...) reads best as that sequence, each step a small function named after
what it does; past a screen and a half the steps blur and a change to one is reviewed
as a change to all. Numerical kernels are the exception: an inner loop over tokens or
cells may be long because splitting it would cost speed (a call the optimiser does not
inline, state passed back and forth, a vectorised loop broken up). Such a function
says so with the marker `kernel:` in its doc comment or in a comment on the line just
above it, with the reason:

    // kernel: splitting would cost speed (inner loop over tokens)
    fn sample_document(...) { ... }

and is then listed as exempt instead of failing.

What it reads: every `.rs` file under `src/` and `crates/*/src/`, except test modules
(files named `tests.rs`, `*tests.rs`, `*checks.rs`, and `#[cfg(test)]` items such as
`#[cfg(test)] mod tests { ... }`, found by brace matching). A function's length is
counted from the line of its `fn` to the line of its closing brace, both included; the
braces are matched after string, char and byte literals (raw ones too) and comments
are blanked out, so a `{` in a message or a comment does not count. Declarations
without a body (`fn f();` in a trait) are skipped; a function nested in another is
measured on its own and also counts towards the outer one.

    python3 ci/long_functions.py [--max N] [--list]

prints `path:line fn_name length` for each function over N lines (default 80), then
the exempt ones, and exits 1 when a function that is not exempt is over the limit.
`--list` prints the same and exits 0 (to survey, not to gate).
"""
import argparse
import glob
import os
import re
import sys

MARKER = "kernel:"


def roots(here):
    """The source folders scanned: the root crate's `src/` and every crate's."""
    return [os.path.join(here, "src")] + sorted(glob.glob(os.path.join(here, "crates", "*", "src")))


def is_test_file(name):
    """Files that hold only tests, by the project's naming (`tests.rs`, `*_tests.rs`,
    `*_checks.rs`, `ranked/checks.rs`)."""
    return name.endswith("tests.rs") or name.endswith("checks.rs")


RAW_STRING = re.compile(r'b?r(#*)"')


def mask(text):
    """`text` with the insides of comments and string, char and byte literals replaced
    by spaces (newlines kept, so line numbers and columns stay), for brace matching and
    for finding `fn` outside literals."""
    out = list(text)
    n, i = len(text), 0

    def blank(a, b):
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif c == "/" and text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif c in "rb" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            # A raw string (r"..", r#".."#, br".."); a plain byte string or byte char
            # (b"..", b'x') is left to the branches below, from its quote.
            m = RAW_STRING.match(text, i)
            if m:
                close = text.find('"' + m.group(1), m.end())
                close = n if close < 0 else close
                blank(m.end(), close)
                i = close + 1 + len(m.group(1))
            else:
                i += 1
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, j)
            i = j + 1
        elif c == "'":
            # A char literal ('x', '\n', '\u{7b}', '{'), else a lifetime or label ('a).
            if i + 1 < n and text[i + 1] == "\\":
                j = i + 3  # past the backslash and the escaped character ('\'')
                while j < n and text[j] != "'":
                    j += 1
                blank(i + 1, j)
                i = j + 1
            elif i + 2 < n and text[i + 2] == "'":
                blank(i + 1, i + 2)
                i += 3
            else:
                i += 1
        else:
            i += 1
    return "".join(out)


def item_end(masked, start):
    """End offset of the item starting at `start`: after its matching `}` when a `{`
    comes before a `;` (outside parentheses and brackets), else after the `;`."""
    depth, j, n = 0, start, len(masked)
    while j < n:
        c = masked[j]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == ";" and depth == 0:
            return j + 1
        elif c == "{" and depth == 0:
            braces = 0
            while j < n:
                braces += {"{": 1, "}": -1}.get(masked[j], 0)
                j += 1
                if braces == 0:
                    return j
            return n
        j += 1
    return n


TEST_ITEM = re.compile(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*")


def blank_test_items(masked):
    """`masked` with every `#[cfg(test)]` item (a `mod tests { ... }` block, a test-only
    function or impl) blanked out, newlines kept."""
    out = list(masked)
    for m in TEST_ITEM.finditer(masked):
        if out[m.start()] == " ":  # inside an item already blanked
            continue
        for k in range(m.start(), item_end(masked, m.end())):
            if out[k] != "\n":
                out[k] = " "
    return "".join(out)


def test_module_files(path, text):
    """Files a `#[cfg(test)] #[path = "x.rs"] mod m;` pulls in, which hold tests
    whatever their name."""
    folder = os.path.dirname(path)
    found = set()
    for m in re.finditer(r'#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*?#\[path\s*=\s*"([^"]+)"\]', text):
        found.add(os.path.normpath(os.path.join(folder, m.group(1))))
    return found


FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")


def is_exempt(lines, fn_line):
    """Whether the comments and attributes just above the `fn` on line `fn_line`
    (0-based), its doc comment included, carry the marker `kernel:`."""
    k = fn_line - 1
    while k >= 0:
        s = lines[k].strip()
        if s.startswith("//") and not s.startswith("//!"):
            if MARKER in s:
                return True
        elif not s.startswith("#["):
            return False
        k -= 1
    return False


def functions(path):
    """`(line, name, length)` of each function with a body in `path`, tests left out."""
    text = open(path, encoding="utf-8").read()
    masked = blank_test_items(mask(text))
    starts = [0] + [m.end() for m in re.finditer("\n", masked)]

    def line_of(offset):
        lo, hi = 0, len(starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo

    out = []
    for m in FN.finditer(masked):
        end = item_end(masked, m.end())
        if masked[end - 1] != "}":
            continue
        first, last = line_of(m.start()), line_of(end - 1)
        out.append((first, m.group(1), last - first + 1))
    return text.split("\n"), out


def scan(here, limit):
    """Functions over `limit` lines, split into `(failing, exempt)` lists of
    `(path, line, name, length)`."""
    files, skipped = [], set()
    for root in roots(here):
        for folder, _, names in os.walk(root):
            for name in sorted(names):
                if name.endswith(".rs") and not is_test_file(name):
                    path = os.path.join(folder, name)
                    files.append(path)
                    skipped |= test_module_files(path, open(path, encoding="utf-8").read())
    failing, exempt = [], []
    for path in sorted(files):
        if os.path.normpath(path) in skipped:
            continue
        lines, fns = functions(path)
        for line, name, length in fns:
            if length > limit:
                entry = (os.path.relpath(path, here), line + 1, name, length)
                (exempt if is_exempt(lines, line) else failing).append(entry)
    return failing, exempt


def main():
    parser = argparse.ArgumentParser(description="Functions longer than the project allows (see the module docstring).")
    parser.add_argument("--max", type=int, default=80, help="longest function allowed, in lines (default 80)")
    parser.add_argument("--list", action="store_true", help="print the functions over the limit and exit 0")
    args = parser.parse_args()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    failing, exempt = scan(here, args.max)
    for path, line, name, length in failing:
        print(f"{path}:{line} {name} {length}")
    print(f"{len(failing)} function(s) over {args.max} lines")
    if exempt:
        print(f"exempt ({MARKER} marked):")
        for path, line, name, length in exempt:
            print(f"{path}:{line} {name} {length}")
    print(f"{len(exempt)} exempt function(s) over {args.max} lines")
    if failing and not args.list:
        print(f"split each into steps of at most {args.max} lines, or mark a numerical kernel with `// {MARKER} <why>` above it")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
