#!/usr/bin/env bash
# under-load.sh CMD [ARGS...] runs CMD while Debian's stress-ng keeps
# LOAD_CPUS (default 2) CPU workers busy, as another build sharing the cores
# would, and stops them when CMD ends (its status is CMD's). It installs
# stress-ng with apt-get when it is missing (as root).
# Used by make flakes (the tests that flaked, -count=30 under load) and
# make test-loaded (make test under load).
set -euo pipefail
if ! command -v stress-ng >/dev/null 2>&1; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "under-load.sh: stress-ng missing; install as root: apt-get install -y stress-ng" >&2
		exit 1
	fi
	echo "under-load.sh: installing stress-ng" >&2
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y --no-install-recommends stress-ng >/dev/null 2>&1; then
		apt-get update >/dev/null
		apt-get install -y --no-install-recommends stress-ng >/dev/null
	fi
fi
stress-ng --cpu "${LOAD_CPUS:-2}" --timeout 6h --quiet &
load=$!
trap 'kill "$load" 2>/dev/null || true; wait "$load" 2>/dev/null || true' EXIT
"$@"
