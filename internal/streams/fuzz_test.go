package streams_test

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/streams"
)

// byteBuilder turns fuzz bytes into a Lambda image of any shape the events
// package can hold, the zero value and nil collections included (the JSON
// decoder cannot reach all of them, and panics on some malformed input of
// its own, so the fuzzer drives the constructors instead).
type byteBuilder struct{ b []byte }

func (bb *byteBuilder) next() byte {
	if len(bb.b) == 0 {
		return 0
	}
	c := bb.b[0]
	bb.b = bb.b[1:]
	return c
}

func (bb *byteBuilder) take(n int) []byte {
	n = min(n, len(bb.b))
	out := bb.b[:n]
	bb.b = bb.b[n:]
	return out
}

func (bb *byteBuilder) value(depth int) events.DynamoDBAttributeValue {
	op := bb.next()
	if depth > 70 { // past MaxDepth, to reach the depth check
		op %= 9
	}
	switch op % 13 {
	case 0:
		return events.NewStringAttribute(string(bb.take(int(bb.next() % 16))))
	case 1:
		return events.NewNumberAttribute(string(bb.take(int(bb.next() % 8))))
	case 2:
		return events.NewBinaryAttribute(bb.take(int(bb.next() % 8)))
	case 3:
		return events.NewBooleanAttribute(bb.next()%2 == 0)
	case 4:
		return events.NewNullAttribute()
	case 5:
		return events.NewStringSetAttribute([]string{string(bb.take(3)), string(bb.take(2))})
	case 6:
		return events.NewNumberSetAttribute([]string{string(bb.take(2))})
	case 7:
		return events.NewBinarySetAttribute([][]byte{bb.take(2), nil})
	case 8:
		return events.DynamoDBAttributeValue{} // the zero value
	case 9:
		return events.NewListAttribute(nil)
	case 10:
		return events.NewMapAttribute(nil)
	case 11:
		n := int(bb.next() % 4)
		l := make([]events.DynamoDBAttributeValue, n)
		for i := range l {
			l[i] = bb.value(depth + 1)
		}
		return events.NewListAttribute(l)
	default:
		return events.NewMapAttribute(bb.image(depth + 1))
	}
}

func (bb *byteBuilder) image(depth int) map[string]events.DynamoDBAttributeValue {
	n := int(bb.next() % 4)
	m := make(map[string]events.DynamoDBAttributeValue, n)
	for range n {
		m[string(bb.take(2))] = bb.value(depth)
	}
	return m
}

// FuzzItem checks that any image converts without panicking, and that what
// converts comes back the same through Image.
func FuzzItem(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 0, 'k', 0, 5, 'h', 'e', 'l', 'l', 'o'})
	f.Add([]byte{2, 'a', 'b', 8, 'c', 'd', 11, 3, 4, 8, 12})
	f.Add(append([]byte{1, 'x', 'x'}, make([]byte, 100)...))
	deep := []byte{1, 'd', 'd'}
	for range 80 {
		deep = append(deep, 11, 1)
	}
	f.Add(deep)
	f.Fuzz(func(t *testing.T, data []byte) {
		bb := &byteBuilder{b: data}
		image := bb.image(0)
		item, err := streams.Item(image)
		if err != nil {
			return
		}
		back, err := streams.Image(item)
		require.NoError(t, err)
		again, err := streams.Item(back)
		require.NoError(t, err)
		require.Equal(t, item, again)
	})
}
