#!/usr/bin/env bash
# container-test.sh -- build the tokvec image and check it end to end.
#
#   deploy/container-test.sh [--image TAG]                    (make container-test)
#
# 1. podman (deploy/podman-base.sh: packages, configuration, the local
#    debian:bookworm-slim), then podman build of the checkout.
# 2. The image run hardened as in production: read-only root filesystem,
#    all capabilities dropped, no-new-privileges; /health, /ready, /info,
#    /metrics answer 200 and the image's own HEALTHCHECK (tokvec probe)
#    passes, run once by hand (podman's timers need systemd). With --cpus 1
#    the start-up line says 1 worker, from the cgroup quota.
# 3. The textbook requests (examples/seed_8x4.json and
#    {"inputs":[[40,1101,257]]}) POSTed to the container and to the local
#    build/tokvec serving data/gpt2-256.safetensors, with Accept
#    application/json and application/octet-stream: the bytes must be equal.
#    The table inside the image must be bit-identical to the local one.
#    Text out of the box: the image's own tokenizer (data/gpt2/ of the build
#    context) answers POST /tokenize with GPT-2's ids for "Hello, world",
#    and /tokenize and a text /embed give the same bytes as the local build
#    serving data/gpt2/. Your own table (README "Docker", the second
#    command): a 6-row table mounted as TOKVEC_TABLE starts, the default
#    tokenizer dropped with a warning. A static model (docs/models.md): the
#    model2vec-rs float32 fixture mounted read-only at /models/NAME and
#    named by TOKVEC_MODEL, run hardened: its POST /v1/embeddings (float,
#    base64) and pooled POST /embed answers are the local build's, byte for
#    byte, and GET /v1/models names it.
# 4. Image hygiene: non-root user, no compiler / headers / apt lists, size
#    broken down into base, table, tokenizer and what tokvec adds (goal:
#    < 5 MB).
# 5. SIGTERM to our container: exit 0 well before the 30 s drain timeout.
#
# Needs root. Env: TOKVEC_BIN (default build/tokvec), TOKVEC_TABLE_FILE
# (default data/gpt2-256.safetensors), TOKVEC_TOKENIZER_DIR (default
# data/gpt2), CTR_PORT/LOCAL_PORT (18082/18181), MODEL_PORT/MLOCAL_PORT
# (18083/18182).
set -uo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/deploy/podman-base.sh"
IMG=localhost/tokvec:container-test
while (($#)); do case $1 in
  --image) IMG=$2; shift 2;;
  -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0;;
  *) echo "container-test: unknown argument $1" >&2; exit 2;; esac; done
BIN=${TOKVEC_BIN:-$TOP/build/tokvec}
TABLE=${TOKVEC_TABLE_FILE:-$TOP/data/gpt2-256.safetensors}
TOKDIR=${TOKVEC_TOKENIZER_DIR:-$TOP/data/gpt2}
CTR_PORT=${CTR_PORT:-18082}; LOCAL_PORT=${LOCAL_PORT:-18181}
MODEL_PORT=${MODEL_PORT:-18083}; MLOCAL_PORT=${MLOCAL_PORT:-18182}
MODEL_DIR=$TOP/tests/data/model2vec-rs/test-model-float32
SEED=$TOP/examples/seed_8x4.json

say()  { echo "[container-test] $*"; }
fail() { echo "container-test: FAIL: $*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || fail "needs root (rootful podman)"
[[ -x $BIN ]] || fail "$BIN missing: run make build/tokvec first (make container-test does)"
[[ -f $TABLE ]] || fail "$TABLE missing: run make data/gpt2-256.safetensors first (make container-test does)"
[[ -f $TOKDIR/encoder.json && -f $TOKDIR/vocab.bpe ]] || fail "$TOKDIR/encoder.json or vocab.bpe missing: run make data first (make container-test does)"
[[ -f $SEED ]] || fail "$SEED missing"
[[ -f $MODEL_DIR/model.safetensors ]] || fail "$MODEL_DIR missing"

WORK=$(mktemp -d /tmp/container-test.XXXXXX)
CTR=tokvec-container-test-$$
LPID=""
MPID=""
cleanup() {
  [[ -n $LPID ]] && kill "$LPID" 2>/dev/null && wait "$LPID" 2>/dev/null
  [[ -n $MPID ]] && kill "$MPID" 2>/dev/null && wait "$MPID" 2>/dev/null
  podman rm -f -t 0 "$CTR" >/dev/null 2>&1
  podman rm -f -t 0 "$CTR-model" >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
noise() { grep -v -e 'CNI config' -e 'systemd connection' >&2; }

# --- 1. podman and the image -------------------------------------------------
say "1. podman set-up (deploy/podman-base.sh), podman build $TOP"
podman_base
command -v curl >/dev/null || fail "curl missing (apt-get install curl)"
"$TOP/tools/deps.sh" jq >/dev/null || fail "jq missing (apt-get install jq)"
t0=$EPOCHREALTIME
podman build --pull=never --format docker --layers -t "$IMG" "$TOP" > "$WORK/build.log" 2>&1 ||
  { tail -n 30 "$WORK/build.log"; fail "podman build"; }
say "built in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}')s (cached layers reused)"

# --- 2. hardened run ----------------------------------------------------------
say "2. podman run --read-only --cap-drop=ALL --security-opt no-new-privileges $IMG"
curl -s -o /dev/null -m 2 "http://127.0.0.1:$CTR_PORT/" && fail "something already answers on port $CTR_PORT"
podman run -d --name "$CTR" --read-only --cap-drop=ALL --security-opt no-new-privileges \
  -p "127.0.0.1:$CTR_PORT:8080" "$IMG" >/dev/null 2> >(noise) || fail "podman run $IMG"

# Local reference server.
curl -s -o /dev/null -m 2 "http://127.0.0.1:$LOCAL_PORT/" && fail "something already answers on port $LOCAL_PORT"
"$BIN" serve --table "$TABLE" --tokenizer "$TOKDIR" --host 127.0.0.1 \
  --port "$LOCAL_PORT" 2> "$WORK/local.log" &
LPID=$!

wait_health() {  # URL NAME
  local i code
  for i in $(seq 1 120); do
    code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$1")
    [[ $code == 200 ]] && return 0
    sleep 0.25
  done
  return 1
}
wait_health "http://127.0.0.1:$CTR_PORT/health" ||
  { podman logs "$CTR" 2>&1 | tail -n 20; fail "container on :$CTR_PORT never answered /health 200"; }
wait_health "http://127.0.0.1:$LOCAL_PORT/health" ||
  { tail -n 20 "$WORK/local.log"; fail "local $BIN serve on :$LOCAL_PORT never answered /health 200"; }
say "both answer /health"
for p in /ready /info /metrics; do
  code=$(curl -s -o /dev/null -m 5 -w '%{http_code}' "http://127.0.0.1:$CTR_PORT$p")
  [[ $code == 200 ]] || fail "container GET $p -> $code"
done
say "container /ready /info /metrics -> 200"
# The image's own HEALTHCHECK, run once by hand (podman's timers need systemd).
[[ -n $(podman inspect -f '{{if .Config.Healthcheck}}{{.Config.Healthcheck.Test}}{{end}}' "$CTR") ]] ||
  fail "the image has no HEALTHCHECK"
ok=0
for _ in 1 2 3; do
  podman healthcheck run "$CTR" >/dev/null 2> >(noise) && { ok=1; break; }
  sleep 1
done
((ok)) || fail "the image's HEALTHCHECK reports unhealthy"
say "image HEALTHCHECK (tokvec probe): healthy"
# The start-up log line states the settings: the image's env must be in effect.
podman logs "$CTR" 2>&1 | grep -q '0\.0\.0\.0' || say "note: start-up log does not mention host 0.0.0.0"

# A CPU limit (docker --cpus, a Kubernetes limit) sets the default worker
# count: with --cpus 1 the start-up line must say 1 worker from the quota.
# Asserted wherever podman applied the quota (the container sees it in its
# cgroup files); a host without a CPU controller for podman is noted.
quota=$(podman run --rm --cpus 1 --entrypoint /bin/sh "$IMG" -c \
  'cat /sys/fs/cgroup/cpu.max /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null' \
  2> >(noise) | tr '\n' ' ')
if [[ $quota == *100000* ]]; then
  line=$(podman run --rm --cpus 1 --entrypoint /bin/sh "$IMG" -c \
           'timeout -s TERM 3 tokvec serve 2>&1' 2> >(noise) |
         grep -o 'threads: [^;]*')
  say "--cpus 1: $line"
  [[ $line == "threads: 1 workers (cgroup quota)"* ]] ||
    fail "with --cpus 1 the start-up line says '$line', not 1 worker from the quota"
else
  say "note: podman set no CPU quota here (cgroup files: '$quota'); --cpus check skipped"
fi

# --- 3. the same bytes from the image and from the local build ---------------
printf '{"inputs":[[40,1101,257]]}' > "$WORK/textbook.json"
bodies=("$WORK/textbook.json" "$SEED")
n=0
for body in "${bodies[@]}"; do
  for accept in application/json application/octet-stream; do
    for side in ctr local; do
      port=$CTR_PORT; [[ $side == local ]] && port=$LOCAL_PORT
      code=$(curl -s -m 30 -o "$WORK/$side.out" -D "$WORK/$side.hdr" -w '%{http_code}' \
        -H 'Content-Type: application/json' -H "Accept: $accept" \
        --data-binary "@$body" "http://127.0.0.1:$port/embed")
      [[ $code == 200 ]] || { head -c 400 "$WORK/$side.out"; echo
        fail "$side POST /embed ($(basename "$body"), Accept $accept) -> $code"; }
    done
    cmp -s "$WORK/ctr.out" "$WORK/local.out" ||
      fail "container and local answers differ: $(basename "$body"), Accept $accept ($(stat -c %s "$WORK/ctr.out") vs $(stat -c %s "$WORK/local.out") bytes)"
    [[ -s $WORK/ctr.out ]] || fail "empty answer: $(basename "$body"), Accept $accept"
    say "same $(stat -c %s "$WORK/ctr.out") bytes: $(basename "$body"), Accept $accept"
    n=$((n + 1))
  done
done
# The textbook octet-stream answer is 1*3*256 float32.
printf '{"inputs":[[40,1101,257]]}' | curl -s -m 10 -o "$WORK/tb.bin" -H 'Content-Type: application/json' \
  -H 'Accept: application/octet-stream' --data-binary @- "http://127.0.0.1:$CTR_PORT/embed"
[[ $(stat -c %s "$WORK/tb.bin") == $((3 * 256 * 4)) ]] || fail "textbook octet-stream answer is not 3*256 float32"

# Text: the image serves the GPT-2 tokenizer without any option.
code=$(curl -s -m 10 -o "$WORK/tok.json" -w '%{http_code}' -H 'Content-Type: application/json' \
  --data-binary '{"inputs":"Hello, world"}' "http://127.0.0.1:$CTR_PORT/tokenize")
[[ $code == 200 ]] || { head -c 400 "$WORK/tok.json"; echo; fail "container POST /tokenize -> $code (no tokenizer in the image?)"; }
ids=$(jq -c '[.[0][].id]' "$WORK/tok.json" 2>/dev/null)
[[ $ids == "[15496,11,995]" ]] || fail "container POST /tokenize \"Hello, world\" -> ids ${ids:-?}, not GPT-2's [15496,11,995]"
say "container POST /tokenize \"Hello, world\" -> $ids (GPT-2)"
printf '{"inputs":"Hello, world. Every effort moves you","special_tokens":true}' > "$WORK/text.json"
printf '{"inputs":["Hello, world.<|endoftext|>","I HAD always"],"pad_id":50256}' \
  > "$WORK/texts.json"
for req in tokenize:text.json embed:text.json embed:texts.json; do
  route=${req%%:*}; body=$WORK/${req#*:}
  for side in ctr local; do
    port=$CTR_PORT; [[ $side == local ]] && port=$LOCAL_PORT
    code=$(curl -s -m 30 -o "$WORK/$side.out" -w '%{http_code}' -H 'Content-Type: application/json' \
      --data-binary "@$body" "http://127.0.0.1:$port/$route")
    [[ $code == 200 ]] || { head -c 400 "$WORK/$side.out"; echo; fail "$side POST /$route ($(basename "$body")) -> $code"; }
  done
  cmp -s "$WORK/ctr.out" "$WORK/local.out" ||
    fail "container and local answers differ: POST /$route $(basename "$body")"
  say "same $(stat -c %s "$WORK/ctr.out") bytes: POST /$route $(basename "$body")"
  n=$((n + 1))
done
for f in encoder.json vocab.bpe; do
  h_img=$(podman exec "$CTR" sha256sum "/data/gpt2/$f" 2>/dev/null | cut -d' ' -f1)
  [[ -n $h_img && $h_img == "$(sha256sum "$TOKDIR/$f" | cut -d' ' -f1)" ]] ||
    fail "/data/gpt2/$f in the image differs from $TOKDIR/$f"
done
say "tokenizer files in the image are the local data/gpt2/ ones"

h_img=$(podman exec "$CTR" sha256sum /data/gpt2-256.safetensors 2>/dev/null | cut -d' ' -f1)
h_loc=$(sha256sum "$TABLE" | cut -d' ' -f1)
[[ -n $h_img && $h_img == "$h_loc" ]] || fail "table in the image ($h_img) differs from $TABLE ($h_loc)"
say "table in the image is bit-identical to the local one (sha256 ${h_loc:0:16}...)"

# Memory: RSS of the local server after serving (table pages are shared/page cache).
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$LPID/status" 2>/dev/null)
say "local tokvec serve RSS after $n request pairs: ${rss:-?} kB"

# Your own table (README "Docker", the second command): a table too small
# for the image's default tokenizer starts with a warning, ids only.
"$BIN" init --vocab 6 --dim 3 -o "$WORK/my.safetensors" >/dev/null || fail "tokvec init"
chmod 0644 "$WORK/my.safetensors"
mine=$(timeout 20 podman run --rm --read-only -v "$WORK/my.safetensors:/t/my.safetensors:ro" \
  -e TOKVEC_TABLE=/t/my.safetensors --entrypoint /bin/sh "$IMG" -c \
  'timeout -s TERM 3 tokvec serve 2>&1' 2> >(noise))
grep -q 'warn default tokenizer not used' <<<"$mine" && grep -q ' started: ' <<<"$mine" ||
  { echo "$mine" | tail -n 5; fail "the image with a 6-row table of mine did not start with a warning"; }
say "my 6-row table: started, default tokenizer dropped with a warning"

# A static model (docs/models.md): a model directory mounted read-only at
# /models/NAME, TOKVEC_MODEL naming it (the image sets no TOKVEC_TABLE, which
# would stop start-up beside a model), the container hardened as above.
MNAME=$(basename "$MODEL_DIR")
podman run -d --name "$CTR-model" --read-only --cap-drop=ALL --security-opt no-new-privileges \
  -p "127.0.0.1:$MODEL_PORT:8080" -v "$MODEL_DIR:/models/$MNAME:ro" \
  -e "TOKVEC_MODEL=/models/$MNAME" "$IMG" >/dev/null 2> >(noise) || fail "podman run (model) $IMG"
"$BIN" serve --model "$MODEL_DIR" --host 127.0.0.1 --port "$MLOCAL_PORT" 2> "$WORK/mlocal.log" &
MPID=$!
wait_health "http://127.0.0.1:$MODEL_PORT/health" ||
  { podman logs "$CTR-model" 2>&1 | tail -n 20; fail "the model container never answered /health 200"; }
wait_health "http://127.0.0.1:$MLOCAL_PORT/health" ||
  { tail -n 20 "$WORK/mlocal.log"; fail "local $BIN serve --model never answered /health 200"; }
texts='["A first sentence.","Une autre phrase, na\u00efve caf\u00e9.","\u6771\u4eac [CLS] x"]'
printf '{"input":%s}' "$texts" > "$WORK/v1.json"
printf '{"input":%s,"encoding_format":"base64","dimensions":1}' "$texts" > "$WORK/v1b64.json"
printf '{"inputs":%s,"pooling":"mean","normalize":false}' "$texts" > "$WORK/pooled.json"
for req in v1/embeddings:v1.json v1/embeddings:v1b64.json embed:pooled.json; do
  route=${req%%:*}; body=$WORK/${req#*:}
  for side in ctr local; do
    port=$MODEL_PORT; [[ $side == local ]] && port=$MLOCAL_PORT
    code=$(curl -s -m 30 -o "$WORK/$side.out" -w '%{http_code}' -H 'Content-Type: application/json' \
      --data-binary "@$body" "http://127.0.0.1:$port/$route")
    [[ $code == 200 ]] || { head -c 400 "$WORK/$side.out"; echo; fail "$side (model) POST /$route ($(basename "$body")) -> $code"; }
  done
  cmp -s "$WORK/ctr.out" "$WORK/local.out" ||
    fail "model container and local answers differ: POST /$route $(basename "$body")"
  say "model: same $(stat -c %s "$WORK/ctr.out") bytes: POST /$route $(basename "$body")"
  n=$((n + 1))
done
id=$(curl -s -m 10 "http://127.0.0.1:$MODEL_PORT/v1/models" | jq -r '.data[0].id' 2>/dev/null)
[[ $id == "$MNAME" ]] || fail "the model container's GET /v1/models names '${id:-?}', not $MNAME"
say "model: GET /v1/models -> $id; /models/$MNAME mounted read-only, TOKVEC_MODEL"
podman stop -t 40 "$CTR-model" >/dev/null 2> >(noise)
rc=$(podman inspect -f '{{.State.ExitCode}}' "$CTR-model")
[[ $rc == 0 ]] || { podman logs "$CTR-model" 2>&1 | tail -n 10; fail "model container exit code $rc after SIGTERM"; }
kill "$MPID" 2>/dev/null; wait "$MPID" 2>/dev/null; MPID=""

# --- 4. image hygiene and size ------------------------------------------------
user=$(podman image inspect -f '{{.Config.User}}' "$IMG")
[[ -n $user && $user != root && $user != 0 && $user != 0:0 ]] || fail "image runs as root (USER '$user')"
podman exec "$CTR" sh -c 'id -u' | grep -qx 0 && fail "container process runs as uid 0"
podman exec "$CTR" sh -c 'command -v cc || command -v gcc || command -v make || ls /usr/include/microhttpd.h' >/dev/null 2>&1 &&
  fail "the runtime image contains a compiler, make or headers"
[[ -z $(podman exec "$CTR" sh -c 'ls -A /var/lib/apt/lists 2>/dev/null') ]] || fail "apt lists left in the image"
podman exec "$CTR" sh -c 'touch /probe-write' 2>/dev/null && fail "root filesystem is writable (--read-only ignored?)"
pid1=$(podman exec "$CTR" cat /proc/1/cmdline | tr '\0' ' ')
[[ $pid1 == /usr/local/bin/tokvec\ serve* ]] || fail "PID 1 is '$pid1', not tokvec serve"
say "user $user, PID 1 = $pid1, no compiler/headers/apt lists, read-only root fs"

base=$(podman image inspect -f '{{.Size}}' docker.io/library/debian:bookworm-slim)
total=$(podman image inspect -f '{{.Size}}' "$IMG")
tsize=$(stat -c %s "$TABLE")
toksize=$(cat "$TOKDIR/encoder.json" "$TOKDIR/vocab.bpe" | wc -c)
added=$((total - base - tsize - toksize))
mb() { awk -v b="$1" 'BEGIN {printf "%.2f MB", b / 1e6}'; }
say "image $(mb "$total") = base $(mb "$base") + table $(mb "$tsize") + tokenizer $(mb "$toksize") + tokvec $(mb "$added") (binary, libs, user)"
podman history --format '{{.Size}}\t{{.CreatedBy}}' "$IMG" | awk -F'\t' '$1 != "0 B"' | cut -c1-110 |
  sed 's/^/[container-test]   /'
((added < 5000000)) || say "WARNING: tokvec adds $(mb "$added"), over the 5 MB goal"

# --- 5. SIGTERM ---------------------------------------------------------------
t0=$SECONDS
podman stop -t 40 "$CTR" >/dev/null 2> >(noise)
rc=$(podman inspect -f '{{.State.ExitCode}}' "$CTR")
[[ $rc == 0 ]] || { podman logs "$CTR" 2>&1 | tail -n 10; fail "container exit code $rc after SIGTERM"; }
say "SIGTERM -> exit 0 in $((SECONDS - t0))s"

echo "container-test: PASS ($n byte-for-byte comparisons, image $(mb "$total"), tokvec adds $(mb "$added"))"
