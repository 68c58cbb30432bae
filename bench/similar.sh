#!/bin/sh
# similar.sh -- POST /similar's timings (`make bench-similar`, ~1 min once
# the tables exist; also part of `make bench`): a full cosine scan of the
# token table, on the default 50257x256 table and on a 50257x768 one
# (GPT-2's shape), two ways:
#   core   bench/similarbench: one query on one core (tokvec_similar.h),
#          beside two comparison scans (naive double, norms on the fly)
#   http   `tokvec serve` with GPT-2's tokenizer (so every neighbour has its
#          text, as the page asks) on loopback TCP, one keep-alive client
#          (Python's http.client) posting
#          {"id": N, "k": 10} one at a time: latency of the whole request
#          (parse, queue, scan on a worker, JSON with texts)
# Writes bench/results/similar.md.
#
# The 768 table: GPT2_TABLE=FILE when given (GPT-2's real table, e.g.
# `tokvec convert model.safetensors -o FILE` of Hugging Face's gpt2);
# else a random one of the same shape made by `tokvec init` (a full scan
# reads every row whatever its values, so the time depends on the shape
# only). Env: BUILD (build), PYTHON, TABLE (the default table),
# TOKENIZER (data/gpt2), QUERIES (200 over HTTP, 30 in the core).
set -eu
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
TABLE=${TABLE:-data/gpt2-256.safetensors}
TOKENIZER=${TOKENIZER:-data/gpt2}
QUERIES=${QUERIES:-200}
GPT2_TABLE=${GPT2_TABLE:-}
work=$BUILD/bench/work
mkdir -p "$work" bench/results
out=bench/results/similar.md

T768=$GPT2_TABLE
kind768="GPT-2's real table ($GPT2_TABLE)"
if [ -z "$T768" ]; then
    T768=$work/gpt2-768.safetensors
    kind768="random, tokvec init --dim 768 (GPT-2's shape; no real weights here)"
    [ -f "$T768" ] || "$BUILD/tokvec" init --vocab 50257 --dim 768 \
        --context 1024 --positional learned --seed 123 -o "$T768" >/dev/null
fi

# HTTP latency of POST /similar against `tokvec serve --table $1`.
http() {
    "$PYTHON" - "$BUILD/tokvec" "$1" "$TOKENIZER" "$QUERIES" \
        "$work/similar-serve.log" <<'PY'
import atexit, http.client, json, statistics, sys, time
sys.path.insert(0, "tests/e2e")
import support as tc  # the e2e suites' server helpers

tc.BINARY, table, tokenizer, n, log = sys.argv[1:]
n = int(n)
with open(log, "w") as err:
    proc, port = tc.spawn(table, ["--tokenizer", tokenizer, "--host",
                                  "127.0.0.1"], err)
atexit.register(lambda: (proc.terminate(), proc.wait()))
try:
    tc.wait_healthy(proc, port)            # up in 20 s
except RuntimeError:
    sys.exit("similar.sh: the server did not come up")
Conn = lambda: http.client.HTTPConnection("127.0.0.1", port)
c = Conn()
c.request("GET", "/info")
info = json.loads(c.getresponse().read())
V = info["vocab_size"]
ts = []
for i in range(n + 5):
    body = json.dumps({"id": i * 7919 % V, "k": 10})
    t = time.perf_counter()
    c.request("POST", "/similar", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    dt = time.perf_counter() - t
    if r.status != 200 or len(json.loads(data)) != 10:
        sys.exit("similar.sh: %d %s" % (r.status, data[:200]))
    if i >= 5:                            # the first builds the norms
        ts.append(dt)
ts.sort()
print("http %dx%d: POST /similar k=10 with texts: median %.2f ms, p90 %.2f "
      "ms, best %.2f ms (%d requests, one at a time)"
      % (V, info["dim"], statistics.median(ts) * 1e3,
         ts[int(len(ts) * 0.9)] * 1e3, ts[0] * 1e3, len(ts)))

# What a request costs without the scan: POST /embed of one id (parsed,
# queued, run on a worker, answered like /similar) and GET /health.
def median_of(method, url, body):
    ts = []
    for i in range(n):
        t = time.perf_counter()
        c.request(method, url, body, {"Content-Type": "application/json"})
        r = c.getresponse()
        r.read()
        ts.append(time.perf_counter() - t)
        if r.status != 200:
            sys.exit("similar.sh: %s %s: %d" % (method, url, r.status))
    return statistics.median(ts) * 1e3
print("  same client, no scan: POST /embed of one id median %.2f ms, "
      "GET /health %.2f ms" % (median_of("POST", "/embed",
                                         '{"inputs":[[42]]}'),
                               median_of("GET", "/health", None)))
PY
}

{
    echo "# POST /similar: nearest tokens by cosine, a full scan"
    echo
    echo "$(date -u +%Y-%m-%d), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')), shared machine: read the ratios."
    echo "50257x768: $kind768."
    echo
    echo '```'
    for t in "$TABLE" "$T768"; do
        "$BUILD/bench/similarbench" "$t" 30
        http "$t"
    done
    echo '```'
} > "$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
