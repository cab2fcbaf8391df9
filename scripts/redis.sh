#!/usr/bin/env bash
# redis.sh installs Debian's redis-server when it is missing, for the tests
# that share rate limits through a real Redis (internal/redistest starts
# their own instance on a loopback port; nothing here starts a server).
# Idempotent: it does nothing when redis-server is on the PATH. Installing
# needs root (apt-get), as on CI and the development machines.
set -euo pipefail

if command -v redis-server >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "redis.sh: redis-server is missing; install it as root: apt-get install -y redis-server" >&2
	exit 1
fi
echo "redis.sh: installing redis-server" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y --no-install-recommends redis-server >/dev/null 2>&1; then
	apt-get update >/dev/null
	apt-get install -y --no-install-recommends redis-server >/dev/null
fi
# The package may start a system service; the tests never use it.
if command -v systemctl >/dev/null 2>&1; then
	systemctl disable --now redis-server >/dev/null 2>&1 || true
fi
command -v redis-server >/dev/null
