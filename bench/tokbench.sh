#!/bin/sh
# tokbench.sh -- `tokvec tokenize` against npm tiktoken (the Rust core as
# WASM) and gpt-tokenizer (pure JS) on one ~10 MB mixed-language file, as
# whole processes (start-up, loading the GPT-2 files, reading, encoding,
# printing the JSON array), best of 3 each, in one run. The three outputs
# must be the same ids. Writes bench/results/tokenize.md.
# Env: BUILD (build), ORACLE (build/oracle: node_modules), TOKENIZER.
set -eu
BUILD=${BUILD:-build}
ORACLE=${ORACLE:-$BUILD/oracle}
TOKENIZER=${TOKENIZER:-data/gpt2}
out=$BUILD/bench/tok
mkdir -p "$out" bench/results
text=$out/mixed.txt
bench/mktext.sh "$text"
bytes=$(stat -c %s "$text")
best() { # best wall time of 3 runs of "$@" > $out/ids.$name
    b=""
    for i in 1 2 3; do
        s=$(date +%s.%N)
        "$@" > "$out/ids.$name"
        e=$(date +%s.%N)
        t=$(echo "$e - $s" | bc -l)
        if [ -z "$b" ] || [ "$(echo "$t < $b" | bc -l)" = 1 ]; then b=$t; fi
    done
    echo "$b"
}
name=tokvec; t_tokvec=$(best "$BUILD/tokvec" tokenize --tokenizer "$TOKENIZER" "$text")
name=tiktoken; t_tik=$(best env NODE_PATH="$ORACLE/node_modules" node bench/tokpeer.js tiktoken "$text")
name=gpt-tokenizer; t_gpt=$(best env NODE_PATH="$ORACLE/node_modules" node bench/tokpeer.js gpt-tokenizer "$text")
cmp -s "$out/ids.tokvec" "$out/ids.tiktoken" || { echo "tokbench: tokvec and tiktoken differ" >&2; exit 1; }
same_gpt=yes
cmp -s "$out/ids.tokvec" "$out/ids.gpt-tokenizer" || same_gpt=no
ntok=$(tr -cd ',' < "$out/ids.tokvec" | wc -c)
ntok=$((ntok + 1))
row() { printf '| %s | %.3f | %.1f | %.2fx |\n' "$1" "$2" \
    "$(echo "$bytes / $2 / 1000000" | bc -l)" "$(echo "$2 / $t_tokvec" | bc -l)"; }
{
    echo "# tokvec tokenize vs npm peers ($(date -u +%Y-%m-%d), $(nproc) CPUs)"
    echo
    echo "One file, $bytes bytes of mixed-language text, $ntok GPT-2 tokens;"
    echo "whole processes, best of 3, ids printed as one JSON array."
    echo "gpt-tokenizer gives the same ids: $same_gpt."
    echo
    echo "| tokenizer | seconds | MB/s | time / tokvec |"
    echo "|---|---|---|---|"
    row "tokvec tokenize" "$t_tokvec"
    row "tiktoken 1.0.22 (WASM)" "$t_tik"
    row "gpt-tokenizer 4.0.0 (JS)" "$t_gpt"
} > bench/results/tokenize.md
cat bench/results/tokenize.md
