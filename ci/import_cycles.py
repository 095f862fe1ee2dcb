#!/usr/bin/env python3
"""Import circles among the files of one folder (issue 41: "no import circle inside a folder").

A Rust module is a file (`a.rs`) or a folder (`a/mod.rs`). For every folder under each
crate's `src/`, this draws an edge from one sibling module to another when the first
names the second (`super::b`, `crate::models::hpc::b`, `self::b` in `mod.rs`), and prints
each strongly connected set of two or more siblings. Test modules (`tests.rs`, `*_tests.rs`
and `#[cfg(test)] mod tests` blocks) are left out: a test may read any of its folder.
Comments are left out: a doc link (``[`super::b`]``) names a module without depending on
it. `mod.rs` is left out too: it only declares its children and re-exports their items
(checked here: any other item in a `mod.rs` is an error), so it names them all and
depends on nothing of its own. A child naming a re-exported item (`super::LdaParams`,
`pub use params::LdaParams` in `mod.rs`) is counted as naming the sibling that defines it.

    python3 ci/import_cycles.py [--max N]    exit 1 when there are more than N circles

CI runs it with `--max` at the number of circles left, so no new one comes in while the
existing ones are taken apart (ARCHITECTURE.md, "Crates").
"""
import os
import re
import sys

ROOTS = ["src", "crates/topicd-core/src", "crates/topicd-store/src"]


def strip_tests(text):
    """Drop `#[cfg(test)] mod tests { ... }` blocks (brace-matched)."""
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(pub(\([a-z]+\))?\s+)?mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def strip_comments(text):
    """Drop comment lines (doc comments included): a doc link names a module without
    depending on it, and the compiler builds nothing from it."""
    return re.sub(r"(?m)^\s*//.*$", "", text)


def module_path(root, folder):
    rel = os.path.relpath(folder, root)
    return [] if rel == "." else rel.split(os.sep)


def siblings(folder):
    mods = {}
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if name.endswith(".rs") and name not in ("mod.rs", "lib.rs", "main.rs"):
            stem = name[:-3]
            if stem == "tests" or stem.endswith("_tests"):
                continue
            mods[stem] = [path]
        elif os.path.isdir(path):
            files = []
            for d, _, fs in os.walk(path):
                files += [os.path.join(d, f) for f in fs if f.endswith(".rs") and f != "tests.rs" and not f[:-3].endswith("_tests")]
            mods[name] = files
    return mods


def reexports(folder):
    """Names `mod.rs` (or `lib.rs`) re-exports from a child: {name: child}."""
    out = {}
    for top in ("mod.rs", "lib.rs"):
        path = os.path.join(folder, top)
        if not os.path.exists(path):
            continue
        text = strip_comments(open(path, encoding="utf-8").read())
        for m in re.finditer(r"(?m)^\s*pub(?:\([a-z]+\))?\s+use\s+(?:self::)?(\w+)::(\{[^;]*\}|[\w:]+)\s*;", text):
            child, names = m.group(1), m.group(2)
            for name in re.findall(r"(\w+)(?:\s+as\s+(\w+))?", names.strip("{}")):
                last = name[1] or name[0].split("::")[-1]
                out[last] = child
            if not names.startswith("{"):
                out[names.split("::")[-1]] = child
    return out


# `mod.rs` holds declarations, re-exports, attributes and comments only.
ALLOWED_IN_MOD_RS = re.compile(r"^\s*(//.*|#!?\[.*\]|(pub(\([a-z]+\))?\s+)?(mod\s+\w+|use\s+[^;]+);|)\s*$")


def mod_rs_items(here):
    """`mod.rs` files that define items (their first such line each)."""
    bad = []
    for r in ROOTS:
        for folder, _, files in os.walk(os.path.join(here, r)):
            if "mod.rs" not in files:
                continue
            path = os.path.join(folder, "mod.rs")
            rel = os.path.relpath(path, here)
            text = re.sub(r"(?s)use\s+[^;]*;", lambda m: m.group(0).replace("\n", " "), open(path, encoding="utf-8").read())
            for n, line in enumerate(text.split("\n"), 1):
                if not ALLOWED_IN_MOD_RS.match(line):
                    bad.append(f"{rel}: `{line.strip()}`: a mod.rs only declares and re-exports (move it to a file of its own)")
                    break
    return bad


def edges(root, folder, mods):
    prefix = "::".join(["crate"] + module_path(root, folder))
    graph = {m: set() for m in mods}
    names = reexports(folder)
    for m, files in mods.items():
        for f in files:
            text = strip_comments(strip_tests(open(f, encoding="utf-8").read()))
            # Names reachable as siblings: `super::x` from a direct child file; from a
            # file deeper inside a folder module, `super::super::x`; and absolute paths.
            depth = os.path.relpath(f, folder).count(os.sep)
            sup = "super::" * (depth + 1)
            for other in mods:
                if other == m:
                    continue
                pats = [re.escape(prefix + "::" + other) + r"\b", r"(?<![:\w])" + re.escape(sup + other) + r"\b"]
                # `use super::{a, b}` groups
                for g in re.finditer(r"(?<![:\w])" + re.escape(sup) + r"\{([^}]*)\}", text):
                    if re.search(r"(?<![:\w])" + re.escape(other) + r"\b", g.group(1)):
                        graph[m].add(other)
                for g in re.finditer(re.escape(prefix) + r"::\{([^}]*)\}", text):
                    if re.search(r"(?<![:\w])" + re.escape(other) + r"\b", g.group(1)):
                        graph[m].add(other)
                if any(re.search(p, text) for p in pats):
                    graph[m].add(other)
            # Re-exported items: `super::Item`, `use super::{Item, ..}`, `crate::path::Item`.
            for name, child in names.items():
                if child == m or child not in mods:
                    continue
                if re.search(r"(?<![:\w])" + re.escape(sup) + r"(\{[^}]*\b" + re.escape(name) + r"\b[^}]*\}|" + re.escape(name) + r"\b)", text) or re.search(
                    re.escape(prefix) + r"::(\{[^}]*\b" + re.escape(name) + r"\b[^}]*\}|" + re.escape(name) + r"\b)", text
                ):
                    graph[m].add(child)
    return graph


def sccs(graph):
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = 0
    for r in ROOTS:
        root = os.path.join(here, r)
        if not os.path.isdir(root):
            continue
        for folder, _, _ in os.walk(root):
            mods = siblings(folder)
            for comp in sccs(edges(root, folder, mods)):
                found += 1
                print(f"{os.path.relpath(folder, here)}: {', '.join(comp)}")
    print(f"{found} import circle(s) inside folders")
    bad = mod_rs_items(here)
    for line in bad:
        print(line)
    if bad:
        return 1
    limit = int(sys.argv[sys.argv.index("--max") + 1]) if "--max" in sys.argv else 0
    if found > limit:
        print(f"more than the {limit} allowed: take the new circle apart (one direction: params, state, chain, fit, model)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
