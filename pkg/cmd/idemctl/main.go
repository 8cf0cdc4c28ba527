// Command idemctl looks up, finds and evicts idempotency keys in a
// pkg/idem table, for operators:
//
//	idemctl lookup    -table T -operation O CALLER -key K [layout flags]
//	idemctl evict     -table T -operation O CALLER -key K [-force] [-rerun-writes] [layout flags]
//	idemctl find      -table T -scope-hash H [-operation O] [layout flags]
//	idemctl principal CALLER
//	idemctl home      -table T -regions R1,R2[,...] [-witness-region W] -slot S [layout flags]
//	idemctl failover  -table T -regions R1,R2[,...] [-witness-region W] -slot S -to R [-quorum N] [-lease D] [-replication-bound D] [-margin D] [layout flags]
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
// On a global table whose stores claim each key in its home Region
// (idem.WithHomes), home prints what each voter promises for a home
// (-slot: a Region the stores' Homes.Home gives keys) and which Region
// holds it, and failover moves it to -to under the next epoch
// (pkg/idem/idemglobal's Control.Failover): the new home takes claims
// from the time it prints (from), once the old home's lease has ended
// and the replication bound passed. Give it the stores' -lease,
// -replication-bound and -margin when they are not the defaults;
// docs/operations.md's failover runbook says when to run it.
//
// It prints the record (lookup), the record it deleted (evict), the
// records of a span's scope hash (find), the principal, or a home's
// status (home, failover) as JSON on stdout; an error goes to stderr with exit status 1 (2 for a usage
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
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemadmin"
	"github.com/idemlambda/idemlambda/pkg/idem/idemglobal"
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
		req.control = control(cfg, req)
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
	case "home":
		st, err := req.control.Status(ctx, req.homes.slot)
		return statusJSON(st), err
	case "failover":
		st, err := req.control.Failover(ctx, req.homes.slot, req.homes.to, req.homes.quorum)
		return statusJSON(st), err
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

// control is home's and failover's view of the table's homes: a client
// per Region (and the witness's), in that Region.
func control(cfg aws.Config, req request) idemglobal.Control {
	h := req.homes
	in := func(r string) *dynamodb.Client {
		return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.Region = r })
	}
	homes := idem.Homes{Clients: map[string]idem.API{}, Lease: h.lease, ReplicationBound: h.bound}
	for _, r := range h.names() {
		homes.Clients[r] = in(r)
	}
	if h.witness != "" {
		homes.Witness = in(h.witness)
	}
	return idemglobal.Control{Table: req.table.Name, Layout: req.table.Layout, Homes: homes, Margin: h.margin}
}

// homeStatus is home's and failover's answer.
type homeStatus struct {
	Slot   string     `json:"slot"`
	Home   string     `json:"home"`
	Epoch  int64      `json:"epoch"`
	Quorum int        `json:"quorum"`
	From   time.Time  `json:"from"`
	Until  *time.Time `json:"until,omitempty"`
	Held   bool       `json:"held"`
	Voters []homeVote `json:"voters"`
}

type homeVote struct {
	Voter string     `json:"voter"`
	Home  string     `json:"home,omitempty"`
	Epoch int64      `json:"epoch,omitempty"`
	From  *time.Time `json:"from,omitempty"`
	Until *time.Time `json:"until,omitempty"`
	Error string     `json:"error,omitempty"`
}

func statusJSON(st idemglobal.Status) homeStatus {
	at := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		t = t.UTC()
		return &t
	}
	out := homeStatus{Slot: st.Slot, Home: st.Home, Epoch: st.Epoch, Quorum: st.Quorum, From: st.From.UTC(), Until: at(st.Until), Held: st.Held}
	for _, v := range st.Voters {
		hv := homeVote{Voter: v.Voter}
		switch {
		case v.Err != nil:
			hv.Error = v.Err.Error()
		case v.Found:
			hv.Home, hv.Epoch, hv.From, hv.Until = v.Home, v.Epoch, at(v.From), at(v.Until)
		}
		out.Voters = append(out.Voters, hv)
	}
	return out
}
