package streams_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/streams"
)

// gen builds random DynamoDB values of every type, nested, including the
// edge cases: empty lists and maps, empty binary, NULL, odd numbers.
type gen struct{ r *rand.Rand }

func (g gen) value(depth int) ddbtypes.AttributeValue {
	kinds := 10
	if depth >= 4 {
		kinds = 8 // scalars and sets only
	}
	switch g.r.IntN(kinds) {
	case 0:
		return &ddbtypes.AttributeValueMemberS{Value: g.str()}
	case 1:
		return &ddbtypes.AttributeValueMemberN{Value: g.num()}
	case 2:
		return &ddbtypes.AttributeValueMemberB{Value: g.bytes()}
	case 3:
		return &ddbtypes.AttributeValueMemberBOOL{Value: g.r.IntN(2) == 0}
	case 4:
		return &ddbtypes.AttributeValueMemberNULL{Value: true}
	case 5:
		ss := make([]string, 1+g.r.IntN(4))
		for i := range ss {
			ss[i] = g.str()
		}
		return &ddbtypes.AttributeValueMemberSS{Value: ss}
	case 6:
		ns := make([]string, 1+g.r.IntN(4))
		for i := range ns {
			ns[i] = g.num()
		}
		return &ddbtypes.AttributeValueMemberNS{Value: ns}
	case 7:
		bs := make([][]byte, 1+g.r.IntN(4))
		for i := range bs {
			bs[i] = g.bytes()
		}
		return &ddbtypes.AttributeValueMemberBS{Value: bs}
	case 8:
		l := make([]ddbtypes.AttributeValue, g.r.IntN(4)) // often empty
		for i := range l {
			l[i] = g.value(depth + 1)
		}
		return &ddbtypes.AttributeValueMemberL{Value: l}
	default:
		return &ddbtypes.AttributeValueMemberM{Value: g.item(depth+1, g.r.IntN(4))}
	}
}

func (g gen) item(depth, n int) map[string]ddbtypes.AttributeValue {
	m := make(map[string]ddbtypes.AttributeValue, n)
	for range n {
		m[g.str()] = g.value(depth)
	}
	return m
}

func (g gen) str() string {
	const alphabet = "abcXYZ09 _-€ü\u0000\"\\/{}"
	runes := []rune(alphabet)
	out := make([]rune, g.r.IntN(12))
	for i := range out {
		out[i] = runes[g.r.IntN(len(runes))]
	}
	return string(out)
}

func (g gen) num() string {
	switch g.r.IntN(4) {
	case 0:
		return strconv.FormatInt(g.r.Int64()-g.r.Int64(), 10)
	case 1:
		return strconv.FormatFloat(g.r.NormFloat64()*1e6, 'g', -1, 64)
	case 2:
		return "12345678901234567890123456789012345678" // 38 digits: beyond int64 and float64
	default:
		return "-1E-130"
	}
}

func (g gen) bytes() []byte {
	b := make([]byte, g.r.IntN(20)) // often empty, never nil
	for i := range b {
		b[i] = byte(g.r.UintN(256))
	}
	return b
}

func TestItemImageRoundTripProperty(t *testing.T) {
	t.Parallel()
	g := gen{rand.New(rand.NewPCG(20261129, 1))}
	for i := range 2000 {
		item := g.item(0, 1+g.r.IntN(6))
		image, err := streams.Image(item)
		require.NoError(t, err, "case %d", i)
		back, err := streams.Item(image)
		require.NoError(t, err, "case %d", i)
		require.Equal(t, item, back, "case %d", i)
	}
}

// The same property through Lambda's own JSON: the image a function
// receives is what the runtime unmarshals from the event payload.
func TestItemRoundTripThroughLambdaJSONProperty(t *testing.T) {
	t.Parallel()
	g := gen{rand.New(rand.NewPCG(20261129, 2))}
	for i := range 2000 {
		item := g.item(0, 1+g.r.IntN(6))
		image, err := streams.Image(item)
		require.NoError(t, err)
		raw, err := json.Marshal(image)
		require.NoError(t, err)
		var decoded map[string]events.DynamoDBAttributeValue
		require.NoError(t, json.Unmarshal(raw, &decoded), "case %d: %s", i, raw)
		back, err := streams.Item(decoded)
		require.NoError(t, err, "case %d", i)
		require.Equal(t, item, back, "case %d: %s", i, raw)
	}
}

// toStreams mirrors a DynamoDB SDK value into the Streams SDK's types, the
// shape GetRecords returns.
func toStreams(v ddbtypes.AttributeValue) streamtypes.AttributeValue {
	switch v := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return &streamtypes.AttributeValueMemberS{Value: v.Value}
	case *ddbtypes.AttributeValueMemberN:
		return &streamtypes.AttributeValueMemberN{Value: v.Value}
	case *ddbtypes.AttributeValueMemberB:
		return &streamtypes.AttributeValueMemberB{Value: v.Value}
	case *ddbtypes.AttributeValueMemberBOOL:
		return &streamtypes.AttributeValueMemberBOOL{Value: v.Value}
	case *ddbtypes.AttributeValueMemberNULL:
		return &streamtypes.AttributeValueMemberNULL{Value: v.Value}
	case *ddbtypes.AttributeValueMemberSS:
		return &streamtypes.AttributeValueMemberSS{Value: v.Value}
	case *ddbtypes.AttributeValueMemberNS:
		return &streamtypes.AttributeValueMemberNS{Value: v.Value}
	case *ddbtypes.AttributeValueMemberBS:
		return &streamtypes.AttributeValueMemberBS{Value: v.Value}
	case *ddbtypes.AttributeValueMemberL:
		l := make([]streamtypes.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = toStreams(e)
		}
		return &streamtypes.AttributeValueMemberL{Value: l}
	case *ddbtypes.AttributeValueMemberM:
		return &streamtypes.AttributeValueMemberM{Value: toStreamsItem(v.Value)}
	}
	panic(fmt.Sprintf("test generator made %T", v))
}

func toStreamsItem(item map[string]ddbtypes.AttributeValue) map[string]streamtypes.AttributeValue {
	m := make(map[string]streamtypes.AttributeValue, len(item))
	for k, v := range item {
		m[k] = toStreams(v)
	}
	return m
}

func TestStreamImageProperty(t *testing.T) {
	t.Parallel()
	g := gen{rand.New(rand.NewPCG(20261129, 3))}
	for i := range 2000 {
		item := g.item(0, 1+g.r.IntN(6))
		image, err := streams.StreamImage(toStreamsItem(item))
		require.NoError(t, err, "case %d", i)
		back, err := streams.Item(image)
		require.NoError(t, err, "case %d", i)
		require.Equal(t, item, back, "case %d", i)
	}
}

func TestConvertEdgeCases(t *testing.T) {
	t.Parallel()
	for name, v := range map[string]ddbtypes.AttributeValue{
		"empty list":      &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{}},
		"empty map":       &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{}},
		"NULL":            &ddbtypes.AttributeValueMemberNULL{Value: true},
		"empty binary":    &ddbtypes.AttributeValueMemberB{Value: []byte{}},
		"binary":          &ddbtypes.AttributeValueMemberB{Value: []byte{0, 1, 0xfe, 0xff}},
		"number set":      &ddbtypes.AttributeValueMemberNS{Value: []string{"1", "-2.5", "1E+10", "12345678901234567890123456789012345678"}},
		"binary set":      &ddbtypes.AttributeValueMemberBS{Value: [][]byte{{}, {0}, {0xff, 0xfe}}},
		"list of empties": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{&ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{}}, &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{}}, &ddbtypes.AttributeValueMemberNULL{Value: true}}},
	} {
		av, err := streams.EventValue(v)
		require.NoError(t, err, name)
		back, err := streams.Value(av)
		require.NoError(t, err, name)
		assert.Equal(t, v, back, name)
	}
	// The Lambda type's NULL is the DynamoDB NULL: true.
	null, err := streams.Value(events.NewNullAttribute())
	require.NoError(t, err)
	assert.Equal(t, &ddbtypes.AttributeValueMemberNULL{Value: true}, null)
	// A nil map or list from the Lambda side is still a map or list.
	m, err := streams.Value(events.NewMapAttribute(nil))
	require.NoError(t, err)
	assert.Equal(t, &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{}}, m)
	item, err := streams.Item(nil)
	require.NoError(t, err)
	assert.Nil(t, item)
}

func TestConvertCopiesBytes(t *testing.T) {
	t.Parallel()
	b := []byte{1, 2, 3}
	v, err := streams.Value(events.NewBinaryAttribute(b))
	require.NoError(t, err)
	b[0] = 9
	assert.Equal(t, []byte{1, 2, 3}, v.(*ddbtypes.AttributeValueMemberB).Value)
}

func TestConvertRejectsWhatDynamoDBCannotHold(t *testing.T) {
	t.Parallel()
	// The zero events.DynamoDBAttributeValue says Binary and holds nothing;
	// its own accessor would panic.
	_, err := streams.Value(events.DynamoDBAttributeValue{})
	assert.ErrorIs(t, err, streams.ErrInvalidValue)
	_, err = streams.Item(map[string]events.DynamoDBAttributeValue{
		"l": events.NewListAttribute([]events.DynamoDBAttributeValue{{}}),
	})
	assert.ErrorIs(t, err, streams.ErrInvalidValue)
	assert.ErrorContains(t, err, "l: [0]")

	_, err = streams.EventValue(nil)
	assert.ErrorIs(t, err, streams.ErrInvalidValue)
	_, err = streams.EventValue(&ddbtypes.UnknownUnionMember{Tag: "X"})
	assert.ErrorIs(t, err, streams.ErrInvalidValue)
	_, err = streams.StreamValue(nil)
	assert.ErrorIs(t, err, streams.ErrInvalidValue)
	_, err = streams.StreamValue(&streamtypes.UnknownUnionMember{Tag: "X"})
	assert.ErrorIs(t, err, streams.ErrInvalidValue)
}

func TestConvertStopsAtMaxDepth(t *testing.T) {
	t.Parallel()
	nest := func(levels int) ddbtypes.AttributeValue {
		var v ddbtypes.AttributeValue = &ddbtypes.AttributeValueMemberS{Value: "leaf"}
		for range levels {
			v = &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{v}}
		}
		return v
	}
	_, err := streams.EventValue(nest(streams.MaxDepth))
	require.NoError(t, err, "MaxDepth levels convert")
	_, err = streams.EventValue(nest(streams.MaxDepth + 1))
	assert.ErrorIs(t, err, streams.ErrInvalidValue)

	// A map that contains itself is an error, not a stack overflow.
	self := map[string]events.DynamoDBAttributeValue{}
	self["me"] = events.NewMapAttribute(self)
	_, err = streams.Item(self)
	assert.ErrorIs(t, err, streams.ErrInvalidValue)
	cyc := map[string]ddbtypes.AttributeValue{}
	cyc["me"] = &ddbtypes.AttributeValueMemberM{Value: cyc}
	_, err = streams.Image(cyc)
	assert.ErrorIs(t, err, streams.ErrInvalidValue)
}
