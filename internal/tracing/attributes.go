package tracing

import "go.opentelemetry.io/otel/attribute"

// The application's own span attributes, beside OpenTelemetry's semantic
// conventions (docs/operations.md, Tracing, lists every span and
// attribute).
const (
	// AttrOutcome is pkg/idem's outcome of a request or message:
	// executed, replayed, in_flight, key_reuse, ...
	AttrOutcome = attribute.Key("idemlambda.idempotency.outcome")
	// AttrPublished, AttrFailed, AttrDropped, AttrSkipped and
	// AttrReplicas count the relay batch's records: published, to be
	// retried, passed over for good, not INSERTs, and INSERTs of items
	// another Region wrote (published there).
	AttrPublished = attribute.Key("idemlambda.relay.published")
	AttrFailed    = attribute.Key("idemlambda.relay.failed")
	AttrDropped   = attribute.Key("idemlambda.relay.dropped")
	AttrSkipped   = attribute.Key("idemlambda.relay.skipped")
	AttrReplicas  = attribute.Key("idemlambda.relay.replicas")
	// AttrApplied, AttrDuplicate, AttrPoison and AttrRedelivered count
	// the consumer batch's messages: counted, acknowledged as counted
	// before, never countable, failed for now (redelivered).
	AttrApplied     = attribute.Key("idemlambda.consumer.applied")
	AttrDuplicate   = attribute.Key("idemlambda.consumer.duplicate")
	AttrPoison      = attribute.Key("idemlambda.consumer.poison")
	AttrRedelivered = attribute.Key("idemlambda.consumer.failed")
)

// EventBridge is the messaging.system of the spans that create and send
// events to EventBridge: the semantic conventions name no value for it,
// so this one follows their aws.sns.
const EventBridge = "aws.eventbridge"
