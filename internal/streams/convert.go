// Package streams converts between the three shapes a DynamoDB attribute
// value takes: the Lambda stream event's events.DynamoDBAttributeValue,
// the DynamoDB SDK's types.AttributeValue and the DynamoDB Streams SDK's.
// internal/dev/streampoll reads a stream through the Streams API for runs
// without Lambda, and the tests build stream events, through it. The relay
// reads images in the Lambda event's types alone (internal/streamimage),
// whose rules of what an image may hold Item and Value apply.
package streams

import (
	"fmt"
	"slices"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/idemlambda/idemlambda/internal/streamimage"
)

// ErrInvalidValue reports an attribute value that has no DynamoDB meaning:
// an unknown or empty union member, a zero events.DynamoDBAttributeValue,
// or nesting deeper than MaxDepth (streamimage's).
var ErrInvalidValue = streamimage.ErrInvalidValue

// MaxDepth bounds the nesting of lists and maps a conversion follows
// (streamimage's).
const MaxDepth = streamimage.MaxDepth

// Item converts a stream image, as Lambda delivers it, to a DynamoDB item.
// A nil image gives a nil item. Byte and string slices are copied. An
// image streamimage.Check refuses is refused with its error.
func Item(image map[string]events.DynamoDBAttributeValue) (map[string]ddbtypes.AttributeValue, error) {
	if err := streamimage.Check(image); err != nil {
		return nil, err
	}
	return toItem(image)
}

// Value converts one attribute of a Lambda stream event to the DynamoDB
// SDK's type.
func Value(av events.DynamoDBAttributeValue) (ddbtypes.AttributeValue, error) {
	if err := streamimage.CheckValue(av); err != nil {
		return nil, err
	}
	return toValue(av)
}

// toItem and toValue convert what streamimage has checked.
func toItem(image map[string]events.DynamoDBAttributeValue) (map[string]ddbtypes.AttributeValue, error) {
	if image == nil {
		return nil, nil
	}
	item := make(map[string]ddbtypes.AttributeValue, len(image))
	for name, av := range image {
		v, err := toValue(av)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		item[name] = v
	}
	return item, nil
}

func toValue(av events.DynamoDBAttributeValue) (ddbtypes.AttributeValue, error) {
	switch av.DataType() {
	case events.DataTypeString:
		return &ddbtypes.AttributeValueMemberS{Value: av.String()}, nil
	case events.DataTypeNumber:
		return &ddbtypes.AttributeValueMemberN{Value: av.Number()}, nil
	case events.DataTypeBinary:
		return &ddbtypes.AttributeValueMemberB{Value: slices.Clone(av.Binary())}, nil
	case events.DataTypeBoolean:
		return &ddbtypes.AttributeValueMemberBOOL{Value: av.Boolean()}, nil
	case events.DataTypeNull:
		return &ddbtypes.AttributeValueMemberNULL{Value: true}, nil
	case events.DataTypeStringSet:
		return &ddbtypes.AttributeValueMemberSS{Value: slices.Clone(av.StringSet())}, nil
	case events.DataTypeNumberSet:
		return &ddbtypes.AttributeValueMemberNS{Value: slices.Clone(av.NumberSet())}, nil
	case events.DataTypeBinarySet:
		return &ddbtypes.AttributeValueMemberBS{Value: cloneBytes(av.BinarySet())}, nil
	case events.DataTypeList:
		list := av.List()
		out := make([]ddbtypes.AttributeValue, len(list))
		for i, e := range list {
			v, err := toValue(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = v
		}
		return &ddbtypes.AttributeValueMemberL{Value: out}, nil
	case events.DataTypeMap:
		m, err := toItem(av.Map())
		if err != nil {
			return nil, err
		}
		if m == nil {
			m = map[string]ddbtypes.AttributeValue{}
		}
		return &ddbtypes.AttributeValueMemberM{Value: m}, nil
	}
	return nil, fmt.Errorf("%w: unknown type %d", ErrInvalidValue, av.DataType())
}

// Image converts a DynamoDB item to a stream image as Lambda would deliver
// it: the inverse of Item. The local runner uses it to feed the relay from
// a store without Streams, and tests use it to build events.
func Image(item map[string]ddbtypes.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	return fromItem(item, 0)
}

// EventValue converts one DynamoDB SDK attribute value to the Lambda event
// type: the inverse of Value.
func EventValue(v ddbtypes.AttributeValue) (events.DynamoDBAttributeValue, error) {
	return fromValue(v, 0)
}

func fromItem(item map[string]ddbtypes.AttributeValue, depth int) (map[string]events.DynamoDBAttributeValue, error) {
	if item == nil {
		return nil, nil
	}
	image := make(map[string]events.DynamoDBAttributeValue, len(item))
	for name, v := range item {
		av, err := fromValue(v, depth)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		image[name] = av
	}
	return image, nil
}

func fromValue(v ddbtypes.AttributeValue, depth int) (events.DynamoDBAttributeValue, error) {
	if depth > MaxDepth {
		return events.DynamoDBAttributeValue{}, fmt.Errorf("%w: nested deeper than %d", ErrInvalidValue, MaxDepth)
	}
	switch v := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value), nil
	case *ddbtypes.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value), nil
	case *ddbtypes.AttributeValueMemberB:
		return events.NewBinaryAttribute(slices.Clone(v.Value)), nil
	case *ddbtypes.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value), nil
	case *ddbtypes.AttributeValueMemberNULL:
		return events.NewNullAttribute(), nil
	case *ddbtypes.AttributeValueMemberSS:
		return events.NewStringSetAttribute(slices.Clone(v.Value)), nil
	case *ddbtypes.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(slices.Clone(v.Value)), nil
	case *ddbtypes.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(cloneBytes(v.Value)), nil
	case *ddbtypes.AttributeValueMemberL:
		list := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, e := range v.Value {
			av, err := fromValue(e, depth+1)
			if err != nil {
				return events.DynamoDBAttributeValue{}, fmt.Errorf("[%d]: %w", i, err)
			}
			list[i] = av
		}
		return events.NewListAttribute(list), nil
	case *ddbtypes.AttributeValueMemberM:
		m, err := fromItem(v.Value, depth+1)
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		if m == nil {
			m = map[string]events.DynamoDBAttributeValue{}
		}
		return events.NewMapAttribute(m), nil
	case nil:
		return events.DynamoDBAttributeValue{}, fmt.Errorf("%w: nil", ErrInvalidValue)
	}
	return events.DynamoDBAttributeValue{}, fmt.Errorf("%w: unsupported member %T", ErrInvalidValue, v)
}

// StreamImage converts an image read through the DynamoDB Streams API to the
// shape Lambda delivers. The Streams SDK has its own AttributeValue types,
// identical in meaning to the DynamoDB SDK's: the SDK's own mapping takes
// them there, and Image, with its checks, the rest of the way. The mapping
// follows nesting without a bound, which is safe for what it is given here:
// images the Streams client decoded from JSON, which cannot contain
// themselves.
func StreamImage(image map[string]streamtypes.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	if image == nil {
		return nil, nil
	}
	item, err := attributevalue.FromDynamoDBStreamsMap(image)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidValue, err)
	}
	return Image(item)
}

// StreamValue converts one DynamoDB Streams SDK attribute value to the
// Lambda event type, as StreamImage does.
func StreamValue(v streamtypes.AttributeValue) (events.DynamoDBAttributeValue, error) {
	dv, err := attributevalue.FromDynamoDBStreams(v)
	if err != nil {
		return events.DynamoDBAttributeValue{}, fmt.Errorf("%w: %w", ErrInvalidValue, err)
	}
	return EventValue(dv)
}

func cloneBytes(in [][]byte) [][]byte {
	if in == nil {
		return nil
	}
	out := make([][]byte, len(in))
	for i, b := range in {
		out[i] = slices.Clone(b)
	}
	return out
}
