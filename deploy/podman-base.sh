# deploy/podman-base.sh -- sourced by compose-test.sh and kube-test.sh (TOP
# set: the checkout). Defines:
#   deploy_args "$@"  the scripts' arguments: --tools DIR (where
#                     container-check.sh is; default ../shared/tools beside
#                     the checkout), -h/--help (the calling script's header
#                     comment); sets TOOLS.
#   podman_base       makes sure podman runs with the configuration
#                     container-check.sh writes (runc, cgroupfs, ulimits) and
#                     that the local debian:bookworm-slim base image exists,
#                     building both with container-check.sh the first time;
#                     uses the caller's say() and fail(); exports
#                     CONTAINERS_CONF.
TOOLS=$TOP/../shared/tools

deploy_args() {
  local me; me=$(basename "$0" .sh)
  while (($#)); do case $1 in
    --tools) TOOLS=$2; shift 2;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0;;
    *) echo "$me: unknown argument $1" >&2; exit 2;; esac; done
}

podman_base() {
  export CONTAINERS_CONF=/var/tmp/container-check/containers.conf
  if ! command -v podman >/dev/null || [[ ! -f $CONTAINERS_CONF ]] ||
     ! podman image exists docker.io/library/debian:bookworm-slim 2>/dev/null; then
    [[ -f $TOOLS/container-check.sh ]] ||
      fail "podman base not set up and $TOOLS/container-check.sh not found (expected in ../shared/tools beside the checkout; --tools DIR)"
    say "setting up podman and the local debian:bookworm-slim with container-check.sh"
    local T; T=$(mktemp -d); printf 'FROM debian:bookworm-slim\nCMD ["true"]\n' > "$T/Dockerfile"
    bash "$TOOLS/container-check.sh" "$T" -x -t 1 >/dev/null 2>&1; rm -rf "$T"
    podman image exists docker.io/library/debian:bookworm-slim || fail "could not build the base image"
  fi
}
