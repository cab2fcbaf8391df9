#!/usr/bin/env bash
# Builds the inferrail image (Dockerfile) with docker or podman, whichever
# has a working engine. Without one it says so and exits 0, so `make image`
# never fails on a machine that cannot build images.
# Usage: scripts/image.sh   (IMAGE=repo/name, VERSION=tag override)
set -euo pipefail
cd "$(dirname "$0")/.."
image=${IMAGE:-ghcr.io/inferrail/inferrail}
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
created=$(date -u +%Y-%m-%dT%H:%M:%SZ)

engine=""
for e in docker podman; do
  # A client without a reachable engine (no daemon, no socket) does not count.
  if command -v "$e" >/dev/null 2>&1 && "$e" info >/dev/null 2>&1; then
    engine=$e
    break
  fi
done
if [ -z "$engine" ]; then
  found=$(for e in docker podman; do if command -v "$e" >/dev/null 2>&1; then printf "%s " "$e"; fi; done)
  found=${found% }
  echo "make image: no working container engine here (clients found: ${found:-none}; 'docker info' and 'podman info' both fail)."
  echo "make image: skipped; run it where docker or podman can build images."
  exit 0
fi
tag=${version//+/_}
echo "make image: building $image:$tag with $engine"
DOCKER_BUILDKIT=1 "$engine" build \
  --build-arg VERSION="$version" --build-arg REVISION="$revision" --build-arg CREATED="$created" \
  -t "$image:$tag" .
echo "make image: built $image:$tag"
