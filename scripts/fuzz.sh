#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a while each. New inputs the
# fuzzer finds interesting stay in its cache; failing inputs are written by
# go test under the package's testdata/fuzz/<Target>/ and become part of the
# seed corpus once committed.
# Usage: scripts/fuzz.sh [duration]   (default 20s; make fuzz-long: 2m)
# FUZZ_PKGS limits the packages (a go list pattern, default ./...).
# FUZZ_SHARD=k/n runs only every n-th target, starting with the k-th (1-based;
# the targets in go list order, then by name), so a long pass can be split
# over several runs: FUZZ_SHARD=1/2, then FUZZ_SHARD=2/2.
# FUZZ_LOG (default bin/fuzz-results.tsv) gets one line per target: the time,
# the commit (with "+dirty" for a changed tree), package, target, duration
# and ok or FAIL.
# FUZZ_SAVE_CORPUS=1 (make fuzz-long) also copies the inputs the fuzzer found
# interesting from the go build cache into testdata/fuzz/<Target>/, so that
# they are replayed by every go test run once committed.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=go1.27.3
d=${1:-20s}
shard=${FUZZ_SHARD:-1/1}
k=${shard%/*}
n=${shard#*/}
if ! [[ "$k" =~ ^[0-9]+$ && "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$k" -lt 1 ] || [ "$k" -gt "$n" ]; then
  echo "fuzz: FUZZ_SHARD must be k/n with 1 <= k <= n, got $shard" >&2
  exit 2
fi
log=${FUZZ_LOG:-bin/fuzz-results.tsv}
mkdir -p "$(dirname "$log")"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="$commit+dirty"; fi
cache=$(go env GOCACHE)/fuzz
failed=()
i=0
for pkg in $(go list ${FUZZ_PKGS:-./...}); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    i=$((i + 1))
    if [ $(((i - 1) % n + 1)) -ne "$k" ]; then
      continue
    fi
    echo "== $pkg $f ($d)"
    result=ok
    if ! nice go test -run '^$' -fuzz "^$f\$" -fuzztime "$d" "$pkg"; then
      failed+=("$pkg $f")
      result=FAIL
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$commit" "$pkg" "$f" "$d" "$result" >>"$log"
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
