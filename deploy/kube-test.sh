#!/usr/bin/env bash
# kube-test.sh -- deploy/k8s/ run for real with `podman kube play` on this
# machine: the Deployment's pod with its ConfigMap and its table volume.
#
#   deploy/kube-test.sh                                (make deploy-check)
#
# 1. Builds localhost/tokvec:latest (podman, layers cached) and tags it
#    tokvec:0.1.0, the image deployment.yaml names.
# 2. pvc.yaml: `podman kube play` creates the volume tokvec-tables; the
#    table (data/gpt2-256.safetensors) is imported into it, as one would
#    populate the real ReadOnlyMany volume.
# 3. configmap.yaml + deployment.yaml (+ the other manifests, which podman
#    ignores) with `podman kube play`, changed in two places only, for one
#    host (see "What podman kube play needs" in deploy/README.md):
#    replicas 1, and hostPort KUBE_PORT on 127.0.0.1.
# 4. The container is as the manifests say: user 10001, read-only root, all
#    capabilities dropped, the table volume read-only, the ConfigMap's
#    settings in its environment; the pod becomes ready (/ready 200 on the
#    pod IP, polled as the kubelet would), its liveness probe (`podman
#    healthcheck run`) passes.
# 5. The textbook request {"inputs":[[40,1101,257]]}: the raw float32 answer
#    is bit-identical to PyTorch's torch.manual_seed(123);
#    nn.Embedding(50257, 256), nn.Embedding(1024, 256); tok(ids) +
#    pos(arange(3)) (Debian python3-torch), and the JSON answer holds the
#    same float32 values.
# 6. Drain: a large /embed is in flight (read at a limited rate) when tokvec
#    is stopped (SIGTERM, grace 45 s as terminationGracePeriodSeconds); the
#    answer arrives complete, tokvec exits 0; `podman kube down` removes the
#    pod; nothing is left (pods, volume). (podman 4.3: `kube down` alone
#    would SIGKILL, `pod stop` would cut the network under the drain.)
#
# Needs root; podman is set up by deploy/podman-base.sh, as for
# compose-test.sh. Bounded: KUBE_TEST_TIMEOUT (300 s) after the build.
# Env: TOKVEC_TABLE_FILE (data/gpt2-256.safetensors), KUBE_PORT (18480).
set -uo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/deploy/podman-base.sh"
deploy_args "$@"  # -h
TABLE=${TOKVEC_TABLE_FILE:-$TOP/data/gpt2-256.safetensors}
KUBE_PORT=${KUBE_PORT:-18480}
LIMIT=${KUBE_TEST_TIMEOUT:-300}
PYTHON=${PYTHON:-/usr/bin/python3}
K8S=$TOP/deploy/k8s
IMAGE=localhost/tokvec:0.1.0
VOLUME=tokvec-tables

say()  { echo "[kube-test] $*"; }
fail() { echo "kube-test: FAIL: $*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || fail "needs root (rootful podman)"
[[ -f $TABLE ]] || fail "$TABLE missing: make data/gpt2-256.safetensors (make deploy-check does)"

WORK=$(mktemp -d /tmp/kube-test.XXXXXX)
noise() { grep -v -e 'CNI config' -e 'systemd' -e 'syslog' >&2; }
teardown() {
  # podman 4.3's `kube down` SIGKILLs at once (fixed in podman 5.1) and `pod
  # stop` stops the infra container, and with it the pod's network, at the
  # same time as the others: stop tokvec first, with the grace period.
  local ctrs pods
  ctrs=$(podman ps -q --filter name='^tokvec-pod-[0-9]+-tokvec$' 2>/dev/null)
  [[ -n $ctrs ]] && timeout 60 podman stop -t 45 $ctrs >/dev/null 2>&1
  [[ -f $WORK/app.yaml ]] && timeout 60 podman kube down "$WORK/app.yaml" >/dev/null 2>&1
  pods=$(podman pod ps -q --filter name='^tokvec-pod-' 2>/dev/null)
  [[ -n $pods ]] && podman pod rm -f -t 0 $pods >/dev/null 2>&1
  podman volume rm -f "$VOLUME" >/dev/null 2>&1
}
WATCHDOG=""
CURL_PID=""
cleanup() {
  [[ -n $CURL_PID ]] && kill "$CURL_PID" 2>/dev/null
  teardown
  [[ -n $WATCHDOG ]] && kill "$WATCHDOG" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- tools -------------------------------------------------------------------------
podman_base
# catatonit: podman builds the pods' pause image from it. python3-torch: the
# reference for the textbook answer (~150 MB download the first time).
"$TOP/tools/deps.sh" catatonit curl python3-yaml python3-numpy python3-torch ||
  fail "tools/deps.sh catatonit curl python3-yaml python3-numpy python3-torch"

# --- 1. image ------------------------------------------------------------------------
t0=$SECONDS
timeout 900 nice -n 19 podman build --pull=never --format docker --layers -t localhost/tokvec:latest "$TOP" \
  >"$WORK/build.log" 2>&1 || { tail -n 30 "$WORK/build.log"; fail "podman build"; }
podman tag localhost/tokvec:latest "$IMAGE" || fail "podman tag $IMAGE"
say "built localhost/tokvec:latest in $((SECONDS - t0))s, tagged $IMAGE"

MAIN=$$
( sleep "$LIMIT" & sp=$!; trap 'kill $sp; exit 0' TERM; wait $sp
  echo "kube-test: FAIL: over ${LIMIT}s, stopping" >&2; kill -TERM "$MAIN" ) &
WATCHDOG=$!

# --- the manifests for one host --------------------------------------------------------
# pvc.yaml alone (the volume must hold the table before the pod starts), then
# everything else; podman skips Service, HorizontalPodAutoscaler and
# PodDisruptionBudget.
"$PYTHON" - "$K8S" "$WORK" "$KUBE_PORT" <<'EOF' || fail "could not derive the manifests"
import glob, os, sys, yaml
k8s, work, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
docs = [d for f in sorted(glob.glob(os.path.join(k8s, "*.yaml")))
        for d in yaml.safe_load_all(open(f)) if d]
pvc = [d for d in docs if d["kind"] == "PersistentVolumeClaim"]
app = [d for d in docs if d["kind"] != "PersistentVolumeClaim"]
dep = [d for d in app if d["kind"] == "Deployment"]
assert len(pvc) == 1 and len(dep) == 1, "one PVC and one Deployment expected"
dep = dep[0]
was = dep["spec"].get("replicas")
# One host: podman publishes every containerPort on the host, so replicas
# would collide on the port; pin it to loopback and a free port.
dep["spec"]["replicas"] = 1
for c in dep["spec"]["template"]["spec"]["containers"]:
    for p in c.get("ports", []):
        p["hostPort"], p["hostIP"] = port, "127.0.0.1"
yaml.safe_dump_all(pvc, open(os.path.join(work, "pvc.yaml"), "w"))
yaml.safe_dump_all(app, open(os.path.join(work, "app.yaml"), "w"))
print("[kube-test] manifests: %s; changed: Deployment replicas %s -> 1, "
      "hostPort %d on 127.0.0.1" % (", ".join(d["kind"] + "/" + d["metadata"]["name"]
                                              for d in docs), was, port))
EOF

# --- 2. the volume -------------------------------------------------------------------------
teardown  # leftovers of an interrupted run
curl -s -o /dev/null -m 2 "http://127.0.0.1:$KUBE_PORT/" && fail "something already answers on port $KUBE_PORT"
podman kube play "$WORK/pvc.yaml" >"$WORK/pvc.log" 2> >(noise) || fail "podman kube play pvc.yaml: $(cat "$WORK/pvc.log")"
podman volume exists "$VOLUME" || fail "kube play pvc.yaml made no volume $VOLUME"
# Under the name the ConfigMap's TOKVEC_TABLE gives it in the volume.
IN_POD=$("$PYTHON" -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["data"]["TOKVEC_TABLE"])' \
  "$K8S/configmap.yaml") || fail "no TOKVEC_TABLE in configmap.yaml"
[[ $IN_POD == /table/* ]] || fail "TOKVEC_TABLE=$IN_POD is not on the table volume (/table)"
tar -C "$(dirname "$TABLE")" -cf - --transform "s|.*|${IN_POD#/table/}|" "$(basename "$TABLE")" |
  podman volume import "$VOLUME" - || fail "podman volume import"
say "volume $VOLUME (from pvc.yaml) holds $IN_POD ($(stat -c %s "$TABLE") bytes)"

# --- 3. the pod --------------------------------------------------------------------------------
t0=$EPOCHREALTIME
podman kube play "$WORK/app.yaml" >"$WORK/play.log" 2> >(noise) ||
  { cat "$WORK/play.log"; fail "podman kube play"; }
mapfile -t PODS < <(podman pod ps --filter name='^tokvec-pod-' --format '{{.Name}}')
((${#PODS[@]} == 1)) || fail "expected 1 pod, found ${#PODS[@]}: ${PODS[*]}"
POD=${PODS[0]}
CTR=$POD-tokvec
podman container exists "$CTR" || fail "no container $CTR in pod $POD"
INFRA=$(podman pod inspect -f '{{.InfraContainerID}}' "$POD")
IP=$(podman inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}' "$INFRA" | awk '{print $1}')
[[ -n $IP ]] || fail "no IP address for pod $POD"
URL=http://$IP:8080

# --- 4. as the manifests say ----------------------------------------------------------------
insp() { podman inspect -f "$1" "$CTR"; }
[[ $(insp '{{.Config.User}}') == 10001:10001 ]] || fail "user $(insp '{{.Config.User}}'), not 10001:10001 (runAsUser)"
[[ $(insp '{{.HostConfig.ReadonlyRootfs}}') == true ]] || fail "root filesystem not read-only"
caps=$(podman exec "$CTR" sh -c 'grep ^CapEff /proc/1/status' | awk '{print $2}')
[[ $caps == 0000000000000000 ]] || fail "effective capabilities $caps, not none (drop: [ALL])"
mnt=$(insp '{{range .Mounts}}{{.Name}}:{{.Destination}}:{{.RW}} {{end}}')
[[ $mnt == *"$VOLUME:/table:false"* ]] || fail "table volume not mounted read-only at /table: $mnt"
env=$(insp '{{range .Config.Env}}{{println .}}{{end}}')
for kv in $("$PYTHON" -c 'import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    for k, v in d["data"].items(): print("%s=%s" % (k, v))' "$K8S/configmap.yaml"); do
  grep -qxF "$kv" <<<"$env" || fail "ConfigMap setting $kv not in the container's environment"
done
say "pod $POD ($IP): user 10001, read-only root, no capabilities, $VOLUME read-only at /table, ConfigMap settings in the environment"

ready=""
for _ in $(seq 1 240); do
  [[ $(curl -s -o /dev/null -m 2 -w '%{http_code}' "$URL/ready") == 200 ]] && { ready=1; break; }
  [[ $(insp '{{.State.Status}}') == exited ]] && break
  sleep 0.25
done
[[ -n $ready ]] || { podman logs "$CTR" 2>&1 | tail -n 20; fail "the pod never answered /ready 200"; }
say "ready (/ready 200) $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}')s after kube play"
podman healthcheck run "$CTR" >/dev/null 2> >(noise) || fail "the liveness probe (podman healthcheck run) failed"
say "liveness probe (tokvec probe .../health): healthy"
podman logs "$CTR" 2>&1 | grep -F "table=$IN_POD" >/dev/null ||
  fail "the pod does not serve the volume's table: $(podman logs "$CTR" 2>&1 | head -n 1)"

# --- 5. the textbook request, torch-exactly --------------------------------------------------
body='{"inputs":[[40,1101,257]]}'
code=$(curl -s -m 10 -o "$WORK/tb.bin" -w '%{http_code}' -H 'Content-Type: application/json' \
  -H 'Accept: application/octet-stream' --data-binary "$body" "$URL/embed")
[[ $code == 200 ]] || fail "textbook request (octet-stream) -> $code"
code=$(curl -s -m 10 -o "$WORK/tb.json" -w '%{http_code}' -H 'Content-Type: application/json' \
  --data-binary "$body" "$URL/embed")
[[ $code == 200 ]] || fail "textbook request (JSON) -> $code"
"$PYTHON" - "$WORK/tb.bin" "$WORK/tb.json" <<'EOF' || fail "the pod's textbook answer is not PyTorch's"
import json, sys
import numpy as np
import torch
torch.manual_seed(123)
tok = torch.nn.Embedding(50257, 256)
pos = torch.nn.Embedding(1024, 256)
with torch.no_grad():
    want = (tok(torch.tensor([[40, 1101, 257]])) + pos(torch.arange(3))).numpy()
raw = open(sys.argv[1], "rb").read()
assert raw == want.astype("<f4").tobytes(), "raw float32 bytes differ from torch"
j = json.load(open(sys.argv[2]))
assert j["shape"] == [1, 3, 256] and j["dtype"] == "float32", (j["shape"], j["dtype"])
got = np.array(j["embeddings"], dtype=np.float32)
assert got.tobytes() == want.tobytes(), "JSON values differ from torch"
print("[kube-test] textbook request: %d float32 (raw and JSON) bit-identical to torch %s "
      "(first: %r)" % (want.size, torch.__version__, float(want[0, 0, 0])))
EOF

# --- 6. drain: SIGTERM with a request in flight, then kube down ---------------------------
# 16 x 1024 tokens as JSON (~46 MB) read at 8 MB/s: several seconds in flight
# (above tokvec's min_send_rate, so it is a slow reader, not a stalled one).
"$PYTHON" -c 'import json; print(json.dumps({"inputs": [[(7 * i + b) % 50257 for i in range(1024)] for b in range(16)]}))' > "$WORK/big.json"
curl -s -m 60 --limit-rate 8M -o "$WORK/big.out" -D "$WORK/big.hdr" -w '%{http_code}' \
  -H 'Content-Type: application/json' --data-binary "@$WORK/big.json" "$URL/embed" > "$WORK/big.code" &
CURL_PID=$!
inflight=""
for _ in $(seq 1 100); do
  n=$(curl -s -m 2 "$URL/metrics" | awk '$1 == "tokvec_inflight_requests" {print $2}')
  [[ -n $n && $n -ge 1 ]] && { inflight=1; break; }
  sleep 0.05
done
[[ -n $inflight ]] || fail "the large request never showed in tokvec_inflight_requests"
t0=$SECONDS
podman stop -t 45 "$CTR" >/dev/null 2> >(noise) || fail "podman stop $CTR"
rc=$(insp '{{.State.ExitCode}}')
wait "$CURL_PID"; CURL_PID=""
code=$(cat "$WORK/big.code")
[[ $rc == 0 ]] || { podman logs "$CTR" 2>&1 | tail -n 10; fail "tokvec exit code $rc after SIGTERM"; }
[[ $code == 200 ]] || fail "the request in flight during SIGTERM -> '$code'"
len=$(awk 'tolower($1) == "content-length:" {print $2 + 0}' "$WORK/big.hdr")
[[ -n $len && $(stat -c %s "$WORK/big.out") == "$len" ]] ||
  fail "the request in flight was cut: $(stat -c %s "$WORK/big.out") of ${len:-?} bytes"
"$PYTHON" -c 'import json, sys; j = json.load(open(sys.argv[1])); assert j["shape"] == [16, 1024, 256]' \
  "$WORK/big.out" || fail "the answer of the request in flight is not the whole JSON"
podman logs "$CTR" 2>&1 | grep -i drain >/dev/null || say "note: no drain line in the log"
say "SIGTERM with a $len-byte answer in flight: answered completely, tokvec exit 0, $((SECONDS - t0))s"
podman kube down "$WORK/app.yaml" >/dev/null 2> >(noise) || fail "podman kube down"
left=$(podman pod ps -q --filter name='^tokvec-pod-')
[[ -z $left ]] || fail "pods left after kube down: $left"
say "podman kube down: pod removed"

echo "kube-test: PASS (deploy/k8s/ under podman kube play $(podman version -f '{{.Client.Version}}' 2>/dev/null): ready, torch-exact, drained)"
