//go:build deploy

package deploy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/stretchr/testify/require"
)

// call is one request to the deployed API. Adding a request to the test is
// one call literal and a check of its answer.
type call struct {
	// name says what the request is for in the log.
	name         string
	method, path string
	header       map[string]string
	body         string
	// unsigned sends it without a SigV4 signature.
	unsigned bool
}

// named returns the same request under another name.
func (c call) named(name string) call { c.name = name; return c }

// withBody returns the same request with another body.
func (c call) withBody(body string) call { c.body = body; return c }

// withoutSignature returns the same request, unsigned.
func (c call) withoutSignature() call { c.unsigned = true; return c }

// withKey returns the same request under another idempotency key.
func (c call) withKey(key string) call {
	c.header = maps.Clone(c.header)
	c.header["Idempotency-Key"] = key
	return c
}

// problemType is the type of a problem+json answer's body, "" for any
// other answer.
func (a answer) problemType(t *testing.T) string {
	t.Helper()
	if a.header.Get("Content-Type") != "application/problem+json" {
		return ""
	}
	var p struct {
		Type string `json:"type"`
	}
	require.NoError(t, json.Unmarshal(a.body, &p), "%s", a.body)
	return p.Type
}

// answer is the API's response.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// api sends requests to the deployed HTTP API, signed with SigV4 as an IAM
// caller does (service execute-api), and prints each request and answer.
type api struct {
	// base is the API's URL on the emulator: http://<api id>.execute-api.localhost:<port>.
	base   *url.URL
	region string
	creds  aws.CredentialsProvider
	client *http.Client
	signer *v4.Signer
}

// newAPI returns a client of the API apiID on the emulator at endpoint.
// MiniStack routes a request to an API by its Host, <api id>.execute-api.
// localhost:<port>, as API Gateway routes by <api id>.execute-api.<region>.
// amazonaws.com; every connection goes to the emulator's loopback address,
// whatever the host name resolves to.
func newAPI(t *testing.T, endpoint *url.URL, apiID, region string, creds aws.CredentialsProvider) *api {
	t.Helper()
	base, err := url.Parse("http://" + apiID + ".execute-api.localhost:" + endpoint.Port())
	require.NoError(t, err)
	dialer := &net.Dialer{}
	transport := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, endpoint.Host)
		},
	}
	t.Cleanup(transport.CloseIdleConnections)
	return &api{base: base, region: region, creds: creds, client: &http.Client{Transport: transport}, signer: v4.NewSigner()}
}

// gatewayHeaders are the headers API Gateway sets on every answer, new for
// each request: not part of what the function returned.
var gatewayHeaders = []string{"Apigw-Requestid", "Date"}

// do sends c and returns the answer, printing both.
func (a *api) do(t *testing.T, c call) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), hangBound)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, c.method, a.base.JoinPath(c.path).String(), strings.NewReader(c.body))
	require.NoError(t, err)
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	var log strings.Builder
	log.WriteString("\n> " + c.method + " " + req.URL.String())
	if c.unsigned {
		log.WriteString("  (" + c.name + ", unsigned)")
	} else {
		log.WriteString("  (" + c.name + ", SigV4 execute-api " + a.region + ")")
	}
	for _, k := range sortedKeys(req.Header) {
		log.WriteString("\n> " + k + ": " + req.Header.Get(k))
	}
	if c.body != "" {
		log.WriteString("\n> " + c.body)
	}
	if !c.unsigned {
		creds, err := a.creds.Retrieve(ctx)
		require.NoError(t, err)
		sum := sha256.Sum256([]byte(c.body))
		require.NoError(t, a.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "execute-api", a.region, time.Now()))
	}
	start := time.Now()
	resp, err := a.client.Do(req)
	require.NoError(t, err, c.name)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err, c.name)
	took := time.Since(start)
	log.WriteString("\n< " + resp.Status + "  (" + took.Round(time.Millisecond).String() + ")")
	for _, k := range sortedKeys(resp.Header) {
		log.WriteString("\n< " + k + ": " + strings.Join(resp.Header.Values(k), ", "))
	}
	if len(body) > 0 {
		log.WriteString("\n< " + string(bytes.TrimSpace(body)))
	}
	t.Log(log.String())
	return answer{status: resp.StatusCode, header: resp.Header, body: body}
}

// functionHeaders returns the answer's headers less the gateway's own.
func (a answer) functionHeaders() http.Header {
	h := a.header.Clone()
	for _, k := range gatewayHeaders {
		h.Del(k)
	}
	return h
}

func sortedKeys(h http.Header) []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
