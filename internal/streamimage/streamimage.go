// Package streamimage reads the items of a DynamoDB stream as Lambda
// delivers them, in aws-lambda-go's events types: Check says whether
// every value of an image has a DynamoDB meaning, and a Reader reads its
// attributes strictly, as pkg/ddbitem reads an item in the SDK's types.
//
// It imports none of the AWS SDK's DynamoDB packages, so the relay, which
// reads stream images and writes to no table, links none of them: their
// initialisers (the DynamoDB client's serialization schemas, about half a
// millisecond) would run at each of its cold starts. internal/streams
// converts images to and from the SDK's types, with the rules of Check.
package streamimage

import (
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
)

// ErrInvalidValue reports an attribute value that has no DynamoDB
// meaning: an unknown type, a zero events.DynamoDBAttributeValue, or
// nesting deeper than MaxDepth.
var ErrInvalidValue = errors.New("streamimage: invalid attribute value")

// ErrInvalid marks an image that lacks an attribute or holds one of the
// wrong type. Decoders wrap it in their own error.
var ErrInvalid = errors.New("streamimage: invalid image")

// MaxDepth bounds the nesting of lists and maps Check follows. DynamoDB
// itself allows 32 levels; the bound also turns a value that contains
// itself (possible with Go maps) into an error rather than a stack
// overflow.
const MaxDepth = 64

// Check returns nil when every value of image, nested ones included, has
// a DynamoDB meaning, else an error wrapping ErrInvalidValue that names
// the first it met by its path. A nil image is valid (no item).
func Check(image map[string]events.DynamoDBAttributeValue) error {
	return checkItem(image, 0)
}

// CheckValue is Check for one value.
func CheckValue(av events.DynamoDBAttributeValue) error {
	return checkValue(av, 0)
}

func checkItem(image map[string]events.DynamoDBAttributeValue, depth int) error {
	for name, av := range image {
		if err := checkValue(av, depth); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

func checkValue(av events.DynamoDBAttributeValue, depth int) error {
	if depth > MaxDepth {
		return fmt.Errorf("%w: nested deeper than %d", ErrInvalidValue, MaxDepth)
	}
	// The zero DynamoDBAttributeValue claims to be Binary but holds
	// nothing, and its accessors panic on it; only NULL may be empty.
	if av.IsNull() && av.DataType() != events.DataTypeNull {
		return fmt.Errorf("%w: type %d without a value", ErrInvalidValue, av.DataType())
	}
	switch av.DataType() {
	case events.DataTypeString, events.DataTypeNumber, events.DataTypeBinary, events.DataTypeBoolean,
		events.DataTypeNull, events.DataTypeStringSet, events.DataTypeNumberSet, events.DataTypeBinarySet:
		return nil
	case events.DataTypeList:
		for i, e := range av.List() {
			if err := checkValue(e, depth+1); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return nil
	case events.DataTypeMap:
		return checkItem(av.Map(), depth+1)
	}
	return fmt.Errorf("%w: unknown type %d", ErrInvalidValue, av.DataType())
}

// Reader reads the attributes of one image. It records the first problem
// and returns zero values after it, so a decoder reads every attribute
// and checks Err once.
type Reader struct {
	image map[string]events.DynamoDBAttributeValue
	err   error
}

// Read returns a Reader of image; a nil image reads as empty.
func Read(image map[string]events.DynamoDBAttributeValue) *Reader { return &Reader{image: image} }

// Err returns the first problem met, wrapping ErrInvalid, or nil.
func (r *Reader) Err() error { return r.err }

func (r *Reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
	}
}

// S returns a required string attribute: one that is missing, of another
// type or a zero value is the Reader's problem.
func (r *Reader) S(name string) string {
	av, ok := r.image[name]
	switch {
	case !ok:
		r.fail("missing %s", name)
	case av.DataType() != events.DataTypeString || av.IsNull():
		r.fail("%s is %s, not a string", name, kind(av))
	default:
		return av.String()
	}
	return ""
}

// String returns the attribute's value when it is a string, else ""
// (absent, or of another type): for attributes whose absence or
// malformation is no error.
func String(image map[string]events.DynamoDBAttributeValue, name string) string {
	av, ok := image[name]
	if !ok || av.DataType() != events.DataTypeString || av.IsNull() {
		return ""
	}
	return av.String()
}

// kind names an attribute value's DynamoDB type, for error messages, as
// pkg/ddbitem names them.
func kind(av events.DynamoDBAttributeValue) string {
	if av.IsNull() && av.DataType() != events.DataTypeNull {
		return "nothing"
	}
	switch av.DataType() {
	case events.DataTypeString:
		return "a string"
	case events.DataTypeNumber:
		return "a number"
	case events.DataTypeBinary:
		return "binary"
	case events.DataTypeBoolean:
		return "a boolean"
	case events.DataTypeNull:
		return "null"
	case events.DataTypeMap:
		return "a map"
	case events.DataTypeList:
		return "a list"
	case events.DataTypeStringSet, events.DataTypeNumberSet, events.DataTypeBinarySet:
		return "a set"
	}
	return fmt.Sprintf("type %d", av.DataType())
}
