// openai-sdk.mjs checks that the official OpenAI SDK for Node (the npm
// package `openai`, pinned in package-lock.json beside this file) works
// against an inferrail balancer by changing only the base URL.
//
// Run by test/e2e/sdk_test.go against a fleet it starts; by hand:
//
//   scripts/sdk-deps.sh
//   INFERRAIL_BASE_URL=http://127.0.0.1:8080/v1 INFERRAIL_MODEL=sim-model node test/sdk/openai-sdk.mjs
//
// Environment:
//   INFERRAIL_BASE_URL  the balancer's OpenAI base URL, ending in /v1 (required)
//   INFERRAIL_MODEL     a model the fleet serves (required)
//   INFERRAIL_REPLICAS  comma-separated replica names x-inferrail-replica must be one of (optional)
//   INFERRAIL_SDK_DIR   the directory whose node_modules holds the SDK (default: .cache/sdk of the repository)
//   INFERRAIL_ENGINE    llamacpp: accept llama.cpp's /v1/completions stream, whose last chunk carries both the
//                       finish_reason and the usage (docs/engines.md) (optional)
//
// Every check runs, each prints "ok" or "FAIL" with the reason; the exit
// status is 1 when any check failed, 2 when the SDK cannot be loaded.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const sdkDir = process.env.INFERRAIL_SDK_DIR || join(here, '..', '..', '.cache', 'sdk');
const baseURL = process.env.INFERRAIL_BASE_URL;
const model = process.env.INFERRAIL_MODEL;
const replicas = (process.env.INFERRAIL_REPLICAS || '').split(',').filter(Boolean);
// llama.cpp ends a /v1/completions stream with one chunk holding the
// finish_reason and the usage, where OpenAI sends the usage on a chunk of its
// own with no choices.
const finishWithUsage = process.env.INFERRAIL_ENGINE === 'llamacpp';

if (!baseURL || !model) {
  console.error('openai-sdk.mjs: set INFERRAIL_BASE_URL (e.g. http://127.0.0.1:8080/v1) and INFERRAIL_MODEL');
  process.exit(2);
}

// loadSDK loads the SDK from sdkDir (not from a node_modules beside this
// file: the packages live in a git-ignored cache) and checks that the
// installed version is the one pinned here.
function loadSDK() {
  const pinned = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')).dependencies.openai;
  const require = createRequire(join(sdkDir, 'package.json'));
  let installed;
  try {
    // The package exports no ./package.json: read it beside its main file.
    const main = require.resolve('openai');
    installed = JSON.parse(readFileSync(join(dirname(main), 'package.json'), 'utf8')).version;
  } catch (err) {
    console.error(`openai-sdk.mjs: the openai package is not installed in ${sdkDir}: run \`make fixtures\` (scripts/sdk-deps.sh)\n${err.message}`);
    process.exit(2);
  }
  if (installed !== pinned) {
    console.error(`openai-sdk.mjs: openai ${installed} is installed in ${sdkDir}, test/sdk pins ${pinned}: run \`make fixtures\` (scripts/sdk-deps.sh)`);
    process.exit(2);
  }
  return { sdk: require('openai'), version: installed };
}

const { sdk, version } = loadSDK();
const { OpenAI } = sdk;

// The client is configured by its base URL only; the key is not checked by a
// balancer without API keys. No SDK retries, so a failure is seen as it is.
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });

const MAX_TOKENS = 8;
const systemPrompt = 'You are a helpful assistant of the inferrail SDK test. '.repeat(12);

// checkHeaders asserts the inferrail response headers on a raw Response.
function checkHeaders(response, what) {
  const replica = response.headers.get('x-inferrail-replica');
  assert.ok(replica, `${what}: no x-inferrail-replica header`);
  if (replicas.length > 0) {
    assert.ok(replicas.includes(replica), `${what}: x-inferrail-replica ${replica} is not one of ${replicas.join(', ')}`);
  }
  assert.ok(response.headers.get('x-request-id'), `${what}: no x-request-id header`);
  return replica;
}

// checkUsage asserts a usage object: positive counts that add up, the
// completion of exactly wantCompletion tokens (ignore_eos); returns the cached
// tokens the engine reports (prompt_tokens_details.cached_tokens).
function checkUsage(usage, wantCompletion, what) {
  assert.ok(usage, `${what}: no usage`);
  assert.ok(Number.isInteger(usage.prompt_tokens) && usage.prompt_tokens > 0, `${what}: prompt_tokens ${usage.prompt_tokens}`);
  assert.equal(usage.completion_tokens, wantCompletion, `${what}: completion_tokens`);
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens, `${what}: total_tokens`);
  // Like vLLM, the engine leaves prompt_tokens_details out when nothing was
  // cached.
  if (usage.prompt_tokens_details == null) {
    return 0;
  }
  const cached = usage.prompt_tokens_details.cached_tokens;
  assert.ok(Number.isInteger(cached) && cached >= 0 && cached <= usage.prompt_tokens,
    `${what}: prompt_tokens_details.cached_tokens ${cached} of ${usage.prompt_tokens}`);
  return cached;
}

// chatRequest is a non-streaming chat request with a long shared system
// prompt (several KV blocks) and an exact completion length.
function chatRequest(question) {
  return {
    model,
    messages: [
      { role: 'system', content: systemPrompt },
      { role: 'user', content: question },
    ],
    max_completion_tokens: MAX_TOKENS,
    ignore_eos: true, // a vLLM extension, sent as-is by the SDK
  };
}

const checks = [];
function check(name, fn) {
  checks.push({ name, fn });
}

check('chat.completions.create', async () => {
  const { data: chat, response, request_id } = await client.chat.completions
    .create(chatRequest('What does a KV-cache-aware router do?'))
    .withResponse();
  assert.equal(response.status, 200);
  checkHeaders(response, 'chat');
  assert.equal(request_id, response.headers.get('x-request-id'), 'withResponse request_id');
  assert.equal(typeof chat.id, 'string');
  assert.ok(chat.id.length > 0, 'empty id');
  assert.equal(chat.object, 'chat.completion');
  assert.equal(chat.model, model);
  assert.equal(chat.choices.length, 1);
  const [choice] = chat.choices;
  assert.equal(choice.index, 0);
  assert.equal(choice.message.role, 'assistant');
  assert.equal(typeof choice.message.content, 'string');
  assert.ok(choice.message.content.length > 0, 'empty message content');
  assert.equal(choice.finish_reason, 'length');
  checkUsage(chat.usage, MAX_TOKENS, 'chat usage');
  // The balancer tokenizes the chat exactly as the engine does.
  assert.equal(Number(response.headers.get('x-inferrail-prompt-tokens')), chat.usage.prompt_tokens,
    'x-inferrail-prompt-tokens against usage.prompt_tokens');
});

// A prefix repeated on a replica is reported cached in the SDK's usage.
// Where it is placed is the policy's choice, so the prompt is sent once more
// than there are replicas: some replica then serves it twice.
check('chat.completions.create reports cached prompt tokens', async () => {
  const n = (replicas.length || 1) + 1;
  const seen = new Map(); // replica -> requests it served
  const cachedOn = [];
  for (let i = 0; i < n; i++) {
    const { data, response } = await client.chat.completions
      .create(chatRequest(`Question ${i} about caching?`))
      .withResponse();
    const replica = checkHeaders(response, `request ${i}`);
    const cached = checkUsage(data.usage, MAX_TOKENS, `request ${i} usage`);
    const predicted = Number(response.headers.get('x-inferrail-cached-tokens'));
    console.log(`     request ${i}: ${replica}, cached_tokens ${cached} of ${data.usage.prompt_tokens}, predicted ${predicted}`);
    if (seen.has(replica)) {
      cachedOn.push(cached);
    }
    seen.set(replica, (seen.get(replica) ?? 0) + 1);
  }
  assert.ok(cachedOn.length > 0, 'no replica served the prefix twice');
  for (const cached of cachedOn) {
    assert.ok(cached > 0, `a repeat on the same replica: cached_tokens ${cached}, want > 0`);
  }
});

check('completions.create', async () => {
  const { data: cmpl, response } = await client.completions
    .create({ model, prompt: 'The quick brown fox', max_tokens: 6, ignore_eos: true })
    .withResponse();
  checkHeaders(response, 'completion');
  assert.equal(typeof cmpl.id, 'string');
  assert.ok(cmpl.id.length > 0, 'empty id');
  assert.equal(cmpl.object, 'text_completion');
  assert.equal(cmpl.model, model);
  assert.equal(cmpl.choices.length, 1);
  assert.equal(cmpl.choices[0].index, 0);
  assert.equal(typeof cmpl.choices[0].text, 'string');
  assert.ok(cmpl.choices[0].text.length > 0, 'empty text');
  assert.equal(cmpl.choices[0].finish_reason, 'length');
  checkUsage(cmpl.usage, 6, 'completion usage');
  assert.equal(Number(response.headers.get('x-inferrail-prompt-tokens')), cmpl.usage.prompt_tokens,
    'x-inferrail-prompt-tokens against usage.prompt_tokens');
});

// checkStream iterates a stream of chunks: one id and object throughout,
// content deltas before the end, a finish_reason, and usage only on the last
// chunk, whose choices are empty (stream_options.include_usage). With
// finishWithUsage, a text completion's last chunk may carry the usage and
// the finish_reason together instead.
async function checkStream(stream, { object, text, wantCompletion, what }) {
  const chunks = [];
  for await (const chunk of stream) {
    chunks.push(chunk);
  }
  assert.ok(chunks.length >= 2, `${what}: ${chunks.length} chunks`);
  let last = chunks.at(-1);
  const body = chunks.slice(0, -1);
  if (finishWithUsage && object === 'text_completion' && last.choices.length === 1) {
    body.push({ ...last, usage: null });
    last = { ...last, choices: [] };
  }
  for (const c of chunks) {
    assert.equal(c.object, object, `${what}: chunk object`);
    assert.equal(c.id, chunks[0].id, `${what}: chunk id changed`);
    assert.equal(c.model, model, `${what}: chunk model`);
  }
  for (const c of body) {
    assert.ok(c.usage == null, `${what}: usage on a chunk before the last: ${JSON.stringify(c)}`);
    assert.equal(c.choices.length, 1, `${what}: choices of a chunk before the last`);
  }
  const deltas = body.map((c) => text(c.choices[0])).filter((s) => typeof s === 'string' && s.length > 0);
  assert.ok(deltas.length >= 1, `${what}: no content delta`);
  const finishes = body.map((c) => c.choices[0].finish_reason).filter(Boolean);
  assert.deepEqual(finishes, ['length'], `${what}: finish reasons`);
  assert.deepEqual(last.choices, [], `${what}: choices of the usage chunk`);
  checkUsage(last.usage, wantCompletion, `${what} usage`);
  console.log(`     ${what}: ${chunks.length} chunks, ${deltas.length} content deltas`);
  return deltas.join('');
}

check('chat.completions.create stream with usage', async () => {
  const { data: stream, response } = await client.chat.completions
    .create({
      ...chatRequest('Stream me an answer.'),
      stream: true,
      stream_options: { include_usage: true },
    })
    .withResponse();
  checkHeaders(response, 'chat stream');
  assert.match(response.headers.get('content-type') ?? '', /^text\/event-stream/);
  const content = await checkStream(stream, {
    object: 'chat.completion.chunk',
    text: (choice) => choice.delta?.content,
    wantCompletion: MAX_TOKENS,
    what: 'chat stream',
  });
  assert.ok(content.length > 0, 'chat stream: empty content');
});

check('completions.create stream with usage', async () => {
  const { data: stream, response } = await client.completions
    .create({
      model,
      prompt: 'Once upon a time',
      max_tokens: 5,
      ignore_eos: true,
      stream: true,
      stream_options: { include_usage: true },
    })
    .withResponse();
  checkHeaders(response, 'completion stream');
  await checkStream(stream, {
    object: 'text_completion',
    text: (choice) => choice.text,
    wantCompletion: 5,
    what: 'completion stream',
  });
});

check('the client x-request-id is kept', async () => {
  const id = `sdk-test-${process.pid}`;
  const { response, request_id } = await client.completions
    .create({ model, prompt: 'hello', max_tokens: 1 }, { headers: { 'x-request-id': id } })
    .withResponse();
  assert.equal(response.headers.get('x-request-id'), id);
  assert.equal(request_id, id);
});

check('models.list', async () => {
  const ids = [];
  for await (const m of client.models.list()) {
    assert.equal(m.object, 'model');
    ids.push(m.id);
  }
  assert.ok(ids.includes(model), `models.list: ${JSON.stringify(ids)} lacks ${model}`);
});

// expectNotFound asserts that promise rejects with the SDK's 404 error
// carrying the body's message.
async function expectNotFound(promise, name) {
  const want = `The model \`${name}\` does not exist.`;
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof OpenAI.APIError, `not an APIError: ${err}`);
    assert.ok(err instanceof OpenAI.NotFoundError, `not a NotFoundError: ${err.constructor.name}`);
    assert.equal(err.status, 404);
    assert.equal(err.error?.message, want);
    assert.equal(err.message, `404 ${want}`);
    assert.equal(err.param, 'model');
    assert.ok(err.requestID, 'no x-request-id on the error');
    return true;
  });
}

check('unknown model is a 404 APIError', async () => {
  const name = 'no-such-model';
  await expectNotFound(client.chat.completions.create({ ...chatRequest('hi'), model: name }), name);
  await expectNotFound(client.completions.create({ model: name, prompt: 'hi', max_tokens: 1 }), name);
  await expectNotFound(
    client.chat.completions.create({ ...chatRequest('hi'), model: name, stream: true, stream_options: { include_usage: true } }),
    name,
  );
});

console.log(`openai ${version} against ${baseURL} (model ${model})`);
let failed = 0;
for (const { name, fn } of checks) {
  try {
    await fn();
    console.log(`ok   ${name}`);
  } catch (err) {
    failed++;
    console.log(`FAIL ${name}: ${err?.stack ?? err}`);
  }
}
console.log(`${checks.length - failed} of ${checks.length} checks passed`);
process.exitCode = failed > 0 ? 1 : 0;
