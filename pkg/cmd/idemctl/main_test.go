package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemglobal"
	"github.com/idemlambda/idemlambda/pkg/idem/idemprincipal"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
	"github.com/idemlambda/idemlambda/pkg/internal/check"
	"github.com/idemlambda/idemlambda/pkg/internal/must"
)

// cli runs the command in-process, configured by the environment as a
// shell would configure it.
func cli(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = idemctl(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// traceKey is the key the functions hash scopes with in their traces.
const traceKey = "the operators' 32-byte trace key"

// TestIdemctlAgainstTheEmbeddedStore points the SDK's usual configuration
// at the embedded store (endpoint and static credentials from the
// environment), on a single-table layout.
func TestIdemctlAgainstTheEmbeddedStore(t *testing.T) {
	srv := idemtest.New(t)
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB": srv.URL(), "AWS_REGION": "us-east-1",
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true",
		envScopeHashKey: traceKey,
	} {
		t.Setenv(k, v)
	}
	ctx := context.Background()
	layout := idemtable.Layout{
		PartitionKey: "PK", SortKey: "SK", PartitionValue: "IDEMPOTENCY", KeyPrefix: "IDEM#",
		Attributes: idemtable.Attributes{ExpiresAt: "ttl"},
	}
	db := srv.Client()
	must.NoError(t, idemtable.Create(ctx, db, "app", layout))
	store, err := idem.NewStore(db, "app", idem.WithLayout(layout))
	must.NoError(t, err)
	sc, err := idem.NewScope("POST /orders", idemprincipal.JWT("https://auth.example.com/", "sub", "user-1"), "k-1")
	must.NoError(t, err)
	_, err = store.Run(ctx, sc, "fp-1", func(context.Context) (idem.Response, error) {
		return idem.Response{Status: 201}, nil
	})
	must.NoError(t, err)

	layoutFlags := []string{"-partition-key", "PK", "-sort-key", "SK", "-partition-value", "IDEMPOTENCY", "-key-prefix", "IDEM#", "-attr", "expires_at=ttl"}
	flagsFor := func(key string) []string {
		return append([]string{"-table", "app", "-operation", "POST /orders", "-jwt-issuer", "https://auth.example.com/", "-jwt-sub", "user-1", "-key", key}, layoutFlags...)
	}
	flags := flagsFor("k-1")

	code, stdout, stderr := cli(append([]string{"lookup"}, flags...)...)
	must.Equal(t, 0, code, stderr)
	var rec map[string]any
	must.NoError(t, json.Unmarshal([]byte(stdout), &rec), stdout)
	check.Equal(t, "COMPLETED", rec["status"])
	check.Equal(t, "fp-1", rec["fingerprint"])
	check.EqualValues(t, 201, rec["response_status"])
	check.Equal(t, sc.ID(), rec["id"])
	hasher, err := idemtrace.NewScopeHasher([]byte(traceKey))
	must.NoError(t, err)
	check.Equal(t, hasher.Hash(sc.ID()), rec["scope_hash"], "what traces record of the scope, with the functions' key")
	check.Equal(t, sc.Principal, rec["principal"], "the caller named by its issuer and subject")
	check.EqualValues(t, 0, rec["writes"])

	// The record of a span's scope hash.
	code, stdout, stderr = cli(append([]string{"find", "-table", "app", "-scope-hash", hasher.Hash(sc.ID())}, layoutFlags...)...)
	must.Equal(t, 0, code, stderr)
	var got struct{ Found []map[string]any }
	must.NoError(t, json.Unmarshal([]byte(stdout), &got), stdout)
	must.Len(t, got.Found, 1)
	check.Equal(t, "k-1", got.Found[0]["key"])
	check.Equal(t, sc.Principal, got.Found[0]["principal"])
	check.Equal(t, false, rec["expired"])
	check.NotEmpty(t, rec["expires_at"])

	code, stdout, stderr = cli(append([]string{"evict"}, flags...)...)
	must.Equal(t, 0, code, stderr)
	var ev struct{ Evicted map[string]any }
	must.NoError(t, json.Unmarshal([]byte(stdout), &ev), stdout)
	check.Equal(t, "COMPLETED", ev.Evicted["status"])

	code, stdout, stderr = cli(append([]string{"lookup"}, flags...)...)
	check.Equal(t, 1, code)
	check.Empty(t, stdout)
	check.Contains(t, stderr, "no record for this scope")

	// A live holder: refused without -force, evicted with it.
	sc2, _ := idem.NewScope("POST /orders", sc.Principal, "k-2")
	claim, err := store.Run(ctx, sc2, "fp", func(context.Context) (idem.Response, error) {
		live := append([]string{"evict"}, flagsFor("k-2")...)
		code, stdout, stderr := cli(live...)
		check.Equal(t, 1, code)
		check.Empty(t, stdout)
		check.Contains(t, stderr, "live holder")
		code, stdout, stderr = cli(append(live, "-force")...)
		check.Equal(t, 0, code, stderr)
		check.Contains(t, stdout, `"IN_PROGRESS"`)
		return idem.Response{Status: 200}, nil
	})
	must.ErrorIs(t, err, idem.ErrLeaseLost, "the evicted holder's completion is fenced out")
	check.Equal(t, idem.OutcomeNotRecorded, claim.Outcome, "its effect ran; its completion did not land")

	// A key whose first execution committed DynamoDB writes: refused
	// with a warning, then evicted with -rerun-writes and a warning.
	_, err = db.CreateTable(ctx, idemtable.Input("products", idemtable.Layout{}))
	must.NoError(t, err)
	sc3, _ := idem.NewScope("POST /orders", sc.Principal, "k-3")
	_, err = store.Execute(ctx, sc3, "fp", func(context.Context) (idem.Effect, error) {
		return idem.Effect{Writes: []types.TransactWriteItem{{Put: &types.Put{
			TableName: aws.String("products"), Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "p-1"}},
			ConditionExpression: aws.String("attribute_not_exists(id)"),
		}}}}, nil
	})
	must.NoError(t, err)
	evict := append([]string{"evict"}, flagsFor("k-3")...)
	for _, extra := range [][]string{nil, {"-force"}} {
		code, stdout, stderr = cli(append(evict, extra...)...)
		check.Equal(t, 1, code, "%q", extra)
		check.Empty(t, stdout)
		check.Contains(t, stderr, "committed DynamoDB writes")
		check.Contains(t, stderr, `"business condition failed"`)
		check.Contains(t, stderr, "-rerun-writes")
	}
	code, stdout, stderr = cli(append(evict, "-rerun-writes")...)
	check.Equal(t, 0, code, stderr)
	check.Contains(t, stdout, `"writes": 1`)
	check.Contains(t, stderr, "warning: the evicted key's first execution committed 1 DynamoDB writes")
}

// principal spells a caller as the way in does; exactly one way of
// naming it is taken.
func TestIdemctlPrincipal(t *testing.T) {
	for want, args := range map[string][]string{
		`jwt:"https://auth.example.com/":sub="248289761001"`: {"-jwt-issuer", "https://auth.example.com/", "-jwt-sub", "248289761001"},
		`jwt:"https://auth.example.com/":client_id="svc"`:    {"-jwt-issuer", "https://auth.example.com/", "-jwt-client-id", "svc"},
		`jwt:"i":azp="app"`:                                 {"-jwt-issuer", "i", "-jwt-azp", "app"},
		`iam:arn:aws:iam::123456789012:user/alice`:          {"-iam-arn", "arn:aws:iam::123456789012:user/alice"},
		`iam-caller:123456789012:AIDAEXAMPLE`:               {"-iam-account", "123456789012", "-iam-caller", "AIDAEXAMPLE"},
		`cognito-identity:"eu-west-1:pool":"eu-west-1:ada"`: {"-cognito-identity-pool", "eu-west-1:pool", "-cognito-identity-id", "eu-west-1:ada"},
		`lambda:principalId="user-42"`:                      {"-lambda-principal-id", "user-42"},
		`lambda:sub="user-43"`:                              {"-lambda-sub", "user-43"},
		`anonymous`:                                         {"-principal", "anonymous"},
	} {
		code, stdout, stderr := cli(append([]string{"principal"}, args...)...)
		must.Equal(t, 0, code, stderr)
		var got spelled
		must.NoError(t, json.Unmarshal([]byte(stdout), &got), stdout)
		check.Equal(t, spelled{Principal: want}, got, "%q", args)
	}
	code, stdout, stderr := cli("principal", "-anonymous")
	must.Equal(t, 0, code, stderr)
	check.Contains(t, stdout, `"anonymous": true`)
}

func TestIdemctlUsage(t *testing.T) {
	t.Setenv(envScopeHashKey, "")
	for _, args := range [][]string{
		nil,
		{"drop", "-table", "t"},
		{"lookup", "-table", "t", "-operation", "O"},
		{"lookup", "-table", "t", "-operation", "O", "-key", "k", "-sort-key", "SK"},
		{"lookup", "-table", "t", "-operation", "O", "-key", "k", "-attr", "colour=red"},
		{"lookup", "-table", "t", "-operation", "O", "-key", "k", "-force"},
		{"lookup", "-table", "t", "-operation", "O", "-principal", "p", "-key", "bad key"},
		{"lookup", "-table", "t", "-operation", "O", "-key", "k"},                                  // no caller
		{"lookup", "-table", "t", "-operation", "O", "-key", "k", "-anonymous", "-principal", "p"}, // two
		{"lookup", "-table", "t", "-operation", "O", "-key", "k", "-jwt-sub", "s"},                 // no issuer
		{"lookup", "-table", "t", "-operation", "O", "-key", "k", "-jwt-issuer", "i", "-jwt-sub", "s", "-jwt-azp", "a"},
		{"lookup", "-table", "t", "-operation", "O", "-key", "k", "-iam-account", "1"},
		{"lookup", "-table", "t", "-operation", "O", "-key", "k", "-lambda-sub", "s", "-lambda-principal-id", "p"},
		{"evict", "-table", "t", "-operation", "O", "-key", "k", "-principal", "p", "-rerun"},
		{"find", "-table", "t", "-scope-hash", "0123456789abcdef"}, // no IDEM_SCOPE_HASH_KEY
		{"find", "-table", "t"},
		{"principal"},
		{"principal", "-table", "t", "-anonymous"},
	} {
		code, stdout, stderr := cli(args...)
		check.Equal(t, 2, code, "%q", args)
		check.Empty(t, stdout)
		check.NotEmpty(t, stderr)
	}
	t.Setenv(envScopeHashKey, "too short")
	code, _, stderr := cli("lookup", "-table", "t", "-operation", "O", "-key", "k", "-anonymous")
	check.Equal(t, 2, code)
	check.Contains(t, stderr, envScopeHashKey)
}

// home and failover, on a table whose stores home keys (idem.WithHomes):
// one endpoint stands for every Region here (each voter's promise is an
// item of its own), so the store is told its table is MREC. home shows the voters' promises; failover moves the
// home under the next epoch, and the stores' calls wait until the time it
// prints.
func TestIdemctlHomeAndFailover(t *testing.T) {
	srv := idemtest.New(t)
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB": srv.URL(), "AWS_REGION": "us-east-1",
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
	ctx := context.Background()
	db := srv.Client()
	must.NoError(t, idemtable.Create(ctx, db, "app", idemtable.Layout{}))
	regions := []string{"us-east-1", "us-west-2", "eu-west-1"}
	flags := []string{"-table", "app", "-regions", strings.Join(regions, ","), "-slot", "us-east-1"}
	status := func(args ...string) (map[string]any, string) {
		t.Helper()
		code, stdout, stderr := cli(args...)
		must.Equal(t, 0, code, stderr)
		var st map[string]any
		must.NoError(t, json.Unmarshal([]byte(stdout), &st), stdout)
		return st, stdout
	}

	st, out := status(append([]string{"home"}, flags...)...)
	check.Equal(t, false, st["held"], out)
	check.Len(t, st["voters"], 3)

	clients := map[string]idem.API{}
	for _, r := range regions {
		clients[r] = db
	}
	store, err := idem.NewStore(db, "app", idem.WithTableKind(idemtable.MREC), idem.WithHomes(idem.Homes{Region: "us-west-2", Clients: clients, Home: idemglobal.OneHome("us-east-1")}))
	must.NoError(t, err)
	sc, err := idem.NewScope("POST /orders", "tenant", "k-1")
	must.NoError(t, err)
	_, err = store.Run(ctx, sc, "fp", func(context.Context) (idem.Response, error) { return idem.Response{}, nil })
	must.NoError(t, err)
	st, out = status(append([]string{"home"}, flags...)...)
	check.Equal(t, true, st["held"], out)
	check.Equal(t, "us-east-1", st["home"])
	check.EqualValues(t, 1, st["epoch"])

	st, out = status(append([]string{"failover", "-to", "us-west-2"}, flags...)...)
	check.Equal(t, "us-west-2", st["home"], out)
	check.EqualValues(t, 2, st["epoch"])
	from, err := time.Parse(time.RFC3339Nano, st["from"].(string))
	must.NoError(t, err)
	check.True(t, from.After(time.Now()), "the new home waits for the old lease and the replication bound: from %v", from)

	code, _, stderr := cli(append([]string{"failover", "-to", "ap-south-1"}, flags...)...)
	check.Equal(t, 2, code)
	check.Contains(t, stderr, "is not one of -regions")
	code, _, stderr = cli("home", "-table", "app", "-regions", "us-east-1", "-slot", "us-east-1")
	check.Equal(t, 2, code)
	check.Contains(t, stderr, "two or more")
}
