#!/usr/bin/env bash
# deploy/podman-base.sh -- rootful podman for tokvec's container targets
# (make image, container-test, compose-test, kube-test), set up from this
# checkout and the machine's Debian apt mirror alone: no registry, no
# Docker engine, nothing outside the repository.
#
#   bash deploy/podman-base.sh      set up (idempotent), print CONTAINERS_CONF
#   . deploy/podman-base.sh         (TOP set: the checkout) defines:
#     deploy_args "$@"  the scripts' arguments: -h/--help prints the
#                       calling script's header comment
#     podman_base       the set-up below, then exports CONTAINERS_CONF;
#                       uses the caller's say() and fail()
#
# The set-up, each step skipped when already done:
# 1. Debian packages: podman, runc (crun 1.8 refuses a hybrid cgroup v1/v2
#    host), netavark, aardvark-dns, iptables, debootstrap, curl
#    (tools/deps.sh).
# 2. A podman configuration of our own, $TOKVEC_PODMAN_STATE/containers.conf
#    (default /var/tmp/tokvec-podman; /etc/containers is left alone): runc,
#    cgroupfs, file events, and ulimits no higher than this process's hard
#    limits (podman's rootful defaults, nofile 1048576 and nproc 4194304,
#    fail where a sandbox forbids raising them).
# 3. The base image the Dockerfile names, debian:bookworm-slim, made
#    locally: debootstrap --variant=minbase from the mirror apt uses here,
#    slimmed as the official -slim image (no docs, man pages, locales, apt
#    lists), imported as docker.io/library/debian:bookworm-slim so that an
#    unmodified FROM resolves with --pull=never. ~1 min the first time
#    (BASE_REBUILD=1 makes it again).
# Needs root. Logs: $TOKVEC_PODMAN_STATE/.

PODMAN_STATE=${TOKVEC_PODMAN_STATE:-/var/tmp/tokvec-podman}
PODMAN_BASE_IMAGE=docker.io/library/debian:bookworm-slim

deploy_args() {
  local me; me=$(basename "$0" .sh)
  while (($#)); do case $1 in
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0;;
    *) echo "$me: unknown argument $1" >&2; exit 2;; esac; done
}

# The hard limit of ulimit option $1, capped at $2.
podman_limit() {
  local v; v=$(ulimit -H "$1")
  [[ $v == unlimited || $v -gt $2 ]] && v=$2
  echo "$v"
}

podman_base() {
  [[ $(id -u) == 0 ]] || fail "podman set-up needs root (rootful podman)"
  "$TOP/tools/deps.sh" podman runc netavark aardvark-dns iptables \
    debootstrap curl >&2 || fail "tools/deps.sh podman runc ... (see above)"
  mkdir -p "$PODMAN_STATE"
  local nofile nproc
  nofile=$(podman_limit -n 1048576); nproc=$(podman_limit -u 32768)
  cat > "$PODMAN_STATE/containers.conf.new" <<CONF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
  mv "$PODMAN_STATE/containers.conf.new" "$PODMAN_STATE/containers.conf"
  export CONTAINERS_CONF=$PODMAN_STATE/containers.conf
  if [[ ${BASE_REBUILD:-0} != 1 ]] &&
     podman image exists "$PODMAN_BASE_IMAGE" 2>/dev/null; then
    return 0
  fi
  local targets mirror root
  targets=$(apt-get indextargets --format \
    '$(TARGET_OF) $(REPO_URI) $(RELEASE) $(COMPONENT)' | sort -u)
  mirror=$(awk '$1=="deb" && $3=="bookworm" {print $2; exit}' <<<"$targets")
  [[ -n $mirror ]] || fail "no bookworm mirror in the apt sources"
  say "building $PODMAN_BASE_IMAGE: debootstrap --variant=minbase bookworm from $mirror (~1 min)"
  root=$(mktemp -d "$PODMAN_STATE/rootfs.XXXXXX")
  if ! debootstrap --variant=minbase bookworm "$root" "$mirror" \
       > "$PODMAN_STATE/debootstrap.log" 2>&1; then
    rm -rf "$root"; fail "debootstrap (see $PODMAN_STATE/debootstrap.log)"
  fi
  # The host's suites inside the image too (main, updates, security).
  awk '$1=="deb" && $3 ~ /^bookworm(-updates|-security)?$/ {print "deb", $2, $3, $4}' \
    <<<"$targets" > "$root/etc/apt/sources.list"
  printf '%s\n' 'path-exclude /usr/share/doc/*' \
    'path-include /usr/share/doc/*/copyright' 'path-exclude /usr/share/man/*' \
    'path-exclude /usr/share/info/*' 'path-exclude /usr/share/locale/*' \
    'path-exclude /usr/share/lintian/*' > "$root/etc/dpkg/dpkg.cfg.d/docker"
  find "$root/usr/share/doc" -type f ! -name copyright -delete
  rm -rf "$root"/usr/share/{man,info,locale,lintian}/* \
    "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin \
    "$root"/var/lib/apt/lists/* "$root/etc/hostname"
  : > "$root/etc/resolv.conf"
  if ! tar --numeric-owner -C "$root" -c . |
       podman import -q --change 'CMD ["bash"]' \
         --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
         - "$PODMAN_BASE_IMAGE" >/dev/null; then
    rm -rf "$root"; fail "podman import of the base image"
  fi
  rm -rf "$root"
}

# Run, not sourced: set up and say where the configuration is.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -uo pipefail
  TOP=$(cd "$(dirname "$0")/.." && pwd)
  say()  { echo "[podman-base] $*" >&2; }
  fail() { echo "podman-base: FAIL: $*" >&2; exit 1; }
  podman_base
  echo "$CONTAINERS_CONF"
fi
