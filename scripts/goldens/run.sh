#!/usr/bin/env bash
# run.sh regenerates the tokenizer goldens: it installs the reference (the npm
# package "tokenizers", Hugging Face's Rust library as a Node addon, which ships
# a prebuilt linux-x64 binary) into the git-ignored .cache/goldens/ and runs
# gen.mjs (or, with --unicode, gen-unicode.mjs, which rewrites the table of
# code points the reference regex engine treats as unassigned).
# Usage: scripts/goldens/run.sh [family ...] | --unicode
set -euo pipefail
cd "$(dirname "$0")/../.."
TOKENIZERS_VERSION=0.23.2
scripts/fixtures.sh
DEST=.cache/goldens
if [ ! -f "$DEST/node_modules/tokenizers/package.json" ] ||
	! grep -q "\"version\": \"$TOKENIZERS_VERSION\"" "$DEST/node_modules/tokenizers/package.json"; then
	mkdir -p "$DEST"
	[ -f "$DEST/package.json" ] || printf '{\n  "name": "inferrail-goldens",\n  "private": true\n}\n' >"$DEST/package.json"
	npm install --prefix "$DEST" --no-audit --no-fund --save-exact --loglevel=error "tokenizers@$TOKENIZERS_VERSION" >&2
fi
if [ "${1:-}" = --unicode ]; then
	exec node scripts/goldens/gen-unicode.mjs
fi
exec node scripts/goldens/gen.mjs "$@"
