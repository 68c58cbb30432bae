#!/bin/sh
# tools/lint_tidy_one.sh FILE OUTDIR -- clang-tidy on FILE for
# tools/lint.sh, its output into OUTDIR/<FILE with / as _>.
#
# With LINT_CACHE (a directory) set, the output is kept there under a key
# of what decides it: clang-tidy's version, .clang-tidy, CPPFLAGS_LINT,
# FILE and every project header it includes (gcc -MM); a second run with
# the same key copies it instead of analysing again. A file whose
# dependencies cannot be listed is always analysed.
set -u
f=$1
name=$(echo "$f" | tr / _)
out=$2/$name
tidy() { clang-tidy --quiet "$f" -- -std=c11 $CPPFLAGS_LINT 2>/dev/null; }
cache=${LINT_CACHE:-}
deps=""
[ -n "$cache" ] && deps=$(gcc -MM $CPPFLAGS_LINT "$f" 2>/dev/null |
    tr ' \\' '\n\n' | grep -v -e ':$' -e '^$' | sort -u)
if [ -z "$deps" ]; then
    tidy > "$out"
    exit 0
fi
key=$({ clang-tidy --version; cat .clang-tidy; echo "$CPPFLAGS_LINT";
        echo "$deps"; cat $deps; } | sha256sum | cut -c1-32)
if [ -f "$cache/$name.$key" ]; then
    cp "$cache/$name.$key" "$out"
    exit 0
fi
tidy > "$out"
mkdir -p "$cache"
rm -f "$cache/$name".*
cp "$out" "$cache/$name.$key.tmp$$" && mv "$cache/$name.$key.tmp$$" "$cache/$name.$key"
