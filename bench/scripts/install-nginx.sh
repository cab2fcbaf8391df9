#!/bin/sh
# Installs nginx from Debian for the external baseline of `inferrail bench
# compare` (round robin and least_conn in front of the same simulators).
# Idempotent: does nothing when an nginx binary is already on the PATH or in
# /usr/sbin.
set -eu
if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
	exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
# nginx-light is the small build (upstream, proxy, least_conn); newer Debian
# releases fold it into the nginx package.
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nginx-light ||
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nginx
