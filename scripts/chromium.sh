#!/usr/bin/env bash
# chromium.sh installs Debian's chromium when it is missing, for the web UI
# test (test/e2e/ui_test.go), which drives it headless over the DevTools
# protocol. Idempotent: it does nothing when chromium is on the PATH.
# Installing needs root (apt-get), as on CI and the development machines.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "chromium.sh: chromium is missing; install it as root: apt-get install -y chromium" >&2
	exit 1
fi
echo "chromium.sh: installing chromium" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y --no-install-recommends chromium fonts-dejavu-core >/dev/null 2>&1; then
	apt-get update >/dev/null
	apt-get install -y --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi
command -v chromium >/dev/null
