package idemprincipal_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/idemlambda/idemlambda/pkg/idem/idemprincipal"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
)

func TestSpellings(t *testing.T) {
	t.Parallel()
	for got, want := range map[string]string{
		idemprincipal.JWT("https://issuer/", "sub", "248"):       `jwt:"https://issuer/":sub="248"`,
		idemprincipal.IAM("arn:aws:iam::123456789012:user/ci"):   "iam:arn:aws:iam::123456789012:user/ci",
		idemprincipal.IAMCaller("123456789012", "AIDAEXAMPLE"):   "iam-caller:123456789012:AIDAEXAMPLE",
		idemprincipal.CognitoIdentity("eu-west-1:pool", "eu:id"): `cognito-identity:"eu-west-1:pool":"eu:id"`,
		idemprincipal.Lambda("principalId", "user-42"):           `lambda:principalId="user-42"`,
	} {
		check.Equal(t, want, got)
	}
	// Quoting keeps parts apart: no value makes two callers one.
	check.NotEqual(t, idemprincipal.JWT(`a":sub="b`, "sub", "c"), idemprincipal.JWT("a", "sub", `b":sub="c`))
}

func TestFrom(t *testing.T) {
	t.Parallel()
	claims := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		name string
		got  func() (string, error)
		want string
	}{
		{"sub", func() (string, error) {
			return idemprincipal.FromClaims(claims(map[string]string{"iss": "i", "sub": "s", "client_id": "c"}))
		}, `jwt:"i":sub="s"`},
		{"client_id", func() (string, error) {
			return idemprincipal.FromClaims(claims(map[string]string{"iss": "i", "client_id": "c"}))
		}, `jwt:"i":client_id="c"`},
		{"azp", func() (string, error) {
			return idemprincipal.FromClaims(claims(map[string]string{"iss": "i", "azp": "a"}))
		}, `jwt:"i":azp="a"`},
		{"no subject", func() (string, error) { return idemprincipal.FromClaims(claims(map[string]string{"iss": "i"})) }, ""},
		{"identity pool", func() (string, error) {
			return idemprincipal.FromIAM(idemprincipal.IAMIdentity{UserARN: "arn:role", CognitoIdentityPoolID: "p", CognitoIdentityID: "id-1"})
		}, `cognito-identity:"p":"id-1"`},
		{"arn", func() (string, error) {
			return idemprincipal.FromIAM(idemprincipal.IAMIdentity{UserARN: "arn:user", CallerID: "c"})
		}, "iam:arn:user"},
		{"a role's session is the role", func() (string, error) {
			return idemprincipal.FromIAM(idemprincipal.IAMIdentity{UserARN: "arn:aws:sts::1:assumed-role/Importer/aws-go-sdk-17", CallerID: "AROA:aws-go-sdk-17"})
		}, "iam:arn:aws:iam::1:role/Importer"},
		{"caller", func() (string, error) {
			return idemprincipal.FromIAM(idemprincipal.IAMIdentity{AccountID: "1", CallerID: "c"})
		}, "iam-caller:1:c"},
		{"no iam caller", func() (string, error) { return idemprincipal.FromIAM(idemprincipal.IAMIdentity{AccountID: "1"}) }, ""},
		{"principalId", func() (string, error) {
			return idemprincipal.FromLambdaContext(map[string]any{"principalId": "p", "sub": "s"})
		}, `lambda:principalId="p"`},
		{"lambda sub", func() (string, error) {
			return idemprincipal.FromLambdaContext(map[string]any{"principalId": "", "sub": "s"})
		}, `lambda:sub="s"`},
		{"lambda none", func() (string, error) { return idemprincipal.FromLambdaContext(map[string]any{"principalId": 7}) }, ""},
	} {
		got, err := tc.got()
		check.Equal(t, tc.want, got, tc.name)
		if tc.want == "" {
			check.ErrorIs(t, err, idemprincipal.ErrNoSubject, tc.name)
		} else {
			check.NoError(t, err, tc.name)
		}
	}
}

// An AppSync resolver's caller, a Cognito user pool's user, is the
// principal an API Gateway JWT authorizer's request of the same user has:
// one user, one principal, whichever way in.
func ExampleFromClaims() {
	claims := map[string]any{"iss": "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_pool", "sub": "248289761001"}
	p, err := idemprincipal.FromClaims(func(name string) string {
		s, _ := claims[name].(string)
		return s
	})
	fmt.Println(p, err)
	// Output: jwt:"https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_pool":sub="248289761001" <nil>
}

// IdentityARN never fails: an ARN it rewrites becomes a role's ARN
// without path or session, in the same partition and account, and
// rewriting that again changes nothing.
func FuzzIdentityARN(f *testing.F) {
	for _, arn := range []string{
		"arn:aws:sts::123456789012:assumed-role/Importer/s", "arn:aws:iam::123456789012:role/a/b/Importer",
		"arn:aws:iam::123456789012:user/ops/alice", "arn:aws:sts::1:assumed-role//s", "arn:aws:iam::1:role/", "arn:aws:sts::1:assumed-role/R",
	} {
		f.Add(arn)
	}
	f.Fuzz(func(t *testing.T, arn string) {
		id := idemprincipal.IdentityARN(arn)
		check.Equal(t, id, idemprincipal.IdentityARN(id), "idempotent")
		if id == arn {
			return
		}
		parts := strings.SplitN(id, ":", 6)
		in := strings.SplitN(arn, ":", 6)
		if len(parts) != 6 || len(in) != 6 || parts[1] != in[1] || parts[4] != in[4] || parts[2] != "iam" {
			t.Fatalf("%q became %q", arn, id)
		}
		name, ok := strings.CutPrefix(parts[5], "role/")
		if !ok || name == "" || strings.Contains(name, "/") {
			t.Fatalf("%q became %q, no role's ARN", arn, id)
		}
	})
}
