#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a while each. New inputs the
# fuzzer finds interesting stay in its cache; failing inputs are written by
# go test under the package's testdata/fuzz/<Target>/ and become part of the
# seed corpus once committed.
# Usage: scripts/fuzz.sh [duration]   (default 20s; make fuzz-long: 5m)
# FUZZ_PKGS limits the packages (a go list pattern, default ./...).
# FUZZ_SAVE_CORPUS=1 (make fuzz-long) also copies the inputs the fuzzer found
# interesting from the go build cache into testdata/fuzz/<Target>/, so that
# they are replayed by every go test run once committed.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=go1.27.3
d=${1:-20s}
cache=$(go env GOCACHE)/fuzz
failed=()
for pkg in $(go list ${FUZZ_PKGS:-./...}); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "== $pkg $f ($d)"
    if ! nice go test -run '^$' -fuzz "^$f\$" -fuzztime "$d" "$pkg"; then
      failed+=("$pkg $f")
    fi
    if [ "${FUZZ_SAVE_CORPUS:-0}" = 1 ] && [ -d "$cache/$pkg/$f" ]; then
      mkdir -p "$dir/testdata/fuzz/$f"
      cp -n "$cache/$pkg/$f"/* "$dir/testdata/fuzz/$f/" 2>/dev/null || true
    fi
  done
done
if [ ${#failed[@]} -gt 0 ]; then
  printf 'fuzz: failing targets (inputs under testdata/fuzz):\n'
  printf '  %s\n' "${failed[@]}"
  exit 1
fi
