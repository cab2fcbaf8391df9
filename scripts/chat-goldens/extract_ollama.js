#!/usr/bin/env node
// extract_ollama.js writes chosen chat templates shipped by the npm package
// @huggingface/ollama-utils (its OLLAMA_CHAT_TEMPLATE_MAPPING, the "gguf"
// Jinja templates of real models) to DIR/<name>.jinja.
//
// Usage: NODE_PATH=... node extract_ollama.js DIR model...   (e.g. library/phi4:14b)
'use strict';
const fs = require('fs');
const path = require('path');

// The package's exports hide its sources; find them next to its main file.
const main = require.resolve('@huggingface/ollama-utils');
const pkg = main.slice(0, main.lastIndexOf(path.sep + 'dist' + path.sep));
const src = fs.readFileSync(path.join(pkg, 'src', 'chat-template-automap.ts'), 'utf8');
const start = src.indexOf('[', src.indexOf('export const OLLAMA_CHAT_TEMPLATE_MAPPING'));
// The array literal is plain JSON-like TypeScript data; evaluate it alone.
const entries = new Function('return ' + src.slice(start).replace(/;\s*$/, ''))();
const [dir, ...models] = process.argv.slice(2);
fs.mkdirSync(dir, { recursive: true });
for (const model of models) {
  const e = entries.find((x) => x.model === model);
  if (!e) throw new Error('no template for ' + model);
  const name = model.replace(/^library\//, '').replace(/[^A-Za-z0-9.]+/g, '-');
  fs.writeFileSync(path.join(dir, name + '.jinja'), e.gguf);
  console.log(name);
}
