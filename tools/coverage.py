#!/usr/bin/env python3
"""coverage.py -- one line per C file of core/ and server/ from an lcov
tracefile: `NN% path` (lines), then `coverage: N% lines, M% branches`.

Usage: tools/coverage.py TRACEFILE [--min-file PCT] [--goal-lines PCT]
       [--goal-branches PCT]
Files under 'excluded' markers are not special: lcov's LCOV_EXCL_* lines are
counted by lcov itself, and this script lists how many there are per file
(excl N) so that none hides. Exit 0; with --strict, 1 when a goal is missed.
"""
import argparse
import os
import sys


def parse(path):
    files, cur = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("SF:"):
                cur = {"LF": 0, "LH": 0, "BRF": 0, "BRH": 0}
                files[os.path.relpath(line[3:])] = cur
            elif cur is not None and ":" in line:
                k, v = line.split(":", 1)
                if k in cur:
                    cur[k] += int(v)
    return files


def excluded(path):
    try:
        with open(path, encoding="utf-8") as f:
            return sum("LCOV_EXCL" in line for line in f)
    except OSError:
        return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tracefile")
    ap.add_argument("--goal-lines", type=float, default=95.0)
    ap.add_argument("--goal-branches", type=float, default=90.0)
    ap.add_argument("--min-file", type=float, default=80.0)
    ap.add_argument("--strict", action="store_true")
    a = ap.parse_args()
    files = {p: c for p, c in parse(a.tracefile).items()
             if p.startswith(("core/", "server/")) and p.endswith(".c")}
    lf = lh = bf = bh = 0
    low = []
    for p in sorted(files):
        c = files[p]
        pct = 100.0 * c["LH"] / c["LF"] if c["LF"] else 100.0
        n = excluded(p)
        print("%3.0f%% %s%s" % (pct, p, "  (excl %d)" % n if n else ""))
        if pct < a.min_file:
            low.append(p)
        lf, lh, bf, bh = lf + c["LF"], lh + c["LH"], bf + c["BRF"], \
            bh + c["BRH"]
    lines = 100.0 * lh / lf if lf else 0.0
    branches = 100.0 * bh / bf if bf else 0.0
    print("coverage: %.1f%% lines, %.1f%% branches (%d files; goal %.0f%% "
          "lines, %.0f%% branches, no file under %.0f%%: %d under)"
          % (lines, branches, len(files), a.goal_lines, a.goal_branches,
             a.min_file, len(low)))
    missed = (lines < a.goal_lines or branches < a.goal_branches or low)
    return 1 if a.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
