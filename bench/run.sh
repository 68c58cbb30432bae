#!/bin/sh
# run.sh -- the benchmark driver behind `make bench`. Everything that is
# compared is measured in this one run, so noise on this shared machine hits
# both sides; read the ratios, not the absolute numbers.
set -eu
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
TABLE=${TABLE:-data/gpt2-256.safetensors}

echo "== core lookup: gather+add of 32x128 ids vs memcpy of the same bytes"
"$BUILD/bench/embedbench" "$TABLE" 32 128

echo
echo "== JSON float formatting (one core)"
"$BUILD/bench/floatbench"

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
