"""tests/run.py -- runs test suites quietly and keeps the count.

    run.py --summary FILE --logs DIR --title T [-j N] CMD...   run each CMD
        (a shell command line: a cmocka binary, an e2e suite, a checker),
        its output to DIR/<name>.log; one line per suite, with its time; a
        failing suite's log is printed without its passing lines. Adds
        "passed failed" to FILE, prints "N passed, N failed" for these
        suites and the wall time, exits 1 if any failed. -j N: N suites at
        a time (default 1), the slowest of the last run (DIR/times.json)
        started first (those it has no time for before them, in the order
        given); lines come as suites end. Suites must then not
        share ports, files or directories (the e2e suites take free ports
        and temporary directories; the unit tests bind port 0).
    run.py --summary FILE --total [--steps-failed]   prints the line
        "N passed, N failed" of everything FILE holds (what `make test` ends
        with); exits 1 if anything failed or nothing ran. --steps-failed:
        make said a step failed; if no test failed, that step was a build
        (a test that did not compile, so never ran): it counts as one
        failure and the line says so.

Counts are tests: cmocka's "[  PASSED  ] N test(s)." / "[  FAILED  ] N",
unittest's "Ran N tests" and "OK (skipped=K)" / "FAILED (failures=F,
errors=E)". A command without such lines (a checker) counts as one test.
A suite that exits non-zero is failed even when its counts say otherwise
(a crash, a sanitizer report).
Standard library only.
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time

CMOCKA_PASS = re.compile(r"^\[  PASSED  \] (\d+) test", re.M)
CMOCKA_FAIL = re.compile(r"^\[  FAILED  \] (\d+) test", re.M)
UNIT_RAN = re.compile(r"^Ran (\d+) tests? in", re.M)
UNIT_END = re.compile(r"^(OK|FAILED)(?: \((.*)\))?$", re.M)
# Lines of a log that say a test passed (left out of a failure's print).
PASSING = re.compile(r"^\[ (RUN      |      OK )\]|\.\.\. ok$|^ok \d+ ")


def counts(log, rc):
    """(passed, failed, skipped) of one suite's output."""
    p = sum(map(int, CMOCKA_PASS.findall(log)))
    f = sum(map(int, CMOCKA_FAIL.findall(log)))
    s = 0
    ran = UNIT_RAN.findall(log)
    if ran:
        n = int(ran[-1])
        end = UNIT_END.findall(log)
        kinds = {}
        if end:
            for part in (end[-1][1] or "").split(","):
                if "=" in part:
                    k, v = part.split("=")
                    kinds[k.strip()] = int(v)
        f += (kinds.get("failures", 0) + kinds.get("errors", 0)
              + kinds.get("unexpected successes", 0))
        s += kinds.get("skipped", 0)
        p += n - f - s
    elif not (p or f):
        p, f = (1, 0) if rc == 0 else (0, 1)
    if rc != 0 and f == 0:
        f = 1
    return p, f, s


def suite_name(cmd):
    """test_server for a cmocka program build/test_server,
    test_server.py for ".../python3 tests/e2e/test_server.py --binary B"
    (a unit test and an e2e suite may share a module's name); a checker
    keeps its arguments: "check_floats --narrow"."""
    words = cmd.split()
    for i, word in enumerate(words):
        base = os.path.basename(word)
        if base.startswith("test_"):  # and a part of it: "--part 2"
            part = re.search(r"--part (\S+)", cmd)
            return base + (" part " + part.group(1) if part else "")
        if base.startswith("check_"):
            return " ".join([base] + words[i + 1:])
    return words[0]


def log_path(logs, name):
    return os.path.join(logs, re.sub(r"[^\w.-]+", "_", name) + ".log")


def run_one(cmd, name, logs):
    """Runs one suite, its output to its log; (name, path, log, rc,
    seconds)."""
    path = log_path(logs, name)
    t0 = time.time()
    with open(path, "wb") as out:
        rc = subprocess.call(cmd, shell=True, stdout=out,
                             stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
    took = time.time() - t0
    with open(path, "rb") as f:
        log = f.read().decode(errors="replace")
    return name, path, log, rc, took


def report(name, path, log, rc, took):
    """Prints the suite's line (and a failure's log); (passed, failed)."""
    p, f, s = counts(log, rc)
    extra = ", %d skipped" % s if s else ""
    if f == 0:
        print("  ok    %-28s %4d passed%s (%.1f s)" % (name, p, extra, took))
    else:
        print("  FAIL  %-28s %4d failed, %d passed%s (%.1f s; exit %d)"
              % (name, f, p, extra, took, rc))
        print("  ---- %s, passing lines left out" % path)
        for line in log.splitlines():
            if not PASSING.search(line):
                print("  | " + line)
        print("  ----")
    sys.stdout.flush()
    return p, f


def run(title, cmds, logs, summary, jobs=1):
    os.makedirs(logs, exist_ok=True)
    times_file = os.path.join(logs, "times.json")
    try:
        with open(times_file) as f:
            last = json.load(f)
    except (OSError, ValueError):
        last = {}
    if jobs > 1:  # the slowest first, so that they overlap the rest; a
        # suite not timed yet before the others, as given
        cmds = sorted(cmds, key=lambda c: -last.get(suite_name(c), 1e9))
    print("== " + title + (" (%d at a time)" % jobs if jobs > 1 else ""))
    sys.stdout.flush()
    t0 = time.time()
    total_p = total_f = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        names, futures = set(), []
        for cmd in cmds:
            name, n = suite_name(cmd), 1
            while name in names:  # two suites, one name: two logs
                n += 1
                name = "%s.%d" % (suite_name(cmd), n)
            names.add(name)
            futures.append(pool.submit(run_one, cmd, name, logs))
        for fut in concurrent.futures.as_completed(futures):
            name, path, log, rc, took = fut.result()
            last[name] = round(took, 1)
            p, f = report(name, path, log, rc, took)
            total_p += p
            total_f += f
    with open(times_file, "w") as f:
        json.dump(last, f, indent=0, sort_keys=True)
    with open(summary, "a") as fs:
        fs.write("%d %d\n" % (total_p, total_f))
    print("%d passed, %d failed (%.0f s)" % (total_p, total_f,
                                             time.time() - t0))
    return 1 if total_f else 0


def total(summary, steps_failed):
    p = f = 0
    try:
        with open(summary) as fs:
            for line in fs:
                a, b = line.split()
                p, f = p + int(a), f + int(b)
    except OSError:
        pass
    note = ""
    if steps_failed and not f:
        f = 1
        note = " (a build step failed: see its error above)"
    print("%d passed, %d failed%s" % (p, f, note))
    return 1 if f or not p else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--summary", required=True)
    ap.add_argument("--logs")
    ap.add_argument("--total", action="store_true")
    ap.add_argument("--steps-failed", action="store_true")
    ap.add_argument("--title", default="tests")
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("cmds", nargs="*")
    a = ap.parse_args()
    if a.total:
        return total(a.summary, a.steps_failed)
    if not a.logs or not a.cmds:
        ap.error("--logs DIR and at least one command")
    os.makedirs(os.path.dirname(a.summary) or ".", exist_ok=True)
    return run(a.title, a.cmds, a.logs, a.summary, max(1, a.jobs))


if __name__ == "__main__":
    sys.exit(main())
