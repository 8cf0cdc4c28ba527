// The Powertools for AWS Lambda (TypeScript) side of make bench-peer's
// consumer workload: the seller statistics consumer written the way the
// batch and idempotency utilities document it.
//
// - processPartialResponse with a BatchProcessor(EventType.SQS) answers
//   with batchItemFailures, so one failed record is redelivered alone.
// - The record handler is wrapped by makeIdempotent (its documented batch
//   pattern), keyed on the CloudEvent id inside the message body
//   (eventKeyJmesPath 'powertools_json(body).detail.id'): a redelivered
//   event comes as a new SQS message with its own messageId, so the
//   messageId is no key. The Lambda context is registered once per
//   invocation (registerLambdaContext) and also reaches the wrapped record
//   handler through processPartialResponse's { context }.
// - The record handler adds the event to its seller in ONE UpdateItem on
//   the sellers table (ADD product_count 1 and the price to
//   cents_<currency>), the same attributes idemlambda's consumer writes.
//   Powertools claims the key before it (conditional PutItem, IN_PROGRESS)
//   and marks it COMPLETED after it (UpdateItem).
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';

const CURRENCY = /^[A-Z]{3}$/;

/**
 * createConsumer returns the SQS batch handler.
 * @param {object} o
 * @param {string} o.endpoint DynamoDB endpoint (the counting proxy)
 * @param {{sellers: string, idempotency: string}} o.tables
 * @param {string} o.source the only event source counted
 */
export function createConsumer({ endpoint, tables, source }) {
  const clientConfig = {
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  };
  const doc = DynamoDBDocumentClient.from(new DynamoDBClient(clientConfig));
  const persistenceStore = new DynamoDBPersistenceLayer({ tableName: tables.idempotency, clientConfig });
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'powertools_json(body).detail.id',
    throwOnNoIdempotencyKey: true,
    expiresAfterSeconds: 7 * 24 * 3600, // idemlambda's sellerstats retention
  });
  const processor = new BatchProcessor(EventType.SQS);

  const recordHandler = async (record) => {
    const envelope = JSON.parse(record.body);
    const ce = envelope.detail;
    if (envelope.source !== source || ce?.source !== source || ce?.type !== 'ProductCreated') {
      throw new Error(`not a ProductCreated event from ${source}`);
    }
    const { seller_id: seller, price_cents: cents, currency } = ce.data ?? {};
    if (typeof seller !== 'string' || !Number.isSafeInteger(cents) || cents <= 0 || !CURRENCY.test(currency)) {
      throw new Error(`event ${ce.id}: no seller, price or currency`);
    }
    await doc.send(new UpdateCommand({
      TableName: tables.sellers,
      // The sellers table's key (internal/dev/tables): this peer writes
      // one shard per seller, shard 0.
      Key: { seller_id: seller, shard: 0 },
      UpdateExpression: 'ADD #count :one, #cents :cents SET #updated = :now',
      ExpressionAttributeNames: { '#count': 'product_count', '#cents': `cents_${currency}`, '#updated': 'updated_at' },
      ExpressionAttributeValues: { ':one': 1, ':cents': cents, ':now': new Date().toISOString() },
    }));
    return { event_id: ce.id, seller_id: seller, currency, cents };
  };

  const processIdempotently = makeIdempotent(recordHandler, { persistenceStore, config });

  return async (event, context) => {
    config.registerLambdaContext(context);
    return processPartialResponse(event, processIdempotently, processor, { context });
  };
}
