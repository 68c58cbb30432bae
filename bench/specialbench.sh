#!/bin/sh
# specialbench.sh -- special tokens at scale (`make bench-specials`, ~10 s;
# issue 24, finding 5): GPT-2's tokenizer.json with N added tokens
# <|reserved_special_token_K|> (Llama 3 has 256), then
#   tokenize  `tokvec tokenize` of 16 MiB of "<" with 256 specials, with
#             and without --no-special (whole process: loading included),
#             best of 3, user CPU seconds;
#   /info     GET /info with 3,000 specials (its special_tokens object
#             lists them all), best of 5, and /health sent while one runs.
# Before the one-pass matcher: 15.3 s vs 1.2 s, and 8.5 s for /info (every
# special tried at every byte; listing by id O(N^3)). Prints a table.
# Env: BUILD (build), PYTHON, TOKENIZER (data/gpt2).
set -eu
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
TOKENIZER=${TOKENIZER:-data/gpt2}
work=$BUILD/bench/specials
mkdir -p "$work"
$PYTHON - "$TOKENIZER" "$work" <<'EOF'
import json, os, sys
src, out = sys.argv[1], sys.argv[2]
with open(os.path.join(src, "encoder.json"), encoding="utf-8") as f:
    vocab = json.load(f)
with open(os.path.join(src, "vocab.bpe"), encoding="utf-8") as f:
    merges = [m for m in f.read().split("\n")[1:] if m]
for n in (256, 3000):
    added = [{"id": 50256, "content": "<|endoftext|>", "special": True}]
    added += [{"id": 50257 + k, "special": True,
               "content": "<|reserved_special_token_%d|>" % k}
              for k in range(n - 1)]
    with open(os.path.join(out, "specials%d.json" % n), "w") as f:
        json.dump({"model": {"type": "BPE", "vocab": vocab, "merges": merges},
                   "pre_tokenizer": {"type": "ByteLevel",
                                     "add_prefix_space": False},
                   "added_tokens": added}, f)
with open(os.path.join(out, "lt.txt"), "w") as f:
    f.write("<" * (16 << 20))
EOF
[ -s "$work/t.safetensors" ] ||
    "$BUILD/tokvec" init --vocab 53256 --dim 8 --context 16 \
        -o "$work/t.safetensors" >/dev/null
cpu() { # best user+sys seconds of 3 runs of tokvec tokenize ARGS
    b=""
    for i in 1 2 3; do
        t=$( { /usr/bin/time -f "%U %S" "$BUILD/tokvec" tokenize \
               --tokenizer "$work/specials256.json" "$@" "$work/lt.txt" \
               >/dev/null; } 2>&1 | awk '{print $1 + $2}')
        if [ -z "$b" ] || [ "$(echo "$t < $b" | bc -l)" = 1 ]; then b=$t; fi
    done
    echo "$b"
}
t_sp=$(cpu)
t_ord=$(cpu --no-special)
port=$($PYTHON -c 'import socket; s = socket.socket()
s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BUILD/tokvec" serve --table "$work/t.safetensors" --port "$port" \
    --tokenizer "$work/specials3000.json" 2>"$work/serve.log" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
i=0
until curl -sf -o /dev/null "http://127.0.0.1:$port/health"; do
    i=$((i + 1)); [ $i -lt 200 ] || { cat "$work/serve.log"; exit 1; }
    sleep 0.1
done
info=""
for i in 1 2 3 4 5; do
    t=$(curl -sf -o "$work/info.json" -w '%{time_total}' \
        "http://127.0.0.1:$port/info")
    if [ -z "$info" ] || [ "$(echo "$t < $info" | bc -l)" = 1 ]; then
        info=$t
    fi
done
curl -sf -o /dev/null "http://127.0.0.1:$port/info" &
health=$(curl -sf -o /dev/null -w '%{time_total}' \
         "http://127.0.0.1:$port/health")
wait $!
n=$($PYTHON -c 'import json, sys
print(len(json.load(open(sys.argv[1]))["tokenizer"]["special_tokens"]))' \
    "$work/info.json")
echo "# special tokens at scale ($(date -u +%Y-%m-%d), $(nproc) CPUs)"
echo
echo "| what | seconds |"
echo "|---|---|"
echo "| tokenize 16 MiB of \"<\", 256 specials | $t_sp |"
echo "| the same, --no-special | $t_ord |"
echo "| GET /info, $n specials listed | $info |"
echo "| GET /health while /info runs | $health |"
