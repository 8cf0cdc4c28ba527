package money_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
	"github.com/idemlambda/idemlambda/pkg/money"
)

func TestMarshalJSON(t *testing.T) {
	for _, tt := range []struct {
		m    money.Money
		want string
	}{
		{mustNew(t, 1999, money.EUR), `{"cents":1999,"currency":"EUR"}`},
		{mustNew(t, 0, money.JPY), `{"cents":0,"currency":"JPY"}`},
		{mustNew(t, math.MaxInt64, money.KWD), `{"cents":9223372036854775807,"currency":"KWD"}`},
	} {
		b, err := json.Marshal(tt.m)
		must.NoError(t, err)
		check.JSONEq(t, tt.want, string(b))
		check.Equal(t, tt.want, string(b))
	}
	_, err := json.Marshal(money.Money{})
	check.ErrorIs(t, err, money.ErrValidation)
	_, err = json.Marshal(struct{ Price money.Money }{})
	check.ErrorIs(t, err, money.ErrValidation, "zero value inside a struct must not encode")
}

func TestUnmarshalJSON(t *testing.T) {
	ok := []struct {
		in   string
		want money.Money
	}{
		{`{"cents":1999,"currency":"EUR"}`, mustNew(t, 1999, money.EUR)},
		{`{"currency":"EUR","cents":1999}`, mustNew(t, 1999, money.EUR)},
		{` { "cents" : 0 , "currency" : "JPY" } `, mustNew(t, 0, money.JPY)},
		{`{"cents":9223372036854775807,"currency":"KWD"}`, mustNew(t, math.MaxInt64, money.KWD)},
		{`{"cents":1,"currency":"\u0045UR"}`, mustNew(t, 1, money.EUR)},
	}
	for _, tt := range ok {
		var m money.Money
		must.NoError(t, json.Unmarshal([]byte(tt.in), &m), tt.in)
		check.Equal(t, tt.want, m, tt.in)
	}

	bad := []struct {
		in       string
		overflow bool
	}{
		{`null`, false},
		{``, false},
		{`{}`, false},
		{`[]`, false},
		{`"19.99 EUR"`, false},
		{`1999`, false},
		{`{"cents":1999}`, false},
		{`{"currency":"EUR"}`, false},
		{`{"cents":null,"currency":"EUR"}`, false},
		{`{"cents":1999,"currency":null}`, false},
		{`{"cents":1999.0,"currency":"EUR"}`, false},
		{`{"cents":1e3,"currency":"EUR"}`, false},
		{`{"cents":1E3,"currency":"EUR"}`, false},
		{`{"cents":"1999","currency":"EUR"}`, false},
		{`{"cents":-1,"currency":"EUR"}`, false},
		{`{"cents":-0,"currency":"EUR"}`, false},
		{`{"cents":true,"currency":"EUR"}`, false},
		{`{"cents":[1],"currency":"EUR"}`, false},
		{`{"cents":{},"currency":"EUR"}`, false},
		{`{"cents":1,"currency":1}`, false},
		{`{"cents":1,"currency":"eur"}`, false},
		{`{"cents":1,"currency":"XXX"}`, false},
		{`{"cents":1,"currency":""}`, false},
		{`{"cents":1,"currency":"EUR","extra":1}`, false},
		{`{"Cents":1,"currency":"EUR"}`, false},
		{`{"cents":1,"CURRENCY":"EUR"}`, false},
		{`{"cents":1,"cents":2,"currency":"EUR"}`, false},
		{`{"cents":1,"currency":"EUR","currency":"USD"}`, false},
		{`{"cents":1,"currency":"EUR"`, false},
		{`{"cents":1,"currency":"EUR"}}`, false},
		{`{"cents":1,"currency":"EUR"} {}`, false},
		{`{"cents":1,,"currency":"EUR"}`, false},
		{`{"cents":01,"currency":"EUR"}`, false},
		{`{"cents":9223372036854775808,"currency":"EUR"}`, true},
		{`{"cents":99999999999999999999999999,"currency":"EUR"}`, true},
	}
	for _, tt := range bad {
		before := mustNew(t, 42, money.GBP)
		m := before
		err := m.UnmarshalJSON([]byte(tt.in))
		check.ErrorIs(t, err, money.ErrValidation, tt.in)
		if tt.overflow {
			check.ErrorIs(t, err, money.ErrOverflow, tt.in)
		}
		check.Equal(t, before, m, "%s: target must be unchanged on error", tt.in)
	}

	var nilM *money.Money
	check.ErrorIs(t, nilM.UnmarshalJSON([]byte(`{"cents":1,"currency":"EUR"}`)), money.ErrValidation)
}

// Through encoding/json: null into a Money field is an error, into a *Money
// field it means "absent".
func TestUnmarshalJSONInStruct(t *testing.T) {
	var v struct {
		Price money.Money  `json:"price"`
		Old   *money.Money `json:"old"`
	}
	must.NoError(t, json.Unmarshal([]byte(`{"price":{"cents":5,"currency":"SEK"},"old":null}`), &v))
	check.Equal(t, mustNew(t, 5, money.SEK), v.Price)
	check.Nil(t, v.Old)

	err := json.Unmarshal([]byte(`{"price":null}`), &v)
	check.ErrorIs(t, err, money.ErrValidation)
	err = json.Unmarshal([]byte(`{"price":{"cents":1.5,"currency":"SEK"}}`), &v)
	check.ErrorIs(t, err, money.ErrValidation)
}

func FuzzUnmarshalJSON(f *testing.F) {
	for _, s := range []string{
		`{"cents":1999,"currency":"EUR"}`, `{"currency":"KWD","cents":0}`, `null`, `{}`,
		`{"cents":1999.0,"currency":"EUR"}`, `{"cents":1e3,"currency":"EUR"}`, `{"cents":"1","currency":"EUR"}`,
		`{"cents":-1,"currency":"EUR"}`, `{"cents":9223372036854775808,"currency":"EUR"}`,
		`{"cents":1,"cents":2,"currency":"EUR"}`, `{"cents":1,"currency":"EUR","x":[]}`,
		`{"cents":1,"currency":"EUR"} x`, `{"cents":1,"currency":"\u0045UR"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m money.Money
		if err := m.UnmarshalJSON(data); err != nil {
			must.ErrorIs(t, err, money.ErrValidation)
			must.Equal(t, money.Money{}, m)
			return
		}
		must.True(t, m.IsValid(), "decoded %q into invalid %v", data, m)
		must.True(t, json.Valid(data), "accepted invalid JSON %q", data)
		var generic map[string]any
		must.NoError(t, json.Unmarshal(data, &generic))
		must.Len(t, generic, 2)

		out, err := json.Marshal(m)
		must.NoError(t, err)
		var back money.Money
		must.NoError(t, json.Unmarshal(out, &back))
		must.Equal(t, m, back)
	})
}

func BenchmarkUnmarshalJSON(b *testing.B) {
	data := []byte(`{"cents":1999,"currency":"EUR"}`)
	b.ReportAllocs()
	for b.Loop() {
		var m money.Money
		if err := m.UnmarshalJSON(data); err != nil {
			b.Fatal(err)
		}
	}
}
