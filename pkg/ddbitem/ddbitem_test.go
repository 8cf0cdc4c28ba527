package ddbitem_test

import (
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/ddbitem"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

func TestReaderReadsWhatTheWritersWrite(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 8, 30, 0, 123456789, time.FixedZone("CET", 3600))
	item := map[string]types.AttributeValue{
		"s": ddbitem.S("x"), "n": ddbitem.N(-42), "t": ddbitem.Time(at),
		"m": ddbitem.StringMap(map[string]string{"a": "1"}), "text": ddbitem.Blob([]byte("é")),
		"bin": ddbitem.Blob([]byte{0xff, 0}),
	}
	r := ddbitem.Read(item)
	check.Equal(t, "x", r.S("s"))
	check.Equal(t, int64(-42), r.Int("n"))
	check.True(t, at.Equal(r.Time("t")))
	m, ok := r.StringMap("m")
	check.True(t, ok)
	check.Equal(t, map[string]string{"a": "1"}, m)
	check.Equal(t, []byte("é"), r.Bytes("text"))
	check.Equal(t, []byte{0xff, 0}, r.Bytes("bin"))
	check.IsType(t, &types.AttributeValueMemberS{}, item["text"], "UTF-8 is stored as a string")
	check.IsType(t, &types.AttributeValueMemberB{}, item["bin"])
	_, ok = r.OptS("absent")
	check.False(t, ok)
	_, ok = r.OptInt("absent")
	check.False(t, ok)
	check.True(t, r.Has("s"))
	must.NoError(t, r.Err(), "absent optional attributes are not errors")
}

func TestReaderRefusesMissingAndMistypedAttributes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		item map[string]types.AttributeValue
		read func(*ddbitem.Reader)
		want string
	}{
		{nil, func(r *ddbitem.Reader) { r.S("id") }, "missing id"},
		{map[string]types.AttributeValue{"id": ddbitem.N(1)}, func(r *ddbitem.Reader) { r.S("id") }, "id is a number, not a string"},
		{map[string]types.AttributeValue{"id": &types.AttributeValueMemberNULL{Value: true}}, func(r *ddbitem.Reader) { r.OptS("id") }, "id is null, not a string"},
		{map[string]types.AttributeValue{"n": ddbitem.S("1")}, func(r *ddbitem.Reader) { r.Int("n") }, "n is a string, not a number"},
		{map[string]types.AttributeValue{"n": &types.AttributeValueMemberN{Value: "1.5"}}, func(r *ddbitem.Reader) { r.Int("n") }, `n: "1.5" is not a 64-bit integer`},
		{map[string]types.AttributeValue{"n": &types.AttributeValueMemberN{Value: "9223372036854775808"}}, func(r *ddbitem.Reader) { r.Int("n") }, "not a 64-bit integer"},
		{map[string]types.AttributeValue{"b": ddbitem.N(1)}, func(r *ddbitem.Reader) { r.Bytes("b") }, "b is a number, neither a string nor binary"},
		{map[string]types.AttributeValue{"m": ddbitem.S("x")}, func(r *ddbitem.Reader) { r.StringMap("m") }, "m is a string, not a map"},
		{map[string]types.AttributeValue{"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": ddbitem.N(1)}}}, func(r *ddbitem.Reader) { r.StringMap("m") }, "m.k is a number, not a string"},
		{map[string]types.AttributeValue{"t": ddbitem.S("yesterday")}, func(r *ddbitem.Reader) { r.Time("t") }, `t: "yesterday" is not an RFC 3339 time`},
		{map[string]types.AttributeValue{"l": &types.AttributeValueMemberL{}}, func(r *ddbitem.Reader) { r.S("l") }, "l is a list"},
		{map[string]types.AttributeValue{"x": nil}, func(r *ddbitem.Reader) { r.S("x") }, "x is nil"},
	} {
		r := ddbitem.Read(tc.item)
		tc.read(r)
		must.Error(t, r.Err(), tc.want)
		check.True(t, errors.Is(r.Err(), ddbitem.ErrInvalid))
		check.Contains(t, r.Err().Error(), tc.want)
	}
}

func TestReaderKeepsTheFirstProblem(t *testing.T) {
	t.Parallel()
	r := ddbitem.Read(map[string]types.AttributeValue{"b": ddbitem.N(1)})
	r.S("a")
	r.S("b")
	check.EqualError(t, r.Err(), "ddbitem: invalid item: missing a")
}
