package record_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/ddbitem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/internal/record"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

func completed(extra map[string]types.AttributeValue) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{
		"id": ddbitem.S("v1|2:op|1:p|1:k"), "status": ddbitem.S(record.StatusCompleted),
		"fingerprint": ddbitem.S("fp"), "expires_at": ddbitem.N(2000000000),
	}
	for k, v := range extra {
		item[k] = v
	}
	return item
}

// The latest format reads back as written; format 1 reads as the result
// idemhttp writes for its response; a later format is refused.
func TestFormats(t *testing.T) {
	t.Parallel()
	l := idemtable.Layout{}.WithDefaults()
	res := record.Result{Status: 201, Meta: map[string]string{"Location": "/x"}, Body: []byte("body"), Omitted: "too large"}
	item := record.Item(l.Attributes, res, 3)
	check.Equal(t, ddbitem.StringMap(map[string]string{":status": "201", "Location": "/x", ":omitted": "too large"}), item["response_meta"],
		"the status and the omission under their reserved entries, as format 2 has always stored them")
	r, err := record.Decode(l, completed(item))
	must.NoError(t, err)
	check.Equal(t, record.Format, r.Format)
	check.Equal(t, res, r.Result)
	check.Equal(t, 3, r.Writes, "the writes committed with it")
	check.Equal(t, res.Size(), 4+3+(1+7+3)+(1+8+2)+(1+8+9), "the body, and the metadata as stored")

	// Format 2 without a status: none, and no metadata map.
	r, err = record.Decode(l, completed(record.Item(l.Attributes, record.Result{Body: []byte("v")}, 0)))
	must.NoError(t, err)
	check.Equal(t, record.Result{Body: []byte("v")}, r.Result)
	// A status entry that is not a number (never written by idemhttp)
	// stays an entry, so a replay loses nothing.
	r, err = record.Decode(l, completed(map[string]types.AttributeValue{
		"format": ddbitem.N(2), "response_body": ddbitem.S(""), "response_meta": ddbitem.StringMap(map[string]string{":status": "ok"}),
	}))
	must.NoError(t, err)
	check.Equal(t, record.Result{Meta: map[string]string{":status": "ok"}, Body: []byte{}}, r.Result)

	r, err = record.Decode(l, completed(map[string]types.AttributeValue{
		"response_status":  ddbitem.N(202),
		"response_headers": ddbitem.StringMap(map[string]string{"X": "y", "Idempotent-Body-Omitted": "too large"}),
		"response_body":    ddbitem.S(""),
	}))
	must.NoError(t, err)
	check.Equal(t, 1, r.Format)
	check.Equal(t, record.WritesUnknown, r.Writes, "completed before records counted their writes")
	check.Equal(t, record.Result{Status: 202, Meta: map[string]string{"X": "y"}, Body: []byte{}, Omitted: "too large"}, r.Result)

	_, err = record.Decode(l, completed(map[string]types.AttributeValue{"format": ddbitem.N(3), "response_body": ddbitem.S("")}))
	check.True(t, errors.Is(err, record.ErrCorrupt), "a later format: %v", err)
	_, err = record.Decode(l, completed(map[string]types.AttributeValue{"response_body": ddbitem.S("")}))
	check.True(t, errors.Is(err, record.ErrCorrupt), "format 1 without its status: %v", err)
}
