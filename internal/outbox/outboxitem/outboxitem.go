// Package outboxitem is the outbox table's item in the AWS SDK's DynamoDB
// types: what createproduct writes in a product's transaction (Put,
// Encode) and what reading the table back gives (Decode). It is apart
// from package outbox so that the relay, which reads the same item from
// the table's stream in the Lambda event's types (outbox.DecodeImage),
// links none of the SDK's DynamoDB packages, whose initialisers would run
// at each of its cold starts.
package outboxitem

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/pkg/ddbitem"
)

// Encode encodes the event as an outbox item: the envelope JSON in
// payload, plus the keys and fields a reader can query without parsing
// it, the trace context it was created under and the Region that writes
// it (origin) beside it, kept for retention (its TTL, expires_at).
func Encode(e outbox.Event, retention time.Duration) (map[string]types.AttributeValue, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	// The trace context travels beside the CloudEvent in the table, so
	// the stored envelope is the same whether the request was traced or
	// not; the relay puts it back on the CloudEvent.
	envelope := e
	envelope.TraceParent, envelope.TraceState = "", ""
	payload, err := json.Marshal(envelope)
	if err != nil {
		return nil, fmt.Errorf("outboxitem: encode envelope: %w", err)
	}
	item := map[string]types.AttributeValue{
		outbox.AttrAggregateID: ddbitem.S(e.Subject),
		outbox.AttrEventID:     ddbitem.S(e.ID),
		outbox.AttrEventType:   ddbitem.S(e.Type),
		outbox.AttrOccurredAt:  ddbitem.Time(e.Time),
		outbox.AttrPayload:     ddbitem.S(string(payload)),
		outbox.AttrExpiresAt:   ddbitem.N(e.Time.Add(retention).Unix()),
	}
	if e.Origin != "" {
		item[outbox.AttrOrigin] = ddbitem.S(e.Origin)
	}
	if e.TraceParent != "" {
		item[outbox.AttrTraceParent] = ddbitem.S(e.TraceParent)
		if e.TraceState != "" {
			item[outbox.AttrTraceState] = ddbitem.S(e.TraceState)
		}
	}
	return item, nil
}

// Put returns the transaction item that writes the event to the outbox
// table. The condition makes a reused event id fail loudly instead of
// overwriting an event the relay may not have published yet.
func Put(e outbox.Event, table string, retention time.Duration) (types.TransactWriteItem, error) {
	item, err := Encode(e, retention)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Put: &types.Put{
		TableName:                aws.String(table),
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(#eid)"),
		ExpressionAttributeNames: map[string]string{"#eid": outbox.AttrEventID},
	}}, nil
}

// Decode reads an outbox item back into its envelope and the trace
// context it was created under (outbox.Fields.Event says how). Every
// failure wraps outbox.ErrUndecodable.
func Decode(item map[string]types.AttributeValue) (outbox.Event, error) {
	r := ddbitem.Read(item)
	f := outbox.Fields{Payload: r.S(outbox.AttrPayload), AggregateID: r.S(outbox.AttrAggregateID), EventID: r.S(outbox.AttrEventID)}
	if err := r.Err(); err != nil {
		return outbox.Event{}, fmt.Errorf("%w: %w", outbox.ErrUndecodable, err)
	}
	f.TraceParent, f.TraceState, f.TraceHeader = str(item, outbox.AttrTraceParent), str(item, outbox.AttrTraceState), str(item, outbox.AttrTraceHeader)
	f.Origin = str(item, outbox.AttrOrigin)
	return f.Event()
}

// str is a string attribute's value, or "" when it is absent or of
// another type.
func str(item map[string]types.AttributeValue, name string) string {
	v, _ := item[name].(*types.AttributeValueMemberS)
	if v == nil {
		return ""
	}
	return v.Value
}
