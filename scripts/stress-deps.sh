#!/usr/bin/env bash
# stress-deps.sh installs what `make stress` needs beyond Go: Debian's
# iproute2 (ip netns, veth, bridge) and nftables (the partition row drops
# packets inside a network namespace). Idempotent: it does nothing when ip
# and nft are on the PATH. Installing needs root (apt-get), as the stress
# tests do (they create network namespaces).
set -euo pipefail

missing=()
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v nft >/dev/null 2>&1 || missing+=(nftables)
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "stress-deps.sh: ${missing[*]} missing; install as root: apt-get install -y ${missing[*]}" >&2
	exit 1
fi
echo "stress-deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
	apt-get update >/dev/null
	apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v ip >/dev/null && command -v nft >/dev/null
