#!/usr/bin/env node
// ids.js adds "token_ids" to rendered golden records: the ids the Rust
// tokenizers (npm package "tokenizers", a binding of huggingface/tokenizers)
// give the rendered text. Chat prompts are encoded without special tokens
// (add_special_tokens false), as vLLM does unless the request says otherwise.
//
// Usage: NODE_PATH=.cache/goldens/node_modules node ids.js TOKENIZER_JSON < rendered.jsonl > golden.jsonl
'use strict';
const fs = require('fs');
const readline = require('readline');
const { Tokenizer } = require('tokenizers');

async function main() {
  const tok = Tokenizer.fromFile(process.argv[2]);
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    if (!line) continue;
    // The line is passed through as Python wrote it: re-serializing it here
    // would turn the request's 0.0 into 0 and change what the template saw.
    const rec = JSON.parse(line);
    if (typeof rec.rendered !== 'string') {
      process.stdout.write(line + '\n');
      continue;
    }
    const add = rec.request && rec.request.add_special_tokens === true;
    const enc = await tok.encode(rec.rendered, null, { addSpecialTokens: add });
    const body = line.trimEnd();
    process.stdout.write(body.slice(0, -1) + ', "token_ids": ' + JSON.stringify(enc.getIds()) + '}\n');
  }
}
main().catch((e) => { console.error(e); process.exit(1); });
