#!/usr/bin/env python3
"""Check the compiler's layering from its object files.

  check_layers.py BUILD [--graph]

File A uses file B when A's object refers to a symbol that B's defines
(`nm`; static inline functions in headers do not count). Two rules:
  1. no circle: the use graph of the compiler's files has no cycle;
  2. layers only call downward: a file of a layer in LAYERS uses files of
     its own layer or of layers listed before it.
--graph prints every use edge instead (A -> B: symbols). Exit status 1
when a rule is broken, with the offending edges.
"""
import argparse
import collections
import glob
import os
import subprocess
import sys

# Lowest first. A file belongs to the longest prefix of its path that is
# listed; every compiler source must belong to one.
LAYERS = [
    "ir/",
    "frontend/",
    "passes/unit.c",     # what the options ask of the pipeline
    "passes/cleanup/",   # simplify, cse, dce (also on one graph)
    "passes/ad/",        # autodiff: rules, walks, AD passes
    "passes/lower/",     # rewrites for code generation
    "passes/",           # the pipeline
    "codegen/plan/",     # fusion, memory plan: target-independent
    "codegen/llvm/",     # LLVM building blocks
    "codegen/emit/",     # op emitters
    "codegen/",
    "main.c",
]
LIBS = ["ir", "frontend", "passes", "codegen"]  # object dirs to read


def source_of(obj, build):
    """ir/CMakeFiles/rlxir.dir/diag.c.o -> ir/diag.c (None: generated
    or outside the compiler, e.g. the runtime files codegen links in)."""
    rel = os.path.relpath(obj, build)
    top, rest = rel.split(os.sep, 1)
    rest = rest.split(".dir" + os.sep, 1)[-1]
    if rest.startswith("__" + os.sep) or not rest.endswith(".o"):
        return None
    return os.path.join(top, rest[:-2]).replace(os.sep, "/")


def layer_of(src):
    best = None
    for i, l in enumerate(LAYERS):
        if src == l or (l.endswith("/") and src.startswith(l)):
            if best is None or len(l) > len(LAYERS[best]):
                best = i
    return best


def read_objects(build):
    defs, uses = {}, collections.defaultdict(set)
    objs = []
    for lib in LIBS:
        objs += glob.glob(os.path.join(build, lib, "**", "*.o"),
                          recursive=True)
    src_of = {}
    for obj in sorted(objs):
        src = source_of(obj, build)
        if src is not None and os.path.exists(src):
            src_of[obj] = src
    # one nm for all objects (-A: each line starts with "OBJECT: ")
    names = sorted(src_of)
    for i in range(0, len(names), 500):
        out = subprocess.run(["nm", "-P", "-A"] + names[i:i + 500],
                             stdout=subprocess.PIPE,
                             universal_newlines=True, check=True).stdout
        for line in out.splitlines():
            obj, _, rest = line.partition(": ")
            w = rest.split()
            if obj not in src_of or len(w) < 2:
                continue
            if w[1] in "TDBR":
                defs[w[0]] = src_of[obj]
            elif w[1] == "U":
                uses[src_of[obj]].add(w[0])
    edges = collections.defaultdict(set)
    for src, syms in uses.items():
        for s in syms:
            d = defs.get(s)
            if d and d != src:
                edges[src, d].add(s)
    files = set(uses) | set(defs.values())
    return files, edges


def cycles(files, edges):
    """Strongly connected components with more than one file (Tarjan)."""
    succ = collections.defaultdict(list)
    for a, b in edges:
        succ[a].append(b)
    index, low, stack, on, out = {}, {}, [], set(), []
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(succ[v]):
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

    for v in sorted(files):
        if v not in index:
            visit(v)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--graph", action="store_true")
    a = ap.parse_args()
    os.chdir(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    files, edges = read_objects(os.path.abspath(a.build))
    if not files:
        print("no compiler objects under %s" % a.build)
        return 1
    if a.graph:
        for (x, y), syms in sorted(edges.items()):
            print("%s -> %s: %s" % (x, y, " ".join(sorted(syms))))
        return 0
    bad = 0
    for f in sorted(files):
        if layer_of(f) is None:
            print("%s: in no layer of check_layers.py's LAYERS" % f)
            bad += 1
    for (x, y), syms in sorted(edges.items()):
        lx, ly = layer_of(x), layer_of(y)
        if lx is not None and ly is not None and ly > lx:
            print("upward call: %s (%s) -> %s (%s): %s"
                  % (x, LAYERS[lx], y, LAYERS[ly], " ".join(sorted(syms))))
            bad += 1
    for comp in cycles(files, edges):
        inner = [(x, y) for (x, y) in sorted(edges) if x in comp
                 and y in comp]
        print("circle of %d files: %s" % (len(comp), " ".join(comp)))
        for x, y in inner:
            print("  %s -> %s: %s" % (x, y,
                                      " ".join(sorted(edges[x, y]))))
        bad += 1
    print("%d files, %d use edges, %d problems"
          % (len(files), len(edges), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
