#!/bin/sh
# tokbench.sh -- `tokvec tokenize` against npm tiktoken (the Rust core as
# WASM) and gpt-tokenizer (pure JS) on one ~10 MB mixed-language file, as
# whole processes (start-up, loading the GPT-2 files, reading, encoding,
# printing the JSON array), best of 3 by wall time each, in one run:
# tokvec on one thread (--threads 1) and on every CPU (the default; the
# text cut at tokvec_tokenizer_cut's places). Wall and CPU (user +
# system) seconds; MB/s per core is bytes over CPU seconds. The outputs
# must be the same ids. Then tokvec alone on one 10 MB piece (one letter
# repeated: the long-piece merge), against the mixed text's cost a byte.
# Writes bench/results/tokenize.md, and tokenize.json for make bench's goal
# table (bench/loadbench.py).
# Env: BUILD (build), ORACLE (build/oracle: node_modules), TOKENIZER,
# BEFORE (optional: another tokvec binary, e.g. main's, for rows "before").
set -eu
BUILD=${BUILD:-build}
ORACLE=${ORACLE:-$BUILD/oracle}
TOKENIZER=${TOKENIZER:-data/gpt2}
BEFORE=${BEFORE:-}
out=$BUILD/bench/tok
mkdir -p "$out" bench/results
text=$out/mixed.txt
bench/mktext.sh "$text"
long=$out/long.txt
[ -s "$long" ] || head -c 10000000 /dev/zero | tr '\0' a > "$long"
bytes=$(stat -c %s "$text")
ncpu=$(nproc)
best() { # best of 3 runs of "$@" > $out/ids.$name by wall time: "wall cpu"
    b=""
    for i in 1 2 3; do
        /usr/bin/time -f "%e %U %S" -o "$out/time" "$@" > "$out/ids.$name"
        t=$(awk '{print $1, $2 + $3}' "$out/time")
        if [ -z "$b" ] || [ "$(echo "${t% *} < ${b% *}" | bc -l)" = 1 ]; then b=$t; fi
    done
    echo "$b"
}
row() { # name bytes "wall cpu" base_wall
    w=${3% *}; c=${3#* }
    printf '| %s | %.3f | %.3f | %.1f | %.1f | %.2fx |\n' "$1" "$w" "$c" \
        "$(echo "$2 / $w / 1000000" | bc -l)" \
        "$(echo "$2 / $c / 1000000" | bc -l)" "$(echo "$w / $4" | bc -l)"
}
TV="$BUILD/tokvec tokenize --tokenizer $TOKENIZER"
name=tokvec; t_all=$(best $TV "$text")
name=tokvec1; t_one=$(best $TV --threads 1 "$text")
name=tiktoken; t_tik=$(best env NODE_PATH="$ORACLE/node_modules" node bench/tokpeer.js tiktoken "$text")
name=gpt-tokenizer; t_gpt=$(best env NODE_PATH="$ORACLE/node_modules" node bench/tokpeer.js gpt-tokenizer "$text")
for n in tokvec1 tiktoken; do
    cmp -s "$out/ids.tokvec" "$out/ids.$n" || { echo "tokbench: tokvec and $n differ" >&2; exit 1; }
done
if [ -n "$BEFORE" ]; then
    name=before; t_bef=$(best "$BEFORE" tokenize --tokenizer "$TOKENIZER" "$text")
    cmp -s "$out/ids.tokvec" "$out/ids.before" || { echo "tokbench: before differs" >&2; exit 1; }
fi
same_gpt=yes
cmp -s "$out/ids.tokvec" "$out/ids.gpt-tokenizer" || same_gpt=no
ntok=$(tr -cd ',' < "$out/ids.tokvec" | wc -c)
ntok=$((ntok + 1))
lbytes=$(stat -c %s "$long")
name=long; l_one=$(best $TV --threads 1 "$long")
[ -z "$BEFORE" ] || { name=long-before; l_bef=$(best "$BEFORE" tokenize --tokenizer "$TOKENIZER" "$long"); }
w_all=${t_all% *}
{
    echo "# tokvec tokenize vs npm peers ($(date -u +%Y-%m-%d), $ncpu CPUs)"
    echo
    echo "One file, $bytes bytes of mixed-language text, $ntok GPT-2 tokens;"
    echo "whole processes, best of 3 by wall time, ids printed as one JSON"
    echo "array. MB/s per core: bytes / CPU time. gpt-tokenizer gives the"
    echo "same ids: $same_gpt."
    echo
    echo "| tokenizer | wall s | CPU s | MB/s | MB/s per core | wall / tokvec |"
    echo "|---|---|---|---|---|---|"
    [ -z "$BEFORE" ] || row "tokvec before (one thread)" "$bytes" "$t_bef" "$w_all"
    row "tokvec tokenize --threads 1" "$bytes" "$t_one" "$w_all"
    row "tokvec tokenize ($ncpu threads)" "$bytes" "$t_all" "$w_all"
    row "tiktoken 1.0.22 (WASM)" "$bytes" "$t_tik" "$w_all"
    row "gpt-tokenizer 4.0.0 (JS)" "$bytes" "$t_gpt" "$w_all"
    echo
    echo "One piece: $lbytes bytes of 'a' (tokvec only; the peers are"
    echo "quadratic there)."
    echo
    echo "| tokenizer | wall s | CPU s | MB/s | MB/s per core | wall / tokvec |"
    echo "|---|---|---|---|---|---|"
    [ -z "$BEFORE" ] || row "tokvec before (one thread)" "$lbytes" "$l_bef" "${l_one% *}"
    row "tokvec tokenize --threads 1" "$lbytes" "$l_one" "${l_one% *}"
} > bench/results/tokenize.md
cat bench/results/tokenize.md
j() { printf '"%s": {"wall": %s, "cpu": %s}' "$1" "${2% *}" "${2#* }"; }
{
    printf '{"date": "%s", "bytes": %s, ' "$(date -u '+%Y-%m-%d %H:%M:%S UTC')" "$bytes"
    j tokvec "$t_all"; printf ', '; j tokvec1 "$t_one"; printf ', '
    j tiktoken "$t_tik"
    [ -z "$BEFORE" ] || { printf ', '; j before "$t_bef"; }
    printf '}\n'
} > bench/results/tokenize.json
