#!/bin/sh
# tools/lint.sh -- `make lint`: the checks no compiler makes, on the C tree.
#
#   1. cppcheck (warning, portability, performance): no finding;
#   2. clang-tidy with .clang-tidy's checks (bugprone-*, the analyzer's
#      core/unix/deadcode, cert-err34-c) on core/ server/ tools/ bench/
#      tests/fuzz/: no finding;
#   3. tools/lint_c.py: lines of at most 80 columns, no assignment inside a
#      condition: no finding;
#   4. clang-format (.clang-format, clang-format 14): no line it would
#      change (LINT_FORMAT=report only counts them and does not fail).
# Files in $LINT_PENDING (being rewritten on other branches) are checked
# too, their findings printed, but they do not fail the run.
#
# Usage (the Makefile sets these): LINT_FILES="..." LINT_PENDING="..."
#   LINT_CPPFLAGS="-Ibuild/gen" PYTHON=python3 tools/lint.sh
# cppcheck and clang-tidy run on LINT_JOBS processes (default: nproc);
# LINT_CACHE=DIR keeps clang-tidy's results for files (and the headers they
# include) that have not changed since (the Makefile: build/lint-cache).
set -u
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
LINT_PENDING=${LINT_PENDING:-}
LINT_FORMAT=${LINT_FORMAT:-strict}
LINT_JOBS=${LINT_JOBS:-$(nproc 2>/dev/null || echo 1)}
LINT_CACHE=${LINT_CACHE:-}
CPPFLAGS_LINT="-D_GNU_SOURCE -Iinclude ${LINT_CPPFLAGS:-}"
log=$(mktemp -d /tmp/tokvec-lint-XXXXXX)
trap 'rm -rf "$log"' EXIT
fail=0

pending() { # FILE -> 0 when it is in LINT_PENDING
    for p in $LINT_PENDING; do [ "$p" = "$1" ] && return 0; done
    return 1
}
strict=""; later=""
for f in $LINT_FILES; do
    if pending "$f"; then later="$later $f"; else strict="$strict $f"; fi
done
only_c() { for f in "$@"; do case $f in *.c) echo "$f";; esac; done; }
tidy_c() {
    for f in "$@"; do
        case $f in core/*.c|server/*.c|tools/*.c|bench/*.c|tests/fuzz/*.c)
            echo "$f";; esac
    done
}

# $1 name, $2 output file of the strict run, $3 of the pending run.
report() {
    n=$(grep -c . "$2"); m=$(grep -c . "$3")
    if [ "$n" -gt 0 ]; then
        echo "lint: $1: $n finding(s):"; sed 's/^/  /' "$2"; fail=1
    else
        echo "lint: $1: ok"
    fi
    if [ "$m" -gt 0 ]; then
        echo "lint: $1: $m finding(s) in pending files (not failing):"
        sed 's/^/  (pending) /' "$3"
    fi
}

# cppcheck: the suppressions are deliberate, each with its reason.
#  varFuncNullUB: NULL ends variadic argument lists; glibc's NULL is
#    (void *)0 (POSIX requires it), so nothing is undefined here.
#  invalidPointerCast: embed.c reads the float rows of an aligned, mapped
#    table in place; config_value.h reaches a field by offsetof.
cppcheck_run() {
    [ $# -eq 0 ] && return 0
    cppcheck --quiet -j "$LINT_JOBS" --enable=warning,portability,performance --std=c11 \
        $CPPFLAGS_LINT --inline-suppr \
        --library=tools/cppcheck-jansson.cfg \
        --suppress=varFuncNullUB \
        --suppress=invalidPointerCast:core/embed.c \
        --suppress=invalidPointerCast:server/runtime/config_value.h \
        --template='{file}:{line}: {id}: {message}' "$@" 2>&1
}
cppcheck_run $(only_c $strict) > "$log/cs"
cppcheck_run $(only_c $later) > "$log/cp"
report cppcheck "$log/cs" "$log/cp"

# One clang-tidy a file, LINT_JOBS at a time, each into a file of its own
# (so that parallel outputs do not interleave; tools/lint_tidy_one.sh,
# which reuses results from LINT_CACHE); $1 names the run.
tidy_run() {
    out="$log/tidy-$1"; shift
    mkdir -p "$out"
    [ $# -eq 0 ] && return 0
    export CPPFLAGS_LINT LINT_CACHE
    printf '%s\n' "$@" |
        xargs -P "$LINT_JOBS" -I{} tools/lint_tidy_one.sh {} "$out"
    cat "$out"/* | grep -E '(warning|error):' | sed "s|^$PWD/||" | sort
}
tidy_run s $(tidy_c $strict) > "$log/ts"
tidy_run p $(tidy_c $later) > "$log/tp"
report clang-tidy "$log/ts" "$log/tp"

[ -n "$strict" ] && $PYTHON tools/lint_c.py $strict > "$log/hs"
[ -n "$later" ] && $PYTHON tools/lint_c.py $later > "$log/hp"
touch "$log/hs" "$log/hp"
report "80 columns, no assignment in a condition" "$log/hs" "$log/hp"

lines=0; files=0
for f in $LINT_FILES; do
    n=$(clang-format --style=file "$f" | diff "$f" - | grep -c '^>')
    if [ "$n" -gt 0 ]; then
        lines=$((lines + n)); files=$((files + 1))
        echo "$f: $n" >> "$log/fmt"
    fi
done
if [ "$files" -eq 0 ]; then
    echo "lint: clang-format: ok"
elif [ "$LINT_FORMAT" = report ]; then
    echo "lint: clang-format would change $lines lines in $files files" \
         "(LINT_FORMAT=report: not failing)"
else
    echo "lint: clang-format would change $lines lines in $files files" \
         "(clang-format -i --style=file FILE):"
    sed 's/^/  /' "$log/fmt"; fail=1
fi
[ $fail -eq 0 ] && echo "lint: passed" || echo "lint: FAILED"
exit $fail
