#!/bin/sh
# deps.sh -- make sure the Debian packages tokvec builds and tests with are
# installed. As root it installs what is missing with apt-get; otherwise it
# prints the exact command and fails. Usage: tools/deps.sh PKG...
set -eu
missing=""
for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
        missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "deps: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
    exit 0
fi
echo "deps: missing Debian packages:$missing" >&2
echo "deps: run: sudo apt-get install -y --no-install-recommends$missing" >&2
exit 1
