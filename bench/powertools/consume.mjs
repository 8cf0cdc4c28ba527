// The Powertools side of make bench-peer's consumer workload, one Lambda
// execution environment per process: the SQS batch handler of
// consumer.mjs invoked in this process with the driver's messages and a
// Lambda-like context, as bench/cmd/goconsumer invokes idemlambda's
// sellerstats handler. Same protocol: after a warm-up on the file's
// warm-up messages it prints {"phase":"ready"} and waits for "go"; each
// line `invoke {"m":[...],"r":[...]}` (message indexes and receive counts)
// is one invocation, answered with {"phase":"invoked","failed":[indexes],"us":µs}
// (its duration, measured around the handler);
// "end" is answered with {"phase":"done"} and the CPU time since "go".
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { createConsumer } from './consumer.mjs';

const TIMEOUT_MS = 30_000;

const { values: f } = parseArgs({
  options: {
    endpoint: { type: 'string' },
    sellers: { type: 'string' },
    idempotency: { type: 'string' },
    messages: { type: 'string' },
    source: { type: 'string', default: 'idemlambda.products' },
  },
});
const input = JSON.parse(readFileSync(f.messages, 'utf8'));
const handler = createConsumer({
  endpoint: f.endpoint,
  tables: { sellers: f.sellers, idempotency: f.idempotency },
  source: f.source,
});

// Go's events.SQSMessage JSON names, as the Lambda SQS event has them.
function record(m, receives) {
  return {
    messageId: m.messageId,
    receiptHandle: m.receiptHandle,
    body: m.body,
    attributes: { ...m.attributes, ApproximateReceiveCount: String(receives) },
    messageAttributes: m.messageAttributes ?? {},
    md5OfBody: m.md5OfBody ?? '',
    eventSource: m.eventSource,
    eventSourceARN: m.eventSourceARN,
    awsRegion: m.awsRegion,
  };
}

let seq = 0;

function context() {
  const deadline = Date.now() + TIMEOUT_MS;
  const name = process.env.AWS_LAMBDA_FUNCTION_NAME;
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: name,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:123456789012:function:${name}`,
    memoryLimitInMB: '1024',
    awsRequestId: `bench-${process.pid}-${++seq}`,
    logGroupName: `/aws/lambda/${name}`,
    logStreamName: 'bench',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done() {}, fail() {}, succeed() {},
  };
}

// invoke runs one invocation; it returns the messageIds to redeliver: the
// batchItemFailures, or the whole batch when the invocation fails (as
// processPartialResponse does when every record failed).
async function invoke(records) {
  try {
    const resp = await handler({ Records: records }, context());
    return new Set(resp.batchItemFailures.map((x) => x.itemIdentifier));
  } catch {
    return new Set(records.map((r) => r.messageId));
  }
}

function emit(v) {
  process.stdout.write(`${JSON.stringify(v)}\n`);
}

function versions() {
  const v = { node: process.version };
  for (const p of ['@aws-lambda-powertools/batch', '@aws-lambda-powertools/idempotency', '@aws-sdk/client-dynamodb', '@aws-sdk/lib-dynamodb']) {
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

async function main() {
  for (let i = 0; i < input.warmup.length; i += 10) {
    await invoke(input.warmup.slice(i, i + 10).map((m) => record(m, 1)));
  }
  emit({ phase: 'ready', impl: 'powertools-batch', versions: versions() });
  await readLine();
  const cpu0 = process.cpuUsage();
  const wall0 = process.hrtime.bigint();
  for (;;) {
    const line = await readLine();
    if (line === 'end') break;
    const { m: idx, r: receives } = JSON.parse(line.replace(/^invoke /, ''));
    const records = idx.map((i, k) => record(input.messages[i], receives[k]));
    const start = process.hrtime.bigint();
    const failed = await invoke(records);
    const us = Number((process.hrtime.bigint() - start) / 1000n);
    emit({ phase: 'invoked', failed: idx.filter((i, k) => failed.has(records[k].messageId)), us });
  }
  const c = process.cpuUsage(cpu0);
  emit({ phase: 'done', cpu_user_ms: c.user / 1000, cpu_sys_ms: c.system / 1000, wall_ms: Number(process.hrtime.bigint() - wall0) / 1e6 });
}

main().catch((err) => {
  console.error('consume.mjs:', err);
  process.exit(1);
});
