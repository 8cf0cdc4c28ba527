package outbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/internal/tables"
)

// Outbox item attributes besides the keys (README.md, Tables).
const (
	AttrEventType  = "event_type"
	AttrOccurredAt = "occurred_at"
	AttrPayload    = "payload"
)

// ErrUndecodable marks an outbox item that can never become an event; the
// relay logs and counts it instead of retrying it forever.
var ErrUndecodable = errors.New("outbox: undecodable item")

// Item encodes the event as an outbox item: the envelope JSON in payload,
// plus the keys and fields a reader can query without parsing it.
func (e Event) Item(retention time.Duration) (map[string]types.AttributeValue, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	payload, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("outbox: encode envelope: %w", err)
	}
	return map[string]types.AttributeValue{
		tables.AttrAggregateID: &types.AttributeValueMemberS{Value: e.Subject},
		tables.AttrEventID:     &types.AttributeValueMemberS{Value: e.ID},
		AttrEventType:          &types.AttributeValueMemberS{Value: e.Type},
		AttrOccurredAt:         &types.AttributeValueMemberS{Value: e.Time.UTC().Format(time.RFC3339Nano)},
		AttrPayload:            &types.AttributeValueMemberS{Value: string(payload)},
		tables.AttrExpiresAt:   &types.AttributeValueMemberN{Value: strconv.FormatInt(e.Time.Add(retention).Unix(), 10)},
	}, nil
}

// Put returns the transaction item that writes the event to the outbox
// table. The condition makes a reused event id fail loudly instead of
// overwriting an event the relay may not have published yet.
func (e Event) Put(table string, retention time.Duration) (types.TransactWriteItem, error) {
	item, err := e.Item(retention)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Put: &types.Put{
		TableName:                aws.String(table),
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(#eid)"),
		ExpressionAttributeNames: map[string]string{"#eid": tables.AttrEventID},
	}}, nil
}

// DecodeItem reads an outbox item back into its envelope. Every failure
// wraps ErrUndecodable: the item is malformed and retrying cannot help.
func DecodeItem(item map[string]types.AttributeValue) (Event, error) {
	str := func(name string) (string, error) {
		s, ok := item[name].(*types.AttributeValueMemberS)
		if !ok {
			return "", fmt.Errorf("%w: %s missing or not a string", ErrUndecodable, name)
		}
		return s.Value, nil
	}
	payload, err := str(AttrPayload)
	if err != nil {
		return Event{}, err
	}
	var e Event
	if err := json.Unmarshal([]byte(payload), &e); err != nil {
		return Event{}, fmt.Errorf("%w: payload: %w", ErrUndecodable, err)
	}
	if err := e.Validate(); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrUndecodable, err)
	}
	// The keys must agree with the envelope, or consumers would dedupe on
	// an id the table does not know.
	aggregate, err := str(tables.AttrAggregateID)
	if err != nil {
		return Event{}, err
	}
	eventID, err := str(tables.AttrEventID)
	if err != nil {
		return Event{}, err
	}
	if aggregate != e.Subject || eventID != e.ID {
		return Event{}, fmt.Errorf("%w: keys (%s, %s) disagree with envelope (%s, %s)",
			ErrUndecodable, aggregate, eventID, e.Subject, e.ID)
	}
	return e, nil
}
