package streamimage_test

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/streamimage"
)

func TestCheckAcceptsEveryType(t *testing.T) {
	t.Parallel()
	image := map[string]events.DynamoDBAttributeValue{
		"s": events.NewStringAttribute(""), "n": events.NewNumberAttribute("1"), "b": events.NewBinaryAttribute([]byte{}),
		"bool": events.NewBooleanAttribute(false), "null": events.NewNullAttribute(),
		"ss": events.NewStringSetAttribute([]string{"a"}), "ns": events.NewNumberSetAttribute([]string{"1"}),
		"bs": events.NewBinarySetAttribute([][]byte{{1}}), "empty list": events.NewListAttribute(nil),
		"empty map": events.NewMapAttribute(nil),
		"nested": events.NewListAttribute([]events.DynamoDBAttributeValue{
			events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"k": events.NewStringAttribute("v")}),
		}),
	}
	require.NoError(t, streamimage.Check(image))
	require.NoError(t, streamimage.Check(nil))
	for name, av := range image {
		assert.NoError(t, streamimage.CheckValue(av), name)
	}
}

func TestCheckRejectsWhatDynamoDBCannotHold(t *testing.T) {
	t.Parallel()
	// The zero events.DynamoDBAttributeValue says Binary and holds nothing;
	// its own accessor would panic.
	err := streamimage.CheckValue(events.DynamoDBAttributeValue{})
	assert.ErrorIs(t, err, streamimage.ErrInvalidValue)
	err = streamimage.Check(map[string]events.DynamoDBAttributeValue{
		"m": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
			"l": events.NewListAttribute([]events.DynamoDBAttributeValue{events.NewStringAttribute("ok"), {}}),
		}),
	})
	assert.ErrorIs(t, err, streamimage.ErrInvalidValue)
	assert.ErrorContains(t, err, "m: l: [1]: ", "the path to the value")
}

func TestCheckStopsAtMaxDepth(t *testing.T) {
	t.Parallel()
	nest := func(levels int) events.DynamoDBAttributeValue {
		v := events.NewStringAttribute("leaf")
		for range levels {
			v = events.NewListAttribute([]events.DynamoDBAttributeValue{v})
		}
		return v
	}
	require.NoError(t, streamimage.CheckValue(nest(streamimage.MaxDepth)), "MaxDepth levels are followed")
	assert.ErrorIs(t, streamimage.CheckValue(nest(streamimage.MaxDepth+1)), streamimage.ErrInvalidValue)

	// A map that contains itself is an error, not a stack overflow.
	self := map[string]events.DynamoDBAttributeValue{}
	self["me"] = events.NewMapAttribute(self)
	assert.ErrorIs(t, streamimage.Check(self), streamimage.ErrInvalidValue)
}

func TestReader(t *testing.T) {
	t.Parallel()
	image := map[string]events.DynamoDBAttributeValue{
		"s": events.NewStringAttribute("v"), "empty": events.NewStringAttribute(""), "n": events.NewNumberAttribute("1"),
	}
	r := streamimage.Read(image)
	assert.Equal(t, "v", r.S("s"))
	assert.Empty(t, r.S("empty"))
	require.NoError(t, r.Err())

	assert.Empty(t, r.S("missing"))
	assert.Empty(t, r.S("n"), "after the first problem")
	assert.ErrorIs(t, r.Err(), streamimage.ErrInvalid)
	assert.EqualError(t, r.Err(), "streamimage: invalid image: missing missing", "the first problem")

	// Each type is named as pkg/ddbitem names it.
	for want, av := range map[string]events.DynamoDBAttributeValue{
		"a number": events.NewNumberAttribute("1"), "binary": events.NewBinaryAttribute([]byte{1}),
		"a boolean": events.NewBooleanAttribute(true), "null": events.NewNullAttribute(),
		"a map": events.NewMapAttribute(nil), "a list": events.NewListAttribute(nil),
		"a set": events.NewStringSetAttribute([]string{"a"}), "nothing": {},
	} {
		r := streamimage.Read(map[string]events.DynamoDBAttributeValue{"a": av})
		assert.Empty(t, r.S("a"), want)
		assert.EqualError(t, r.Err(), "streamimage: invalid image: a is "+want+", not a string")
	}
	assert.Empty(t, streamimage.Read(nil).S("x"))
}

func TestString(t *testing.T) {
	t.Parallel()
	image := map[string]events.DynamoDBAttributeValue{
		"s": events.NewStringAttribute("v"), "n": events.NewNumberAttribute("1"), "zero": {},
	}
	assert.Equal(t, "v", streamimage.String(image, "s"))
	for _, name := range []string{"n", "zero", "absent"} {
		assert.Empty(t, streamimage.String(image, name), name)
	}
}
