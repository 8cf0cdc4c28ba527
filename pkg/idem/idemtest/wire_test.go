package idemtest_test

import (
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

func TestResponsesCarryDynamoDBCRC32(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(idemtest.NewServer())
	defer srv.Close()
	for _, tc := range []struct{ target, body string }{
		{"DynamoDB_20120810.CreateTable", `{"TableName":"t","AttributeDefinitions":[{"AttributeName":"id","AttributeType":"S"}],"KeySchema":[{"AttributeName":"id","KeyType":"HASH"}],"BillingMode":"PAY_PER_REQUEST"}`},
		{"DynamoDB_20120810.GetItem", `{"TableName":"missing","Key":{"id":{"S":"x"}}}`}, // an error response
	} {
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(tc.body))
		must.NoError(t, err)
		req.Header.Set("X-Amz-Target", tc.target)
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		resp, err := http.DefaultClient.Do(req)
		must.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		must.NoError(t, err)
		resp.Body.Close()
		must.NotEmpty(t, body)
		check.Equal(t, strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10), resp.Header.Get("X-Amz-Crc32"), tc.target)
		check.Equal(t, strconv.Itoa(len(body)), resp.Header.Get("Content-Length"))
	}
}

func TestTimeToLiveIsRecordedAndDescribed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(idemtest.NewServer())
	defer srv.Close()
	call := func(op, body string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		must.NoError(t, err)
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
		resp, err := http.DefaultClient.Do(req)
		must.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		must.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	status, body := call("CreateTable", `{"TableName":"t","BillingMode":"PAY_PER_REQUEST",`+
		`"AttributeDefinitions":[{"AttributeName":"id","AttributeType":"S"}],"KeySchema":[{"AttributeName":"id","KeyType":"HASH"}]}`)
	check.Equal(t, 200, status, body)
	status, body = call("DescribeTimeToLive", `{"TableName":"t"}`)
	check.Equal(t, 200, status)
	check.JSONEq(t, `{"TimeToLiveDescription":{"TimeToLiveStatus":"DISABLED"}}`, body)
	status, _ = call("UpdateTimeToLive", `{"TableName":"t","TimeToLiveSpecification":{"AttributeName":"expires_at","Enabled":true}}`)
	check.Equal(t, 200, status)
	_, body = call("DescribeTimeToLive", `{"TableName":"t"}`)
	check.JSONEq(t, `{"TimeToLiveDescription":{"TimeToLiveStatus":"ENABLED","AttributeName":"expires_at"}}`, body)
	status, body = call("UpdateTimeToLive", `{"TableName":"t"}`)
	check.Equal(t, 400, status)
	check.Contains(t, body, "ValidationException")
}
