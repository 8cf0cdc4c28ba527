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
	meta := map[string]string{":status": "201", "Location": "/x"}
	r, err := record.Decode(l, completed(record.Item(l.Attributes, []byte("body"), meta, 3)))
	must.NoError(t, err)
	check.Equal(t, record.Format, r.Format)
	check.Equal(t, []byte("body"), r.Body)
	check.Equal(t, meta, r.Meta)
	check.Equal(t, 3, r.Writes, "the writes committed with it")

	r, err = record.Decode(l, completed(map[string]types.AttributeValue{
		"response_status":  ddbitem.N(202),
		"response_headers": ddbitem.StringMap(map[string]string{"X": "y", "Idempotent-Body-Omitted": "too large"}),
		"response_body":    ddbitem.S(""),
	}))
	must.NoError(t, err)
	check.Equal(t, 1, r.Format)
	check.Equal(t, record.WritesUnknown, r.Writes, "completed before records counted their writes")
	check.Equal(t, map[string]string{record.MetaStatus: "202", "X": "y", record.MetaOmitted: "too large"}, r.Meta)

	_, err = record.Decode(l, completed(map[string]types.AttributeValue{"format": ddbitem.N(3), "response_body": ddbitem.S("")}))
	check.True(t, errors.Is(err, record.ErrCorrupt), "a later format: %v", err)
	_, err = record.Decode(l, completed(map[string]types.AttributeValue{"response_body": ddbitem.S("")}))
	check.True(t, errors.Is(err, record.ErrCorrupt), "format 1 without its status: %v", err)
}
