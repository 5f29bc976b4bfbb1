#!/usr/bin/env bash
# check-modules.sh — checks the built objects follow fleet's rank table.
#
# Reads who defines and who uses each global symbol (nm) in the objects of a
# build tree, maps each object to its source file and each file to its
# folder's rank (scripts/ranks.txt), and reports, one per line:
#
#   upward: FILE -> FILE: SYMBOL       a file uses a folder of a higher rank
#   same-rank: FILE -> FILE: SYMBOL    two folders of the same rank
#   circle across folders: FILE -> FILE: SYMBOL; ...; back to the first FILE
#   file circle in FOLDER/: FILE FILE ...   (folders marked "acyclic")
#   unranked: FILE                     an object of C code in no row
#
# The allow-list (scripts/ranks-allow-symbols.txt) names edges, as
# "FILE -> FILE: SYMBOL", and file circles, as "file circle in FOLDER/:
# FILE ...", that are known and still to be removed. A listed problem passes;
# an unlisted one fails; a listed one that no longer exists is reported as
# "stale allow entry: …" and fails too, so the list only shrinks. Circles
# across folders are looked for once the listed edges are taken out: a
# listed edge exempts the circles through it, no more (with the list empty,
# every such circle fails).
#
# Objects are found under BUILD_DIR: CMake's CMakeFiles/<target>.dir/<source
# path>.o (the check's test compiles its fixtures the same way); in a CMake
# tree, only those whose source still exists, the newest of each. Objects
# of files in no row of the table (tests/, bench/, generated sources) are
# not read: a symbol they define makes no edge.
#
# Usage: scripts/check-modules.sh [--all] [--table FILE] [--allow FILE] BUILD_DIR
#   --all     print every problem that can be listed as an allow-list line
#             (the baseline; circles across folders go to stderr), exit 0
# Exits 1 if there was a problem, 0 if none, 2 on a usage error or when nm
# fails.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
table=$here/ranks.txt
allow=$here/ranks-allow-symbols.txt
all=0
build=
while [ $# -gt 0 ]; do
  case $1 in
  --all) all=1 ;;
  --table) table=$2; shift ;;
  --allow) allow=$2; shift ;;
  -*) printf 'check-modules: unknown option %s\n' "$1" >&2; exit 2 ;;
  *) build=$1 ;;
  esac
  shift
done
if [ -z "$build" ] || [ ! -d "$build" ]; then
  printf 'check-modules: %s is not a build directory (usage: check-modules.sh [--all] BUILD_DIR)\n' \
    "${build:-(none)}" >&2
  exit 2
fi

exec python3 - "$build" "$table" "$allow" "$all" <<'PY'
import os, re, subprocess, sys
from collections import deque

build, table_path, allow_path, report_all = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"

def die(msg):
    print("check-modules: " + msg, file=sys.stderr)
    sys.exit(2)

# The rank table: "rank folder [also...]" rows and "acyclic folder..." lines.
rows = {}      # path (folder or file) -> (folder, rank)
acyclic = set()
try:
    with open(table_path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            if line[0] == "acyclic":
                acyclic.update(p.rstrip("/") for p in line[1:])
                continue
            try:
                rank = int(line[0])
            except ValueError:
                rank = None
            if rank is None or len(line) < 2:
                die("%s:%d: want \"rank folder [file...]\"" % (table_path, n))
            folder = line[1].rstrip("/")
            for p in line[1:]:
                rows[p.rstrip("/")] = (folder, rank)
except OSError as e:
    die("cannot read the rank table %s: %s" % (table_path, e.strerror))

def place(path):
    """(folder, rank) of a source path: its longest matching row (so
    gateway/core/x.c is in gateway/core, gateway/x.c in gateway), or None."""
    best = None
    for p, fr in rows.items():
        if path == p or path.startswith(p + "/"):
            if best is None or len(p) > len(best[0]):
                best = (p, fr)
    return None if best is None else best[1]

# Objects -> source paths. A CMake tree names its source directory in
# CMakeCache.txt: an object whose source is gone (deleted, or moved) is a
# leftover and skipped. Of several objects of one source (clients' shared
# files are built into more than one target; a renamed target leaves its
# old objects behind), the newest is read.
srcdir = None
try:
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith("CMAKE_HOME_DIRECTORY:"):
                srcdir = line.split("=", 1)[1].strip()
except OSError:
    pass
objects = {}
for dirpath, dirnames, filenames in os.walk(build):
    dirnames.sort()
    for name in sorted(filenames):
        if not name.endswith(".o"):
            continue
        full = os.path.join(dirpath, name)
        rel = os.path.relpath(full, build)
        m = re.search(r"(?:^|/)CMakeFiles/[^/]+\.dir/(.*)$", rel)
        src = (m.group(1) if m else rel)[:-2]
        if srcdir is not None and not os.path.isfile(os.path.join(srcdir, src)):
            continue
        if src not in objects or os.path.getmtime(full) > os.path.getmtime(objects[src]):
            objects[src] = full

# Only the ranked files matter: a symbol defined elsewhere (a test, a
# generated source, a library) makes no edge.
ranked = {s: place(s) for s in objects if place(s) is not None}
defs = {}      # symbol -> source
uses = {s: set() for s in ranked}
by_obj = {objects[s]: s for s in ranked}
objs = sorted(by_obj)
for i in range(0, len(objs), 200):
    try:
        out = subprocess.run(["nm", "-A", "-P", "-g"] + objs[i:i + 200], capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        die("nm failed: %s" % e)
    for line in out.splitlines():
        obj, _, rest = line.partition(": ")
        parts = rest.split()
        if obj not in by_obj or len(parts) < 2:
            continue
        src, sym, kind = by_obj[obj], parts[0], parts[1]
        if kind in "Uw":
            uses[src].add(sym)
        else:
            defs.setdefault(sym, src)

# Every edge between two ranked files, with its symbols.
edges = {}     # (from, to) -> sorted symbols
for src in ranked:
    for sym in uses[src]:
        to = defs.get(sym)
        if to is None or to == src or to not in ranked:
            continue
        edges.setdefault((src, to), []).append(sym)
for k in edges:
    edges[k].sort()

def edge_line(a, b, sym):
    return "%s -> %s: %s" % (a, b, sym)

problems = []  # (allow key or None, report line)
for (a, b), syms in sorted(edges.items()):
    (fa, ra), (fb, rb) = ranked[a], ranked[b]
    if fa == fb or rb < ra:
        continue
    kind = "upward" if rb > ra else "same-rank"
    for s in syms:
        problems.append((edge_line(a, b, s), "%s: %s" % (kind, edge_line(a, b, s))))

# Strongly connected components (Tarjan, iterative) of a file graph.
def sccs(nodes, succ):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(succ.get(root, ())))]
        index[root] = low[root] = counter[0]; counter[0] += 1
        stack.append(root); on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]; counter[0] += 1
                    stack.append(w); on.add(w)
                    work.append((w, iter(succ.get(w, ()))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop(); on.discard(w); comp.append(w)
                        if w == v:
                            break
                    out.append(sorted(comp))
    return out

def shortest_path(succ, start, goal, within):
    prev = {start: None}
    q = deque([start])
    while q:
        v = q.popleft()
        if v == goal:
            path = []
            while v is not None:
                path.append(v); v = prev[v]
            return path[::-1]
        for w in sorted(succ.get(v, ())):
            if w in within and w not in prev:
                prev[w] = v; q.append(w)
    return None

allowed = set()
try:
    with open(allow_path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                allowed.add(line)
except FileNotFoundError:
    pass

# Circles inside a folder marked acyclic (every edge counts).
for folder in sorted(acyclic):
    inside = sorted(s for s, (f, _) in ranked.items() if f == folder)
    succ = {}
    for (a, b) in edges:
        if ranked[a][0] == folder and ranked[b][0] == folder:
            succ.setdefault(a, set()).add(b)
    for comp in sccs(inside, succ):
        if len(comp) > 1:
            key = "file circle in %s/: %s" % (folder, " ".join(comp))
            problems.append((key, key))

# Circles across folders, once the listed edges are taken out.
succ = {}
for (a, b), syms in edges.items():
    if not report_all and all(edge_line(a, b, s) in allowed for s in syms) and ranked[a][0] != ranked[b][0]:
        continue
    succ.setdefault(a, set()).add(b)
for comp in sccs(sorted(ranked), succ):
    if len({ranked[s][0] for s in comp}) < 2:
        continue
    members = set(comp)
    # One circle that shows it: the first edge leaving a folder, then the
    # shortest way back.
    a, b = next((a, b) for a in comp for b in sorted(succ.get(a, ())) if b in members and ranked[a][0] != ranked[b][0])
    path = [a] + shortest_path(succ, b, a, members)
    steps = []
    for x, y in zip(path, path[1:]):
        # The symbol shown: one not on the allow-list, if any.
        syms = edges[(x, y)]
        steps.append(edge_line(x, y, next((s for s in syms if edge_line(x, y, s) not in allowed), syms[0])))
    steps = "; ".join(steps)
    folders = sorted({ranked[s][0] + "/" for s in comp})
    problems.append((None, "circle across folders (%s): %s" % (" ".join(folders), steps)))

for s in sorted(objects):
    if s.endswith(".c") and s not in ranked and re.match(r"(common|gateway|mcp|clients)/", s):
        problems.append((None, "unranked: %s is in no row of %s" % (s, os.path.basename(table_path))))

bad = 0
seen = set()
for key, line in problems:
    seen.add(key)
    if report_all:
        # The baseline: allow-list lines on stdout, the rest on stderr.
        print(key if key is not None else line, file=sys.stdout if key is not None else sys.stderr)
    elif key is None or key not in allowed:
        print(line)
        bad += 1
if not report_all:
    for key in sorted(allowed - seen):
        print("stale allow entry (no longer found; take it off %s): %s" % (os.path.basename(allow_path), key))
        bad += 1
sys.exit(1 if bad and not report_all else 0)
PY
