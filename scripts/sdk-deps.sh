#!/usr/bin/env bash
# sdk-deps.sh installs the npm packages of test/sdk (the official OpenAI SDK,
# pinned by test/sdk/package-lock.json) into the git-ignored .cache/sdk/
# directory, for test/e2e/sdk_test.go. It is idempotent and quick when the
# locked packages are already installed; it needs only node and npm.
#
# The test's Node script loads the SDK from
#   .cache/sdk/node_modules/openai
set -euo pipefail
cd "$(dirname "$0")/.."

SRC=test/sdk
DEST=.cache/sdk

# The stamp names the lock file's content, so a new pin reinstalls.
lock_sum() { cksum <"$SRC/package-lock.json" | cut -d' ' -f1; }
STAMP="$DEST/.installed-$(lock_sum)"

installed() {
	[ -f "$STAMP" ] || return 1
	[ -f "$DEST/node_modules/openai/package.json" ] || return 1
	cmp -s "$SRC/package.json" "$DEST/package.json" || return 1
	cmp -s "$SRC/package-lock.json" "$DEST/package-lock.json" || return 1
}
if installed; then
	exit 0
fi

for tool in node npm; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "sdk-deps.sh: $tool is required (apt-get install nodejs npm)" >&2
		exit 1
	fi
done

mkdir -p "$DEST"
cp "$SRC/package.json" "$SRC/package-lock.json" "$DEST/"
echo "sdk-deps.sh: installing the packages locked in $SRC/package-lock.json into $DEST" >&2
# npm ci installs exactly the lock file's versions and checks their
# integrity; --ignore-scripts: nothing needs to run at install.
npm ci --prefix "$DEST" --no-audit --no-fund --ignore-scripts --loglevel=error >&2

rm -f "$DEST"/.installed-*
touch "$STAMP"
if ! installed; then
	echo "sdk-deps.sh: $DEST/node_modules/openai is missing after npm ci" >&2
	exit 1
fi
