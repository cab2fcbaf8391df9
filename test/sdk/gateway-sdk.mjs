// gateway-sdk.mjs checks that the official OpenAI SDK for Node sees an
// inferrail balancer's gateway answers as it sees OpenAI's: a wrong key is an
// AuthenticationError, a model the key may not use a PermissionDeniedError,
// an exhausted limit a RateLimitError with the rate-limit headers, and the
// SDK's own retry waits out Retry-After and succeeds.
//
// Run by test/e2e/gateway_sdk_test.go against a balancer it starts with keys.
//
// Environment:
//   INFERRAIL_BASE_URL   the balancer's OpenAI base URL, ending in /v1 (required)
//   INFERRAIL_MODEL      a model the key may use (required)
//   INFERRAIL_DENIED     a served model the key may not use (required)
//   INFERRAIL_KEY        a key limited to 1 request per second, burst 1 (required)
//   INFERRAIL_SDK_DIR    the directory whose node_modules holds the SDK
//
// Prints "ok"/"FAIL" per check and "N of M checks passed"; exit 1 on a failure.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const sdkDir = process.env.INFERRAIL_SDK_DIR || join(here, '..', '..', '.cache', 'sdk');
const { INFERRAIL_BASE_URL: baseURL, INFERRAIL_MODEL: model, INFERRAIL_DENIED: denied, INFERRAIL_KEY: key } = process.env;
if (!baseURL || !model || !denied || !key) {
  console.error('gateway-sdk.mjs: set INFERRAIL_BASE_URL, INFERRAIL_MODEL, INFERRAIL_DENIED and INFERRAIL_KEY');
  process.exit(2);
}
const sdk = createRequire(join(sdkDir, 'package.json'))('openai');
const { OpenAI } = sdk;
const client = (apiKey, maxRetries = 0) => new OpenAI({ baseURL, apiKey, maxRetries, timeout: 60_000 });
const req = (m) => ({ model: m, prompt: 'gateway check', max_tokens: 1 });

const checks = [];
const check = (name, fn) => checks.push({ name, fn });

async function expectError(promise, cls, status) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof cls, `got ${err?.constructor?.name}: ${err?.message}`);
    assert.equal(err.status, status);
    assert.equal(err.code, status);
    assert.ok(err.message.length > 0);
    return true;
  });
}

check('a wrong key is an AuthenticationError', async () => {
  await expectError(client('sk-wrong').completions.create(req(model)), sdk.AuthenticationError, 401);
});

check('a model the key may not use is a PermissionDeniedError', async () => {
  await expectError(client(key).completions.create(req(denied)), sdk.PermissionDeniedError, 403);
});

check('models.list shows only the key\'s models', async () => {
  const ids = [];
  for await (const m of client(key).models.list()) ids.push(m.id);
  assert.ok(ids.includes(model), `models ${ids}`);
  assert.ok(!ids.includes(denied), `models ${ids}`);
});

check('an exhausted limit is a RateLimitError with the rate-limit headers', async () => {
  // Drain the burst (the key may have been used by the checks above).
  let limited;
  for (let i = 0; i < 5 && !limited; i++) {
    try {
      await client(key).completions.create(req(model));
    } catch (err) {
      limited = err;
    }
  }
  assert.ok(limited instanceof sdk.RateLimitError, `got ${limited?.constructor?.name}: ${limited?.message}`);
  assert.equal(limited.status, 429);
  assert.equal(limited.headers.get('x-ratelimit-limit-requests'), '1');
  assert.equal(limited.headers.get('x-ratelimit-remaining-requests'), '0');
  assert.match(limited.headers.get('x-ratelimit-reset-requests'), /^\d+(\.\d+)?(ms|s)$/);
  assert.match(limited.headers.get('retry-after'), /^\d+$/);
});

check('the SDK retry waits out Retry-After and succeeds', async () => {
  const { data, response } = await client(key, 3).completions.create(req(model)).withResponse();
  assert.ok(data.choices.length > 0);
  assert.equal(response.headers.get('x-ratelimit-limit-requests'), '1');
});

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
