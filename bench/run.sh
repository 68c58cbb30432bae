#!/bin/sh
# run.sh -- the benchmark driver behind `make bench`. Everything that is
# compared is measured in this one run, so noise on this shared machine hits
# both sides; read the ratios, not the absolute numbers.
#
#   core    embedbench (gather+add vs memcpy), quantbench (GGUF rows per
#           ggml type), floatbench (JSON float writer
#           vs snprintf %.9g), idbench (JSON id parsing: fast path vs
#           jansson), bench/similar.sh (POST /similar: one scan on one
#           core, and whole requests over HTTP, on the default table and a
#           50257x768 one: GPT-2's shape; also make bench-similar), tokvec
#           vs torch init of the default table
#   http    bench/loadbench.py: tokvec vs the PyTorch peer vs nginx under
#           wrk, scaling sweeps, start-up time, the serial fraction (CPU on
#           one-of-a-kind threads) and CPU per request against nginx,
#           large replies (32x128 raw) against the loopback ceiling
#           (bench/ceiling) and nginx, Unix socket vs TCP (bench/httpload);
#           writes bench/results/
#
# Env: BENCH_QUICK=1 (about 1 s a point, fewer sweep points),
#      BENCH_ONLY=main,tokens,dim,conns,startup,serial,large,unix
#      (sections of the HTTP part), BENCH_BASELINE=PATH (an older tokvec
#      binary measured beside this one on 8x4 JSON against the peer, in
#      the serial and large sections, and by make bench-tokenize: before
#      and after in one run), LARGE_MODES=MODE,... (more ceilings in
#      the large section, one per bench/ceiling --mode; MODE:hp adds
#      --hugepage 1). Request bodies are in bench/load/,
#      the PyTorch peer in bench/peers/.
set -eu
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
TABLE=${TABLE:-data/gpt2-256.safetensors}
OUT=${OUT:-bench/results}

# --- tools: Debian packages, installed when root, else the command printed
need=""
command -v wrk >/dev/null 2>&1 || need="$need wrk"
command -v nginx >/dev/null 2>&1 || need="$need nginx-light"
command -v gnuplot >/dev/null 2>&1 || need="$need gnuplot-nox"
"$PYTHON" -c "import torch" 2>/dev/null || need="$need python3-torch"
"$PYTHON" -c "import fastapi" 2>/dev/null || need="$need python3-fastapi"
"$PYTHON" -c "import uvicorn" 2>/dev/null || need="$need python3-uvicorn"
if [ -n "$need" ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "== installing:$need"
        export DEBIAN_FRONTEND=noninteractive
        # apt waits for the lock if another apt runs
        apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null ||
            echo "apt-get update failed; trying the install anyway" >&2
        # shellcheck disable=SC2086
        apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $need >/dev/null
    else
        echo "missing tools; as root run: apt-get install$need" >&2
        exit 1
    fi
fi
# wrk -c1024 needs as many descriptors (and the servers too)
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

mkdir -p "$BUILD/bench/work" "$OUT"
CORE="$BUILD/bench/work/core.txt"
{
echo "== core lookup: gather+add of 32x128 ids vs memcpy of the same bytes"
"$BUILD/bench/embedbench" "$TABLE" 32 128

echo
echo "== GGUF rows by ggml type: dequantized (or widened) per lookup"
"$BUILD/bench/quantbench" 768 4096

echo
echo "== JSON float formatting (one core)"
if [ -x "$BUILD/bench/floatbench" ]; then
    "$BUILD/bench/floatbench" 64 "$TABLE"
else
    echo "floatbench: not built (bench/floatbench.c missing) -- skipped"
fi

echo
echo "== JSON id parsing (one core): fast path vs jansson, GPT-2-like ids"
"$BUILD/bench/idbench" 32x128 64x1024

echo
echo "== nearest tokens (POST /similar): default table, then 50257x768"
BUILD="$BUILD" PYTHON="$PYTHON" TABLE="$TABLE" bench/similar.sh

echo
echo "== init of the default table (50257x256 + 1024x256, seed 123)"
"$BUILD/bench/embedbench" --init 50257 256 1024
if "$PYTHON" -c "import torch" 2>/dev/null; then
    "$PYTHON" - <<'PY'
import time, torch
torch.set_num_threads(1)
best = 1e30
for _ in range(3):
    t = time.perf_counter()
    torch.manual_seed(123)
    tok = torch.nn.Embedding(50257, 256)
    pos = torch.nn.Embedding(1024, 256)
    best = min(best, time.perf_counter() - t)
print("torch init 50257x256 + 1024x256\t%.4f s" % best)
PY
else
    echo "torch: not installed (apt-get install python3-torch) -- skipped"
fi
} > "$CORE" 2>&1
cat "$CORE"
echo

set -- --build "$BUILD" --table "$TABLE" --core "$CORE" --out "$OUT"
[ "${BENCH_QUICK:-0}" = 1 ] && set -- "$@" --quick
[ -n "${BENCH_ONLY:-}" ] && set -- "$@" --only "$BENCH_ONLY"
exec "$PYTHON" bench/loadbench.py "$@"
