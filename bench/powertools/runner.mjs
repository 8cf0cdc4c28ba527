// The Powertools side of make bench-peer, one workload per process: the
// idempotent handler of handler.mjs invoked in this process with API
// Gateway v2 events and a Lambda-like context, as bench/cmd/gorunner
// invokes idemlambda's handler. It speaks the same runner protocol: after
// a warm-up it prints {"phase":"ready"} and waits for a line on stdin,
// then runs the workload and prints {"phase":"done",...} (or, for the
// crash workload, {"phase":"crashed",...} and waits to be killed).
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { createHandler } from './handler.mjs';

const SELLER_ID = '3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b';

const { values: f } = parseArgs({
  options: {
    endpoint: { type: 'string' },
    products: { type: 'string' },
    idempotency: { type: 'string' },
    outbox: { type: 'string' },
    workload: { type: 'string', default: 'seq' },
    prefix: { type: 'string', default: 'w' },
    event: { type: 'string', default: 'events/create.json' },
    keys: { type: 'string', default: '10' },
    dup: { type: 'string', default: '8' },
    warmup: { type: 'string', default: '20' },
    timeout: { type: 'string', default: '30s' },
  },
});
const keys = Number(f.keys);
const dup = Number(f.dup);
const warmup = Number(f.warmup);
const timeoutMs = parseDuration(f.timeout);
const template = JSON.parse(readFileSync(f.event, 'utf8'));

let writes = 0;
let crash = false;
let reached = null; // resolves when an invocation reaches the crash point
const handler = createHandler({
  endpoint: f.endpoint,
  tables: { products: f.products, idempotency: f.idempotency, outbox: f.outbox },
  onWrite: () => { writes++; },
  // The crash point: the business write has committed, the handler has
  // not returned, so Powertools has not saved the result. The invocation
  // is abandoned here (a promise that never settles) and the process is
  // then SIGKILLed, so no finally block and no Powertools cleanup runs.
  afterWrite: () => {
    if (!crash) return Promise.resolve();
    reached?.();
    return new Promise(() => {});
  },
});

let seq = 0;
let lat = [];
let outcomes = {};

function event(key) {
  const ev = structuredClone(template);
  ev.headers = { ...ev.headers, 'idempotency-key': `"${key}"` };
  ev.body = `{"name":"Widget ${key}","price_cents":999,"currency":"EUR","seller_id":"${SELLER_ID}"}`;
  ev.requestContext.requestId = `bench-${process.pid}-${++seq}`;
  ev.requestContext.timeEpoch = Date.now();
  return ev;
}

// context is what the Lambda Node.js runtime passes: the deadline behind
// getRemainingTimeInMillis, the request id, the function's names.
function context(ev, deadline) {
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: process.env.AWS_LAMBDA_FUNCTION_NAME,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:123456789012:function:${process.env.AWS_LAMBDA_FUNCTION_NAME}`,
    memoryLimitInMB: '1024',
    awsRequestId: ev.requestContext.requestId,
    logGroupName: `/aws/lambda/${process.env.AWS_LAMBDA_FUNCTION_NAME}`,
    logStreamName: 'bench',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done() {}, fail() {}, succeed() {},
  };
}

async function invoke(key) {
  const ev = event(key);
  const start = process.hrtime.bigint();
  const deadline = Date.now() + timeoutMs;
  let outcome;
  try {
    const resp = await handler(ev, context(ev, deadline));
    outcome = String(resp.statusCode);
    if (resp.headers?.['Idempotent-Replayed'] === 'true') outcome += ' replayed';
  } catch (err) {
    // What the Lambda runtime would turn into an invocation error (API
    // Gateway answers 500): Powertools throws for a key in progress.
    outcome = err?.name ?? 'error';
  }
  const us = Number((process.hrtime.bigint() - start) / 1000n);
  lat.push(us);
  outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
  return { us, outcome };
}

function concurrent(key, n) {
  return Promise.all(Array.from({ length: n }, () => invoke(key)));
}

function emit(v) {
  process.stdout.write(`${JSON.stringify(v)}\n`);
}

function cpuMs(u) {
  return { user: u.user / 1000, sys: u.system / 1000 };
}

function versions() {
  const v = { node: process.version };
  for (const p of ['@aws-lambda-powertools/idempotency', '@aws-sdk/client-dynamodb', '@aws-sdk/lib-dynamodb']) {
    const file = new URL(`./node_modules/${p}/package.json`, import.meta.url);
    v[p] = JSON.parse(readFileSync(file, 'utf8')).version;
  }
  return v;
}

const stdin = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

async function readLine() {
  const { value, done } = await stdin.next();
  if (done) throw new Error('stdin closed');
  return value.trim();
}

function parseDuration(s) {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(s);
  if (!m) throw new Error(`bad duration ${s}`);
  return Number(m[1]) * { ms: 1, s: 1000, m: 60000 }[m[2]];
}

const key = (i) => `${f.prefix}-k${String(i).padStart(4, '0')}`;

async function main() {
  // Warm-up, on keys the scan ignores: fresh, replay and contended paths.
  for (let i = 0; i < warmup; i++) {
    const k = `warm-${f.prefix}-${i}`;
    await invoke(k);
    await invoke(k);
  }
  for (let i = 0; i < 5; i++) await concurrent(`warm-${f.prefix}-dup-${i}`, 8);
  lat = [];
  outcomes = {};
  writes = 0;
  emit({ phase: 'ready', impl: 'powertools', versions: versions() });
  await readLine();

  const cpu0 = process.cpuUsage();
  const wall0 = process.hrtime.bigint();
  const cpuDelta = () => cpuMs(process.cpuUsage(cpu0));
  const wallMs = () => Number(process.hrtime.bigint() - wall0) / 1e6;
  switch (f.workload) {
    case 'seq':
    case 'retry':
      for (let i = 0; i < keys; i++) await invoke(key(i));
      break;
    case 'dup':
      for (let i = 0; i < keys; i++) await concurrent(key(i), dup);
      break;
    case 'serve':
      // One Lambda execution environment of several: invoke each key the
      // driver sends ("invoke KEY"), one at a time, until "end".
      for (;;) {
        const line = await readLine();
        if (line === 'end') break;
        const { us, outcome } = await invoke(line.replace(/^invoke /, ''));
        emit({ phase: 'invoked', us, outcome });
      }
      break;
    case 'crash': {
      crash = true;
      for (let i = 0; i < keys; i++) {
        const at = new Promise((resolve) => { reached = resolve; });
        invoke(key(i)); // never settles: abandoned at the crash point
        await at;
      }
      const c = cpuDelta();
      emit({ phase: 'crashed', requests: keys, abandoned: keys, writes, cpu_user_ms: c.user, cpu_sys_ms: c.sys, wall_ms: wallMs() });
      setInterval(() => {}, 1 << 30); // keep the process alive until SIGKILL
      return;
    }
    default:
      throw new Error(`unknown workload ${f.workload}`);
  }
  const c = cpuDelta();
  emit({ phase: 'done', requests: lat.length, latency_us: lat, outcomes, writes, cpu_user_ms: c.user, cpu_sys_ms: c.sys, wall_ms: wallMs() });
}

main().catch((err) => {
  console.error('runner.mjs:', err);
  process.exit(1);
});
