// The Powertools for AWS Lambda (TypeScript) side of make bench-peer: a
// POST /products Lambda handler written the way the idempotency utility's
// users write one, doing the same business writes as idemlambda.
//
// - makeIdempotent wraps the whole Lambda handler (event, context), so the
//   utility registers the Lambda context itself and sets the in-progress
//   expiry from context.getRemainingTimeInMillis().
// - The key is the Idempotency-Key header (eventKeyJmesPath), and the body
//   is validated against the stored one (payloadValidationJmesPath on the
//   parsed body, so whitespace and field order do not matter, as with
//   idemlambda's canonical fingerprint).
// - DynamoDBPersistenceLayer writes to its own table (hash key `id`) on the
//   endpoint given through clientConfig.endpoint.
// - The business write is ONE TransactWriteItems of the product Put and the
//   outbox Put, through the DynamoDB DocumentClient: an outbox needs the
//   event to land with the product or not at all, and a transaction is how
//   a careful user gets that. The utility then marks the key COMPLETED in a
//   separate UpdateItem after the handler returns.
import { randomBytes, randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';

const EVENT_SOURCE = 'idemlambda.products';
const OUTBOX_RETENTION_S = 7 * 24 * 3600;
const CURRENCIES = new Set(['EUR', 'USD', 'GBP', 'CHF', 'JPY', 'SEK', 'KWD']);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * createHandler returns the idempotent Lambda handler.
 * @param {object} o
 * @param {string} o.endpoint DynamoDB endpoint (the counting proxy)
 * @param {{products: string, idempotency: string, outbox: string}} o.tables
 * @param {() => Promise<void>} [o.afterWrite] runs after the business write
 *   and before the handler returns (the crash point of workload 3)
 * @param {() => void} [o.onWrite] counts committed business writes
 */
export function createHandler({ endpoint, tables, afterWrite, onWrite }) {
  const clientConfig = {
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  };
  const doc = DynamoDBDocumentClient.from(new DynamoDBClient(clientConfig));
  const persistenceStore = new DynamoDBPersistenceLayer({
    tableName: tables.idempotency,
    clientConfig,
  });
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'headers."idempotency-key"',
    payloadValidationJmesPath: 'powertools_json(body)',
    throwOnNoIdempotencyKey: true,
    expiresAfterSeconds: 24 * 3600, // idemlambda's IDEMPOTENCY_RETENTION default
    // Marks a replay the way idemlambda does (Idempotent-Replayed: true).
    responseHook: (response) => ({
      ...response,
      headers: { ...response.headers, 'Idempotent-Replayed': 'true' },
    }),
  });

  const createProduct = async (event, _context) => {
    let input;
    try {
      input = JSON.parse(event.body ?? '');
    } catch {
      return problem(400, 'body is not JSON');
    }
    const invalid = validate(input);
    if (invalid) return problem(400, invalid);

    const now = new Date();
    const id = randomUUID();
    const product = {
      id,
      name: input.name.trim(),
      price_cents: input.price_cents,
      currency: input.currency,
      seller_id: input.seller_id.toLowerCase(),
      created_at: now.toISOString(),
    };
    const body = JSON.stringify(product);
    const eventId = uuidv7(now);
    const cloudEvent = {
      specversion: '1.0',
      id: eventId,
      source: EVENT_SOURCE,
      type: 'ProductCreated',
      subject: id,
      time: now.toISOString(),
      datacontenttype: 'application/json',
      data: product,
    };
    await doc.send(new TransactWriteCommand({
      TransactItems: [
        {
          Put: {
            TableName: tables.products,
            Item: product,
            ConditionExpression: 'attribute_not_exists(#id)',
            ExpressionAttributeNames: { '#id': 'id' },
          },
        },
        {
          Put: {
            TableName: tables.outbox,
            Item: {
              aggregate_id: id,
              event_id: eventId,
              event_type: 'ProductCreated',
              occurred_at: now.toISOString(),
              payload: JSON.stringify(cloudEvent),
              expires_at: Math.floor(now.getTime() / 1000) + OUTBOX_RETENTION_S,
            },
            ConditionExpression: 'attribute_not_exists(#eid)',
            ExpressionAttributeNames: { '#eid': 'event_id' },
          },
        },
      ],
    }));
    onWrite?.();
    if (afterWrite) await afterWrite();
    return {
      statusCode: 201,
      headers: { 'Content-Type': 'application/json', Location: `/products/${id}` },
      body,
    };
  };

  return makeIdempotent(createProduct, { persistenceStore, config });
}

// validate applies idemlambda's rules for the body; it returns a message or ''.
function validate(v) {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return 'body must be a JSON object';
  for (const k of Object.keys(v)) {
    if (!['name', 'price_cents', 'currency', 'seller_id', 'idempotency_key'].includes(k)) {
      return `unknown field ${k}`;
    }
  }
  if (typeof v.name !== 'string') return 'name must be a string';
  const name = v.name.trim();
  if ([...name].length < 1 || [...name].length > 200) return 'name must be 1 to 200 characters';
  if (/\p{Cc}/u.test(name)) return 'name must not contain control characters';
  if (!Number.isSafeInteger(v.price_cents) || v.price_cents <= 0) return 'price_cents must be a positive integer';
  if (!CURRENCIES.has(v.currency)) return 'currency is not supported';
  if (typeof v.seller_id !== 'string' || !UUID.test(v.seller_id)) return 'seller_id must be a UUID';
  return '';
}

function problem(status, detail) {
  return {
    statusCode: status,
    headers: { 'Content-Type': 'application/problem+json' },
    body: JSON.stringify({ type: 'about:blank', title: 'Bad Request', status, detail }),
  };
}

// uuidv7 is RFC 9562 version 7 (time-ordered), as idemlambda's event ids.
function uuidv7(now) {
  const b = randomBytes(16);
  const ms = BigInt(now.getTime());
  for (let i = 0; i < 6; i++) b[i] = Number((ms >> BigInt(8 * (5 - i))) & 0xffn);
  b[6] = (b[6] & 0x0f) | 0x70;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
