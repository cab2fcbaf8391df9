#!/usr/bin/env bash
# prometheus.sh installs Debian's prometheus server when it is missing, for
# the test that proves the Grafana dashboard's queries against a real
# Prometheus (test/e2e/prometheus_test.go starts its own instance on a
# loopback port with a temporary config; nothing here starts a server).
# Idempotent: it does nothing when prometheus is on the PATH. Installing
# needs root (apt-get), as on CI and the development machines.
set -euo pipefail

if command -v prometheus >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "prometheus.sh: prometheus is missing; install it as root: apt-get install -y --no-install-recommends prometheus" >&2
	exit 1
fi
echo "prometheus.sh: installing prometheus" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y --no-install-recommends prometheus >/dev/null 2>&1; then
	apt-get update >/dev/null
	apt-get install -y --no-install-recommends prometheus >/dev/null
fi
# The package may start a system service on :9090; the test never uses it
# and the balancer's default admin port is the same.
if command -v systemctl >/dev/null 2>&1; then
	systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
command -v prometheus >/dev/null
