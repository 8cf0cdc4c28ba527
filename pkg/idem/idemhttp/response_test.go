package idemhttp_test

import (
	"encoding/base64"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

func TestAPIGatewayV2RoundTrip(t *testing.T) {
	t.Parallel()
	in := events.APIGatewayV2HTTPResponse{
		StatusCode:        201,
		Headers:           map[string]string{"Content-Type": "application/json", "Location": "/x/1", idemhttp.HeaderReplayed: "true"},
		MultiValueHeaders: map[string][]string{"Vary": {"Accept", "Origin"}},
		Cookies:           []string{"a=1; Path=/", "b=2, c; Path=/"},
		Body:              `{"id":1}`,
	}
	stored, err := idemhttp.FromAPIGatewayV2(in)
	require.NoError(t, err)
	assert.Equal(t, 201, stored.Status)
	assert.Equal(t, "Accept, Origin", stored.Headers["Vary"])
	assert.NotContains(t, stored.Headers, idemhttp.HeaderReplayed, "a replay marker is never stored")

	out := idemhttp.APIGatewayV2(stored, true)
	assert.Equal(t, in.Body, out.Body)
	assert.Equal(t, in.Cookies, out.Cookies, "cookies keep their commas and their order")
	assert.Equal(t, "true", out.Headers[idemhttp.HeaderReplayed])
	assert.Equal(t, "/x/1", out.Headers["Location"])
	assert.False(t, out.IsBase64Encoded)
	assert.NotContains(t, idemhttp.APIGatewayV2(stored, false).Headers, idemhttp.HeaderReplayed)

	bin := []byte{0xff, 0x00, 0xfe}
	stored, err = idemhttp.FromAPIGatewayV2(events.APIGatewayV2HTTPResponse{Body: base64.StdEncoding.EncodeToString(bin), IsBase64Encoded: true})
	require.NoError(t, err)
	assert.Equal(t, bin, stored.Body)
	assert.Equal(t, 200, stored.Status, "API Gateway's default status")
	out = idemhttp.APIGatewayV2(stored, false)
	assert.True(t, out.IsBase64Encoded)
	assert.Equal(t, base64.StdEncoding.EncodeToString(bin), out.Body)

	_, err = idemhttp.FromAPIGatewayV2(events.APIGatewayV2HTTPResponse{Body: "!!", IsBase64Encoded: true})
	assert.Error(t, err)
}
