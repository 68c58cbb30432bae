#!/usr/bin/env python3
"""coverage.py -- one line per source file of core/ and server/ from an lcov
tracefile: `NN% path` (lines), then `coverage: N% lines, M% branches`.

Usage: tools/coverage.py TRACEFILE [--min-file PCT] [--goal-lines PCT]
       [--goal-branches PCT] [--strict] [--root DIR]

What counts: every record of the tracefile whose file lies under core/ or
server/ of this repository (the C files and the headers whose inline
functions gcov counted); nothing else (not /usr/include/jansson.h's inline
functions, not the generated tables of build*/gen/, not tests/). Paths are
read relative to the repository root (this script's parent folder), not to
the current directory. The totals are checked against lcov's own summary of
the same tracefile (`lcov --summary`): the Makefile extracts core/ and
server/ into cov.info, so the two must agree, and a difference is an error
(exit 2).

Exclusions are not special: lcov drops the lines marked LCOV_EXCL_LINE,
LCOV_EXCL_BR_LINE (branches only) or between LCOV_EXCL_START and
LCOV_EXCL_STOP itself; this script lists per file how many source lines
carry or sit inside such a marker (excl N), so that none hides.
Exit 0; with --strict, 1 when a goal is missed.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEYS = ("LF", "LH", "BRF", "BRH")


def parse(path):
    """{absolute source path: {LF, LH, BRF, BRH}} from the DA and BRDA
    lines (as lcov computes them); a file recorded more than once (lcov
    --capture writes a header once per object that inlined it) is merged
    line by line and branch by branch, as lcov merges it."""
    lines, branches, cur = {}, {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("SF:"):
                cur = os.path.realpath(line[3:])
                lines.setdefault(cur, {})
                branches.setdefault(cur, {})
            elif line == "end_of_record":
                cur = None
            elif cur is None:
                continue
            elif line.startswith("DA:"):
                no, hits = line[3:].split(",")[:2]
                da = lines[cur]
                da[int(no)] = da.get(int(no), 0) + int(hits)
            elif line.startswith("BRDA:"):
                no, block, branch, taken = line[5:].split(",")
                key = (int(no), block, branch)
                n = 0 if taken == "-" else int(taken)
                br = branches[cur]
                br[key] = br.get(key, 0) + n
    return {src: {"LF": len(lines[src]),
                  "LH": sum(1 for n in lines[src].values() if n > 0),
                  "BRF": len(branches[src]),
                  "BRH": sum(1 for n in branches[src].values() if n > 0)}
            for src in lines}


def counted(files, root):
    """The records of core/ and server/, keyed by path from the root."""
    out = {}
    for src, c in files.items():
        rel = os.path.relpath(src, root)
        if rel.startswith(("core" + os.sep, "server" + os.sep)):
            out[rel] = c
    return out


def excluded(root, rel):
    """Source lines that carry or sit inside an LCOV_EXCL marker."""
    n, inside = 0, False
    try:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            for line in f:
                if "LCOV_EXCL_START" in line:
                    inside = True
                if inside or re.search(r"LCOV_EXCL_(BR_)?LINE", line):
                    n += 1
                if "LCOV_EXCL_STOP" in line:
                    inside = False
    except OSError:
        return 0
    return n


def lcov_summary(tracefile):
    """lcov's own totals of the tracefile (LF, LH, BRF, BRH), or None."""
    if not shutil.which("lcov"):
        return None
    r = subprocess.run(["lcov", "--summary", tracefile, "--rc",
                        "lcov_branch_coverage=1"], capture_output=True,
                       text=True, check=False)
    got = {}
    for name, hit, found in re.findall(
            r"(lines|branches)\.*: [\d.]+% \((\d+) of (\d+)", r.stdout
            + r.stderr):
        key = "LF" if name == "lines" else "BRF"
        got[key], got[key.replace("F", "H")] = int(found), int(hit)
    return got if len(got) == 4 else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tracefile")
    ap.add_argument("--goal-lines", type=float, default=95.0)
    ap.add_argument("--goal-branches", type=float, default=90.0)
    ap.add_argument("--min-file", type=float, default=80.0)
    ap.add_argument("--strict", action="store_true")
    ap.add_argument("--root", default=ROOT,
                    help="the repository the tracefile measured")
    a = ap.parse_args()
    records = parse(a.tracefile)
    files = counted(records, os.path.realpath(a.root))
    tot = dict.fromkeys(KEYS, 0)
    low = []
    for p in sorted(files):
        c = files[p]
        pct = 100.0 * c["LH"] / c["LF"] if c["LF"] else 100.0
        n = excluded(a.root, p)
        print("%3.0f%% %s%s" % (pct, p, "  (excl %d)" % n if n else ""))
        if pct < a.min_file:
            low.append(p)
        for k in KEYS:
            tot[k] += c[k]
    lines = 100.0 * tot["LH"] / tot["LF"] if tot["LF"] else 0.0
    branches = 100.0 * tot["BRH"] / tot["BRF"] if tot["BRF"] else 0.0
    print("coverage: %.1f%% lines, %.1f%% branches (%d files; goal %.0f%% "
          "lines, %.0f%% branches, no file under %.0f%%: %d under)"
          % (lines, branches, len(files), a.goal_lines, a.goal_branches,
             a.min_file, len(low)))
    if len(files) == len(records):
        summary = lcov_summary(a.tracefile)
        if summary is not None and summary != tot:
            print("coverage.py: these totals %s differ from lcov --summary "
                  "%s" % (tot, summary), file=sys.stderr)
            return 2
    missed = (lines < a.goal_lines or branches < a.goal_branches or low)
    return 1 if a.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
