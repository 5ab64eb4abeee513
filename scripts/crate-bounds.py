#!/usr/bin/env python3
"""Crate bounds (issue 22): production Rust lines per crate and import
circles between the files of a crate.

Production lines: every line of `src/**/*.rs` of each crate (crates/* and
python/), minus test code: a `#[cfg(test)]` module written inline (from
the attribute to the `}` that closes it at the module's indentation) and
a file that is only a `#[cfg(test)] mod name;`. Blank and comment lines
count (they are what `wc -l` counts).

Imports: file A imports file B when A's production code names a path into
B (`crate::b::...`, `super::b::...`, `self::b::...`, or an item of the
crate root, `crate::Item`, for lib.rs), or a child module by its bare
name (`b::...`); `mod b;` declarations and the crate root's `pub use`
re-exports are not imports. A circle is a strongly connected set of two or more files.

    scripts/crate-bounds.py [--max-share PERCENT] [--crates a,b]

Prints the table and every circle; exits 1 if a crate holds more than
--max-share percent of the lines or a circle is found in the crates named
by --crates (default: every crate).
"""
import argparse
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def crate_dirs():
    out = []
    for name in sorted(os.listdir(os.path.join(ROOT, "crates"))):
        d = os.path.join(ROOT, "crates", name)
        if os.path.isdir(os.path.join(d, "src")):
            out.append((name, d))
    if os.path.isdir(os.path.join(ROOT, "python", "src")):
        out.append(("python", os.path.join(ROOT, "python")))
    return out


def rust_files(crate):
    src = os.path.join(crate, "src")
    for dirpath, _, files in os.walk(src):
        for f in sorted(files):
            if f.endswith(".rs"):
                yield os.path.join(dirpath, f)


def module_path(src, path):
    """src/a/b.rs -> ["a", "b"]; src/a/mod.rs -> ["a"]; lib.rs/main.rs -> []."""
    rel = os.path.relpath(path, src)[: -len(".rs")].split(os.sep)
    if rel[-1] == "mod":
        rel = rel[:-1]
    if rel in (["lib"], ["main"]):
        rel = []
    return tuple(rel)


def production_lines(text):
    """The file's lines without its inline `#[cfg(test)] mod x { ... }` blocks;
    also the names of `#[cfg(test)] mod x;` file modules."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    keep, test_mods = [], []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() == "#[cfg(test)]" and i + 1 < len(lines):
            nxt = lines[i + 1]
            m = re.match(r"^(\s*)(pub(\([^)]*\))?\s+)?mod\s+(\w+)\s*(;|\{)", nxt)
            if m:
                indent, name, end = m.group(1), m.group(4), m.group(5)
                if end == ";":
                    test_mods.append(name)
                    i += 2
                    continue
                j = i + 2
                while j < len(lines) and lines[j] != indent + "}":
                    j += 1
                i = j + 1
                continue
        keep.append(line)
        i += 1
    return keep, test_mods


def strip_comments(line):
    return re.sub(r"//.*$", "", line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-share", type=float, default=None)
    ap.add_argument("--crates", default=None)
    args = ap.parse_args()

    table, circles_by_crate = [], {}
    for name, crate in crate_dirs():
        src = os.path.join(crate, "src")
        files = {}
        test_files = set()
        for path in rust_files(crate):
            with open(path, encoding="utf-8") as f:
                keep, test_mods = production_lines(f.read())
            mp = module_path(src, path)
            files[mp] = (path, keep)
            for t in test_mods:
                test_files.add(mp + (t,))
        for t in test_files:
            files.pop(t, None)
        total = sum(len(k) for _, k in files.values())
        table.append((name, total))

        # Import edges between files of this crate.
        mods = set(files)
        edges = {m: set() for m in mods}
        for mp, (_, keep) in files.items():
            for line in keep:
                line = strip_comments(line)
                if mp == () and re.match(r"^\s*pub use ", line):
                    continue  # the root's re-exports are the crate's interface
                for m in re.finditer(r"\b(crate|super|self)((?:::\w+)+)", line):
                    head, rest = m.group(1), m.group(2).split("::")[1:]
                    if head == "crate":
                        base = ()
                    elif head == "self":
                        # in a mod.rs / lib.rs, self:: is the module itself
                        base = mp
                    else:
                        base = mp[:-1]
                    target = None
                    for k in range(len(rest), -1, -1):
                        cand = base + tuple(rest[:k])
                        if cand in mods:
                            target = cand
                            break
                    if target is not None and target != mp:
                        edges[mp].add(target)
                # a child module named without a prefix (`child::item`)
                for m in re.finditer(r"(?<![:\w])(\w+)::", line):
                    if m.group(1) in ("crate", "super", "self"):
                        continue
                    child = mp + (m.group(1),)
                    if child in mods:
                        edges[mp].add(child)
        circles_by_crate[name] = [c for c in sccs(edges) if len(c) > 1]

    grand = sum(n for _, n in table)
    print(f"{'crate':<12} {'lines':>7} {'share':>6}")
    over = []
    for name, n in sorted(table, key=lambda t: -t[1]):
        share = 100.0 * n / grand if grand else 0.0
        print(f"{name:<12} {n:>7} {share:>5.1f}%")
        if args.max_share is not None and share > args.max_share:
            over.append(name)
    print(f"{'total':<12} {grand:>7}")
    checked = set(args.crates.split(",")) if args.crates else set(circles_by_crate)
    bad = False
    for name, circles in sorted(circles_by_crate.items()):
        for c in circles:
            names = ", ".join(sorted("/".join(m) or "lib" for m in c))
            print(f"circle in {name}: {names}")
            bad |= name in checked
    if over:
        print(f"over {args.max_share}%: {', '.join(over)}")
    sys.exit(1 if over or bad else 0)


def sccs(edges):
    """Tarjan's strongly connected components."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
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
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


if __name__ == "__main__":
    main()
