package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/idemlambda/idemlambda/pkg/idem"
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
	sc, err := idem.NewScope("POST /orders", "user-1", "k-1")
	must.NoError(t, err)
	_, err = store.Run(ctx, sc, "fp-1", func(context.Context) (idem.Response, error) {
		return idem.Response{Meta: map[string]string{":status": "201"}}, nil
	})
	must.NoError(t, err)

	flagsFor := func(key string) []string {
		return []string{"-table", "app", "-operation", "POST /orders", "-principal", "user-1", "-key", key,
			"-partition-key", "PK", "-sort-key", "SK", "-partition-value", "IDEMPOTENCY", "-key-prefix", "IDEM#", "-attr", "expires_at=ttl"}
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
	check.Equal(t, idemtrace.ScopeHash(sc.ID()), rec["scope_hash"], "what traces record of the scope")
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
	sc2, _ := idem.NewScope("POST /orders", "user-1", "k-2")
	claim, err := store.Run(ctx, sc2, "fp", func(context.Context) (idem.Response, error) {
		live := append([]string{"evict"}, flagsFor("k-2")...)
		code, stdout, stderr := cli(live...)
		check.Equal(t, 1, code)
		check.Empty(t, stdout)
		check.Contains(t, stderr, "live holder")
		code, stdout, stderr = cli(append(live, "-force")...)
		check.Equal(t, 0, code, stderr)
		check.Contains(t, stdout, `"IN_PROGRESS"`)
		return idem.Response{Meta: map[string]string{":status": "200"}}, nil
	})
	must.ErrorIs(t, err, idem.ErrLeaseLost, "the evicted holder's completion is fenced out")
	check.Equal(t, idem.OutcomeNotRecorded, claim.Outcome, "its effect ran; its completion did not land")
}

func TestIdemctlUsage(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"drop", "-table", "t"},
		{"lookup", "-table", "t", "-operation", "O"},
		{"lookup", "-table", "t", "-operation", "O", "-key", "k", "-sort-key", "SK"},
		{"lookup", "-table", "t", "-operation", "O", "-key", "k", "-attr", "colour=red"},
		{"lookup", "-table", "t", "-operation", "O", "-key", "k", "-force"},
		{"lookup", "-table", "t", "-operation", "O", "-key", "bad key"},
	} {
		code, stdout, stderr := cli(args...)
		check.Equal(t, 2, code, "%q", args)
		check.Empty(t, stdout)
		check.NotEmpty(t, stderr)
	}
}
