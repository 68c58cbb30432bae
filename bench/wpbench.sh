#!/bin/sh
# wpbench.sh -- `tokvec tokenize --jsonl` with a WordPiece tokenizer.json
# (bge, tests/data/bge) against Hugging Face tokenizers' encodeBatch (npm,
# the Rust library as a native module, its default thread pool), as whole
# processes (start-up, loading the tokenizer.json, reading, encoding,
# printing one id array a line), best of 3 each, on ~10 MB of JSON lines:
# the mixed-language text of tokbench.sh by lines, one line holding a
# single 10 MB word, and one line of 2.5 million CJK characters outside
# the vocabulary (each a word of its own: [UNK] each); tokvec on one
# thread (--threads 1) and on every CPU (the default: blocks of lines).
# Wall and CPU (user + system) seconds; MB/s per core is bytes over CPU
# seconds. The outputs must be the same ids. Under each of the two long
# files: its CPU a byte over the lines' (the goal: no more than 1.00x),
# each the least CPU of its three runs (the run fastest by wall is not
# always the one with the least CPU on a shared machine).
# Writes bench/results/tokenize-wordpiece.md.
# Then the same for Unigram (SentencePiece style) tokenizer.json files:
# model2vec's Unigram fixture, SentencePiece's test model converted by
# tools/spm2json.py ($ORACLE/spm-test_model.json) and the Unigram trained
# on Debian's texts, on the lines, the word and a third file: one line of
# ~10 MB of Ethiopic letters, which no piece of the three spells (one run
# of unknown characters). Writes bench/results/tokenize-unigram.md.
# Env: BUILD (build), ORACLE (build/oracle: node_modules), WPBENCH
# (wordpiece,unigram: which parts), BEFORE (optional: another tokvec
# binary, e.g. main's, for rows "before", in the same run).
set -eu
WPBENCH=${WPBENCH:-wordpiece,unigram}
BEFORE=${BEFORE:-}
BUILD=${BUILD:-build}
ORACLE=${ORACLE:-$BUILD/oracle}
TOK=tests/data/bge/tokenizer.json
out=$BUILD/bench/tok
mkdir -p "$out" bench/results
bench/mktext.sh "$out/mixed.txt"
unk=$out/unk.jsonl
[ -s "$unk" ] || python3 -c '
import random, sys
r = random.Random(7)
w = "".join(chr(r.randrange(0x20000, 0x2A6E0)) for _ in range(2500000))
open(sys.argv[1], "w", encoding="utf-8").write("\"" + w + "\"\n")
' "$unk"
lines=$out/mixed.jsonl
long=$out/long.jsonl
[ -s "$lines" ] || python3 -c '
import json, sys
with open(sys.argv[1], encoding="utf-8") as f, open(sys.argv[2], "w") as o:
    for line in f:
        line = line.rstrip("\n")
        if line:
            o.write(json.dumps(line, ensure_ascii=False) + "\n")
' "$out/mixed.txt" "$lines"
[ -s "$long" ] || python3 -c '
import random, sys
r = random.Random(7)
w = "".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(10000000))
open(sys.argv[1], "w").write("\"" + w + "\"\n")
' "$long"
best() { # best of 3 runs of "$@" > $out/wp.$name: "wall cpu" of the
    # fastest by wall; the least CPU of the three into $out/cpu.$name
    b=""
    c=""
    for i in 1 2 3; do
        /usr/bin/time -f "%e %U %S" -o "$out/time" "$@" > "$out/wp.$name"
        t=$(awk '{print $1, $2 + $3}' "$out/time")
        if [ -z "$b" ] || [ "$(echo "${t% *} < ${b% *}" | bc -l)" = 1 ]; then b=$t; fi
        if [ -z "$c" ] || [ "$(echo "${t#* } < $c" | bc -l)" = 1 ]; then c=${t#* }; fi
    done
    echo "$c" > "$out/cpu.$name"
    echo "$b"
}
perbyte() { # "cpu" bytes "lines cpu" lines_bytes: CPU a byte over the lines'
    echo "$1 $2 $3 $4" | awk '{printf "%.2fx", ($1 / $2) / ($3 / $4)}'
}
row() { # name bytes "wall cpu" base_wall
    w=${3% *}; c=${3#* }
    printf '| %s | %.3f | %.3f | %.1f | %.1f | %.2fx |\n' "$1" "$w" "$c" \
        "$(echo "$2 / $w / 1000000" | bc -l)" \
        "$(echo "$2 / $c / 1000000" | bc -l)" "$(echo "$w / $4" | bc -l)"
}
case ,$WPBENCH, in *,wordpiece,*) ;; *) TOK= ;; esac
[ -z "$TOK" ] || {
    echo "# tokvec tokenize --jsonl vs Hugging Face tokenizers, WordPiece ($(date -u +%Y-%m-%d), $(nproc) CPUs)"
    echo
    echo "bge's tokenizer.json (BertNormalizer, BertPreTokenizer, WordPiece);"
    echo "whole processes, best of 3 by wall time; HF: encodeBatch of all"
    echo "lines on its default thread pool. MB/s per core: bytes / CPU time."
    for f in "$lines" "$long" "$unk"; do
        bytes=$(stat -c %s "$f")
        name=tokvec; tv=$(best "$BUILD/tokvec" tokenize --jsonl --tokenizer "$TOK" "$f")
        name=tokvec1; tv1=$(best "$BUILD/tokvec" tokenize --threads 1 --jsonl --tokenizer "$TOK" "$f")
        name=hf; hf=$(best env NODE_PATH="$ORACLE/node_modules" node bench/wppeer.js "$TOK" "$f")
        for n in tokvec1 hf; do
            cmp -s "$out/wp.tokvec" "$out/wp.$n" || { echo "wpbench: tokvec and $n differ on $f" >&2; exit 1; }
        done
        if [ -n "$BEFORE" ]; then
            name=before; bef=$(best "$BEFORE" tokenize --threads 1 --jsonl --tokenizer "$TOK" "$f")
            cmp -s "$out/wp.tokvec" "$out/wp.before" || { echo "wpbench: before differs on $f" >&2; exit 1; }
        fi
        echo
        echo "$(basename "$f"): $bytes bytes, $(wc -l < "$f") lines"
        echo
        echo "| tokenizer | wall s | CPU s | MB/s | MB/s per core | wall / tokvec |"
        echo "|---|---|---|---|---|---|"
        [ -z "$BEFORE" ] || row "tokvec before (one thread)" "$bytes" "$bef" "${tv% *}"
        row "tokvec tokenize --jsonl --threads 1" "$bytes" "$tv1" "${tv% *}"
        row "tokvec tokenize --jsonl ($(nproc) threads)" "$bytes" "$tv" "${tv% *}"
        row "HF tokenizers 0.23.2 encodeBatch" "$bytes" "$hf" "${tv% *}"
        c1=$(cat "$out/cpu.tokvec1")
        if [ "$f" = "$lines" ]; then lc=$c1; lb=$bytes; else
            echo
            echo "tokvec's CPU a byte against the lines' (one thread; the least CPU of 3 runs each): $(perbyte "$c1" "$bytes" "$lc" "$lb")"
        fi
    done
} > bench/results/tokenize-wordpiece.md
[ -z "$TOK" ] || cat bench/results/tokenize-wordpiece.md

case ,$WPBENCH, in *,unigram,*) ;; *) exit 0 ;; esac
unk=$out/unknown.jsonl
[ -s "$unk" ] || python3 -c '
import random, sys
r = random.Random(7)
w = "".join(chr(r.randrange(0x1200, 0x1249)) for _ in range(3333333))
open(sys.argv[1], "w", encoding="utf-8").write("\"" + w + "\"\n")
' "$unk"
{
    echo "# tokvec tokenize --jsonl vs Hugging Face tokenizers, Unigram ($(date -u +%Y-%m-%d), $(nproc) CPUs)"
    echo
    echo "SentencePiece-style tokenizer.json files (Unigram); whole processes,"
    echo "best of 3 by wall time; HF: encodeBatch of all lines on its default"
    echo "thread pool. MB/s per core: bytes / CPU time."
    for TOK in tests/data/unigram/model2vec-vocab-quantized.json \
               "$ORACLE/spm-test_model.json" \
               tests/data/unigram/debian-unigram.json; do
        echo
        echo "## $(basename "$TOK")"
        for f in "$lines" "$long" "$unk"; do
            bytes=$(stat -c %s "$f")
            name=tokvec; tv=$(best "$BUILD/tokvec" tokenize --jsonl --tokenizer "$TOK" "$f")
            name=hf; hf=$(best env NODE_PATH="$ORACLE/node_modules" node bench/wppeer.js "$TOK" "$f")
            cmp -s "$out/wp.tokvec" "$out/wp.hf" || { echo "wpbench: tokvec and HF differ on $f with $TOK" >&2; exit 1; }
            if [ -n "$BEFORE" ]; then
                name=before; bf=$(best "$BEFORE" tokenize --jsonl --tokenizer "$TOK" "$f")
                cmp -s "$out/wp.before" "$out/wp.hf" || { echo "wpbench: BEFORE and HF differ on $f with $TOK" >&2; exit 1; }
            fi
            echo
            echo "$(basename "$f"): $bytes bytes, $(wc -l < "$f") lines"
            echo
            echo "| tokenizer | wall s | CPU s | MB/s | MB/s per core | wall / tokvec |"
            echo "|---|---|---|---|---|---|"
            row "tokvec tokenize --jsonl" "$bytes" "$tv" "${tv% *}"
            [ -z "$BEFORE" ] || row "tokvec before" "$bytes" "$bf" "${tv% *}"
            row "HF tokenizers 0.23.2 encodeBatch" "$bytes" "$hf" "${tv% *}"
            c1=$(cat "$out/cpu.tokvec")
            if [ "$f" = "$lines" ]; then lc=$c1; lb=$bytes; else
                echo
                echo "tokvec's CPU a byte against the lines' (the least CPU of 3 runs each): $(perbyte "$c1" "$bytes" "$lc" "$lb")"
            fi
        done
    done
} > bench/results/tokenize-unigram.md
cat bench/results/tokenize-unigram.md
