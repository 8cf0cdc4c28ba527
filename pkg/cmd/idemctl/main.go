// Command idemctl looks up, finds and evicts idempotency keys in a
// pkg/idem table, for operators:
//
//	idemctl lookup    -table T -operation O CALLER -key K [layout flags]
//	idemctl evict     -table T -operation O CALLER -key K [-force] [-rerun-writes] [layout flags]
//	idemctl find      -table T -scope-hash H [-operation O] [layout flags]
//	idemctl principal CALLER
//
// CALLER names the key's caller as the operator knows it, and idemctl
// spells it as the ways in did (pkg/idem/idemprincipal):
// -jwt-issuer ISS with -jwt-sub, -jwt-client-id or -jwt-azp (a JWT
// authorizer's caller); -iam-arn ARN, or -iam-account and -iam-caller
// (an IAM caller); -cognito-identity-pool and -cognito-identity-id (a
// Cognito identity pool's); -lambda-principal-id or -lambda-sub (a Lambda
// authorizer's); -anonymous (the anonymous scope); or -principal P,
// spelled exactly as the library stores it. `principal` prints the
// spelling.
//
// It prints the record (lookup), the record it deleted (evict), the
// records of a span's scope hash (find) or the principal as JSON on
// stdout; an error goes to stderr with exit status 1 (2 for a usage
// error). Evict deletes a completed, expired or dead holder's record; a
// live holder's only with -force, which may run the holder's effect
// twice, and a completed record whose first execution committed
// DynamoDB writes only with -rerun-writes, since its next request runs
// them again (see pkg/idem/idemadmin). With IDEM_SCOPE_HASH_KEY set to
// the key the functions hash scopes with in their traces
// (pkg/idem/idemotel's WithScopeHasher), a record shows its scope_hash,
// and find finds the record of a span's idem.scope_hash. The layout
// flags describe the table as the application's idem.WithLayout does:
// -partition-key, -sort-key, -partition-value or -sort-value,
// -key-prefix, and -attr default=name (repeatable, e.g. -attr
// expires_at=ttl). AWS configuration is the SDK's usual one
// (environment, profile, role); AWS_ENDPOINT_URL_DYNAMODB points it at a
// local store.
//
// It is part of the library's module; install it at the library's
// version:
//
//	go install github.com/idemlambda/idemlambda/pkg/cmd/idemctl@latest
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/pkg/idem/idemadmin"
)

// envScopeHashKey holds the key the traces hash scopes with.
const envScopeHashKey = "IDEM_SCOPE_HASH_KEY"

func main() {
	os.Exit(idemctl(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// idemctl is the whole command, returning its exit status: flags, AWS
// configuration, client, then the command.
func idemctl(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	req, err := parse(args, os.Getenv(envScopeHashKey), stderr)
	if err != nil {
		fmt.Fprintln(stderr, "idemctl:", err)
		return 2
	}
	if req.command != "principal" {
		cfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "idemctl: AWS configuration:", err)
			return 1
		}
		req.table.DB = dynamodb.NewFromConfig(cfg)
	}
	out, err := run(ctx, req, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "idemctl:", err)
		return 1
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(stderr, "idemctl:", err)
		return 1
	}
	return 0
}

// evicted is evict's answer.
type evicted struct {
	Evicted idemadmin.Record `json:"evicted"`
}

// found is find's answer.
type found struct {
	Found []idemadmin.Record `json:"found"`
}

// spelled is principal's answer.
type spelled struct {
	Principal string `json:"principal"`
	Anonymous bool   `json:"anonymous,omitempty"`
}

// run carries out the command; warnings go to stderr.
func run(ctx context.Context, req request, stderr io.Writer) (any, error) {
	switch req.command {
	case "principal":
		return req.caller, nil
	case "lookup":
		return req.table.Lookup(ctx, req.scope)
	case "find":
		recs, err := req.table.Find(ctx, req.operation, req.scopeHash)
		if err == nil && len(recs) == 0 {
			err = fmt.Errorf("no record of scope hash %s in %s (gone, or hashed with another key)", req.scopeHash, req.table.Name)
		}
		return found{recs}, err
	}
	rec, err := req.table.Evict(ctx, req.scope, req.evict)
	if errors.Is(err, idemadmin.ErrWritesLanded) {
		return nil, fmt.Errorf("%w\n%s Pass -rerun-writes to evict it anyway", err, rerunWarning)
	}
	if err != nil {
		return nil, err
	}
	if rec.Writes != 0 {
		what := fmt.Sprintf("committed %d DynamoDB writes", rec.Writes)
		if rec.Writes == idemadmin.WritesUnknown {
			what = "may have committed DynamoDB writes (its record, written by an older library, does not count them)"
		}
		fmt.Fprintf(stderr, "idemctl: warning: the evicted key's first execution %s.\n%s\n", what, rerunWarning)
	}
	return evicted{rec}, nil
}

// rerunWarning says what evicting a key whose writes landed does.
const rerunWarning = "Its next request runs its operation again, writes included, over the writes that landed: " +
	"a write with a condition (a product put only if absent) fails the retry (\"business condition failed\"), " +
	"one without (a counter's ADD) applies twice."
