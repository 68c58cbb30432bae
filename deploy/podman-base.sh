# deploy/podman-base.sh -- sourced by compose-test.sh and kube-test.sh: makes
# sure podman runs with the configuration container-check.sh writes (runc,
# cgroupfs, ulimits) and that the local debian:bookworm-slim base image
# exists, building both with ../shared/tools/container-check.sh the first
# time. Expects $TOOLS (where container-check.sh is) and the caller's say()
# and fail(); exports CONTAINERS_CONF.
export CONTAINERS_CONF=/var/tmp/container-check/containers.conf
if ! command -v podman >/dev/null || [[ ! -f $CONTAINERS_CONF ]] ||
   ! podman image exists docker.io/library/debian:bookworm-slim 2>/dev/null; then
  [[ -f $TOOLS/container-check.sh ]] ||
    fail "podman base not set up and $TOOLS/container-check.sh not found (expected in ../shared/tools beside the checkout; --tools DIR)"
  say "setting up podman and the local debian:bookworm-slim with container-check.sh"
  T=$(mktemp -d); printf 'FROM debian:bookworm-slim\nCMD ["true"]\n' > "$T/Dockerfile"
  bash "$TOOLS/container-check.sh" "$T" -x -t 1 >/dev/null 2>&1; rm -rf "$T"
  podman image exists docker.io/library/debian:bookworm-slim || fail "could not build the base image"
fi
