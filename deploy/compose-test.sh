#!/usr/bin/env bash
# compose-test.sh -- deploy/compose.yaml end to end: N tokvec replicas behind
# nginx, one table file mounted read-only into all of them, Prometheus
# scraping every replica.
#
#   deploy/compose-test.sh                                        (make compose-test)
#
# Builds localhost/tokvec:latest, localhost/tokvec-nginx:latest and
# localhost/tokvec-prometheus:latest (podman, layers cached), `podman-compose
# up -d`, waits for every replica's /ready and the balancer, sends requests
# through the balancer (all must answer 200 with the same bytes), reads every
# replica's /metrics and requires that each one served /embed requests
# (tokvec_requests_total), then queries Prometheus's HTTP API until it has
# scraped every replica (up == 1) and holds for each one the very
# tokvec_requests_total{route="/embed"} the replica reports itself, and has
# loaded the alert rules; stops one replica (SIGTERM: exit 0) and checks the
# balancer keeps answering, then tears down.
# Bounded: the whole run is killed after COMPOSE_TEST_TIMEOUT (300 s).
#
# Env: REPLICAS (3), REQUESTS (per replica, 20), TOKVEC_TABLE_FILE (default
# data/gpt2-256.safetensors), TOKVEC_LB_PORT (18090), TOKVEC_PROM_PORT (19090),
# COMPOSE_TEST_TIMEOUT (300).
set -uo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/deploy/podman-base.sh"
deploy_args "$@"  # -h
REPLICAS=${REPLICAS:-3}
PER=${REQUESTS:-20}
export TOKVEC_TABLE_FILE=${TOKVEC_TABLE_FILE:-$TOP/data/gpt2-256.safetensors}
export TOKVEC_LB_PORT=${TOKVEC_LB_PORT:-18090}
export TOKVEC_PROM_PORT=${TOKVEC_PROM_PORT:-19090}
export TOKVEC_REPLICAS=$REPLICAS
LIMIT=${COMPOSE_TEST_TIMEOUT:-300}
PROJECT=tokvec-compose-test
COMPOSE=(podman-compose -p "$PROJECT" -f "$TOP/deploy/compose.yaml")
LB=http://127.0.0.1:$TOKVEC_LB_PORT
PROM=http://127.0.0.1:$TOKVEC_PROM_PORT

say()  { echo "[compose-test] $*"; }
fail() { echo "compose-test: FAIL: $*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || fail "needs root (rootful podman)"
[[ -f $TOKVEC_TABLE_FILE ]] || fail "$TOKVEC_TABLE_FILE missing: make data/gpt2-256.safetensors (make compose-test does)"
TOKVEC_TABLE_FILE=$(cd "$(dirname "$TOKVEC_TABLE_FILE")" && pwd)/$(basename "$TOKVEC_TABLE_FILE")

WORK=$(mktemp -d /tmp/compose-test.XXXXXX)
noise() { grep -v -e 'CNI config' -e 'systemd connection' >&2; }
teardown() {
  # podman-compose 1.0 `down` gives containers 1 s before SIGKILL and ignores
  # stop_grace_period: stop them with the drain time first.
  local ids
  ids=$(podman ps -aq --filter "label=io.podman.compose.project=$PROJECT" 2>/dev/null)
  [[ -n $ids ]] && timeout 60 podman stop -t 35 $ids >/dev/null 2>&1
  timeout 60 "${COMPOSE[@]}" down -v >"$WORK/down.log" 2>&1 || cat "$WORK/down.log" >&2
  ids=$(podman ps -aq --filter "label=io.podman.compose.project=$PROJECT" 2>/dev/null)
  [[ -n $ids ]] && podman rm -f -t 0 $ids >/dev/null 2>&1
}
WATCHDOG=""
cleanup() { teardown; [[ -n $WATCHDOG ]] && kill "$WATCHDOG" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- tools: podman (deploy/podman-base.sh: config, base image), compose -------
podman_base
if ! command -v podman-compose >/dev/null; then
  say "apt-get install podman-compose"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends podman-compose >/dev/null 2>&1 ||
    { apt-get update >/dev/null 2>&1 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends podman-compose >/dev/null; } ||
    fail "apt-get install podman-compose"
fi
command -v curl >/dev/null || fail "curl missing"
"$TOP/tools/deps.sh" jq >/dev/null || fail "jq missing (apt-get install jq)"

# --- images ---------------------------------------------------------------------
build() {  # TAG CONTEXT DOCKERFILE
  local t0=$SECONDS
  timeout 900 podman build --pull=never --format docker --layers -t "$1" -f "$3" "$2" >"$WORK/build.log" 2>&1 ||
    { tail -n 30 "$WORK/build.log"; fail "podman build $1"; }
  say "built $1 in $((SECONDS - t0))s"
}
build localhost/tokvec:latest "$TOP" "$TOP/Dockerfile"
build localhost/tokvec-nginx:latest "$TOP/deploy" "$TOP/deploy/nginx.Dockerfile"
build localhost/tokvec-prometheus:latest "$TOP/deploy" "$TOP/deploy/prometheus.Dockerfile"

# Watchdog: from here on (images built), the test and its teardown are bounded.
# (The sleep is killed with the watchdog so no process outlives the test.)
MAIN=$$
( sleep "$LIMIT" & sp=$!; trap 'kill $sp; exit 0' TERM; wait $sp
  echo "compose-test: FAIL: over ${LIMIT}s, stopping" >&2; kill -TERM "$MAIN" ) &
WATCHDOG=$!

# --- up ---------------------------------------------------------------------------
curl -s -o /dev/null -m 2 "$LB/" && fail "something already answers on $LB"
curl -s -o /dev/null -m 2 "$PROM/" && fail "something already answers on $PROM"
teardown  # leftovers of an interrupted run
say "podman-compose up: $REPLICAS replicas + nginx, table $TOKVEC_TABLE_FILE (read-only)"
timeout 120 "${COMPOSE[@]}" up -d --no-build >"$WORK/up.log" 2>&1 ||
  { grep -v 'CNI config' "$WORK/up.log" | tail -n 30; fail "podman-compose up"; }

mapfile -t CTRS < <(podman ps -a --filter "label=io.podman.compose.project=$PROJECT" \
  --filter "label=com.docker.compose.service=tokvec" --format '{{.Names}}' | sort)
((${#CTRS[@]} == REPLICAS)) || fail "expected $REPLICAS tokvec containers, found ${#CTRS[@]}: ${CTRS[*]}"
declare -A IP
for c in "${CTRS[@]}"; do
  IP[$c]=$(podman inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}' "$c" | awk '{print $1}')
  [[ -n ${IP[$c]} ]] || fail "no IP address for $c"
done

# --- wait for every replica's /ready, then for the balancer ---------------------
wait_200() {  # URL SECONDS
  local end=$((SECONDS + $2))
  while ((SECONDS < end)); do
    [[ $(curl -s -o /dev/null -m 2 -w '%{http_code}' "$1") == 200 ]] && return 0
    sleep 0.5
  done
  return 1
}
for c in "${CTRS[@]}"; do
  wait_200 "http://${IP[$c]}:8080/ready" 60 ||
    { podman logs "$c" 2>&1 | tail -n 20; fail "$c (${IP[$c]}) never answered /ready 200"; }
  # the compose health check, run once by hand (periodic ones need systemd)
  podman healthcheck run "$c" >/dev/null 2> >(noise) || say "note: podman healthcheck run $c did not report healthy"
done
say "all $REPLICAS replicas ready: $(for c in "${CTRS[@]}"; do printf '%s=%s ' "$c" "${IP[$c]}"; done)"
LBC=$(podman ps -a --filter "label=io.podman.compose.project=$PROJECT" \
  --filter "label=com.docker.compose.service=lb" --format '{{.Names}}' | head -n 1)
wait_200 "$LB/health" 60 ||
  { podman logs "$LBC" 2>&1 | tail -n 20; fail "balancer $LB/health never answered 200"; }

# --- traffic through the balancer ------------------------------------------------
embed_count() {  # CONTAINER -> sum of tokvec_requests_total for the /embed route
  curl -s -m 5 "http://${IP[$1]}:8080/metrics" |
    awk '/^tokvec_requests_total\{/ && /embed/ {s += $NF} END {printf "%d\n", s}'
}
declare -A BEFORE
for c in "${CTRS[@]}"; do BEFORE[$c]=$(embed_count "$c"); done
N=$((PER * REPLICAS))
body='{"inputs":[[40,1101,257]]}'
t0=$EPOCHREALTIME
for i in $(seq 1 "$N"); do
  code=$(curl -s -m 10 -o "$WORK/r.$((i % 2))" -w '%{http_code}' -H 'Content-Type: application/json' \
    -H 'Accept: application/octet-stream' --data-binary "$body" "$LB/embed")
  [[ $code == 200 ]] || { head -c 300 "$WORK/r.$((i % 2))"; echo; fail "request $i through the balancer -> $code"; }
  if ((i == 1)); then cp "$WORK/r.1" "$WORK/first"
  else cmp -s "$WORK/r.$((i % 2))" "$WORK/first" || fail "request $i: answer differs from the first one"; fi
done
say "$N POST /embed through nginx: all 200, identical bytes ($(stat -c %s "$WORK/first") B), $(awk -v a="$t0" -v b="$EPOCHREALTIME" -v n="$N" 'BEGIN {printf "%.1f ms/request", (b - a) * 1000 / n}')"

# A page served through the balancer calls it (same origin: nginx passes the
# Host with its port); a page of another origin is refused (SECURITY.md).
for o in "$LB" "http://evil.example"; do
  code=$(curl -s -m 10 -o "$WORK/o" -w '%{http_code}' -H 'Content-Type: text/plain' \
    -H "Origin: $o" --data-binary "$body" "$LB/embed")
  want=200; [[ $o == "$LB" ]] || want=403
  [[ $code == "$want" ]] || { head -c 300 "$WORK/o"; echo; fail "POST /embed with Origin $o -> $code, not $want"; }
done
say "through nginx: POST /embed from the balancer's own origin 200, from another origin 403"

total=0; line=""
for c in "${CTRS[@]}"; do
  d=$(( $(embed_count "$c") - ${BEFORE[$c]} ))
  line+="$c=$d "
  ((d > 0)) || fail "replica $c served no /embed request (tokvec_requests_total): $line"
  total=$((total + d))
done
say "per replica /embed (tokvec_requests_total): $line(sum $total)"
((total >= N)) || fail "the replicas counted $total /embed requests, fewer than the $N sent"

# --- Prometheus: every replica scraped, the same counts as the replicas' own -----
# Prometheus names a target by the address DNS gave it, so instance = IP:8080.
promq() {  # PROMQL -> "instance value" lines
  curl -s -m 5 -G "$PROM/api/v1/query" --data-urlencode "query=$1" |
    jq -r 'select(.status == "success") | .data.result[] | "\(.metric.instance) \(.value[1])"' 2>/dev/null
}
declare -A NOW
for c in "${CTRS[@]}"; do NOW[$c]=$(embed_count "$c"); done
want=$(for c in "${CTRS[@]}"; do echo "${IP[$c]}:8080 ${NOW[$c]}"; done | sort)
PQ='sum by (instance) (tokvec_requests_total{job="tokvec", route="/embed"})'
t0=$SECONDS; got=""
while ((SECONDS - t0 < 90)); do
  got=$(promq "$PQ" | sort)
  [[ $got == "$want" ]] && break
  sleep 1
done
[[ $got == "$want" ]] || { PC=$(podman ps -a --filter "label=io.podman.compose.project=$PROJECT" \
    --filter "label=com.docker.compose.service=prometheus" --format '{{.Names}}' | head -n 1)
  podman logs "$PC" 2>&1 | tail -n 15
  fail "Prometheus $PQ after 90 s: [$(echo $got)], the replicas say: [$(echo $want)]"; }
say "Prometheus has tokvec_requests_total of all $REPLICAS replicas after $((SECONDS - t0))s, equal to theirs: $(echo $got)"
up=$(promq 'up{job="tokvec"} == 1' | wc -l)
((up == REPLICAS)) || fail "Prometheus sees $up targets up, not $REPLICAS"
# Rules report health "ok" once evaluated (evaluation_interval 15 s).
t1=$SECONDS
while :; do
  rules=$(curl -s -m 5 "$PROM/api/v1/rules" |
    jq -r '[.data.groups[].rules[] | select(.type == "alerting" and .health == "ok")] | length' 2>/dev/null)
  [[ $rules == 6 ]] && break
  ((SECONDS - t1 < 40)) || fail "Prometheus has ${rules:-no} healthy alerting rules, not the 6 of alerts.yml"
  sleep 1
done
say "Prometheus: $up targets up, $rules alert rules loaded"

# Memory: the table is one page-cache copy; each replica's private memory is RssAnon.
for c in "${CTRS[@]}"; do
  podman exec "$c" sh -c 'grep -E "^(VmRSS|RssAnon|RssFile)" /proc/1/status' 2>/dev/null |
    awk -v c="$c" '{sub(":", "", $1); printf "%s %s=%s kB", (NR == 1 ? "[compose-test] memory " c ":" : ""), $1, $2} END {print ""}'
done

# --- one replica drains: SIGTERM -> exit 0, the balancer keeps answering ---------
victim=${CTRS[0]}
t0=$SECONDS
podman stop -t 35 "$victim" >/dev/null 2> >(noise)
rc=$(podman inspect -f '{{.State.ExitCode}}' "$victim")
[[ $rc == 0 ]] || { podman logs "$victim" 2>&1 | tail -n 10; fail "$victim exit code $rc after SIGTERM"; }
say "$victim stopped by SIGTERM in $((SECONDS - t0))s, exit 0"
for i in $(seq 1 $((2 * REPLICAS))); do
  code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary "$body" "$LB/embed")
  [[ $code == 200 ]] || fail "with $victim stopped, request $i through the balancer -> $code"
done
say "with $victim stopped, $((2 * REPLICAS)) requests through nginx: all 200"

echo "compose-test: PASS ($REPLICAS replicas behind nginx, $N requests, every replica answered)"
