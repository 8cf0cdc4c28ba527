// Command idemctl looks up and evicts one idempotency key in a pkg/idem
// table, for operators:
//
//	idemctl lookup -table T -operation O -principal P -key K [layout flags]
//	idemctl evict  -table T -operation O -principal P -key K [-force] [layout flags]
//
// It prints the record (lookup) or the record it deleted (evict) as JSON on
// stdout; an error goes to stderr with exit status 1 (2 for a usage error).
// Evict deletes a completed, expired or dead holder's record; a live
// holder's only with -force, which may run the holder's effect twice (see
// pkg/idem/idemadmin). The layout flags describe the table as the
// application's idem.WithLayout does: -partition-key, -sort-key,
// -partition-value or -sort-value, -key-prefix, and -attr default=name (repeatable, e.g.
// -attr expires_at=ttl). AWS configuration is the SDK's usual one
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
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemadmin"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
)

func main() {
	os.Exit(idemctl(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// idemctl is the whole command, returning its exit status: flags, AWS
// configuration, client, then the look-up or eviction.
func idemctl(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	req, err := parse(args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "idemctl:", err)
		return 2
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "idemctl: AWS configuration:", err)
		return 1
	}
	db := dynamodb.NewFromConfig(cfg)
	out, err := run(ctx, db, req)
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

// request is one parsed command line.
type request struct {
	command string // lookup or evict
	table   string
	layout  idemtable.Layout
	scope   idem.Scope
	force   bool
}

// evicted is evict's answer.
type evicted struct {
	Evicted idemadmin.Record `json:"evicted"`
}

// run looks the key up or evicts it.
func run(ctx context.Context, db idemadmin.API, req request) (any, error) {
	if req.command == "lookup" {
		return idemadmin.Lookup(ctx, db, req.table, req.layout, req.scope)
	}
	rec, err := idemadmin.Evict(ctx, db, req.table, req.layout, req.scope, req.force)
	if err != nil {
		return nil, err
	}
	return evicted{rec}, nil
}

const usage = `usage: idemctl lookup|evict -table T -operation O -principal P -key K [-force]
       [-partition-key N] [-sort-key N -partition-value V | -sort-key N -sort-value V] [-key-prefix P] [-attr default=name ...]`

// parse reads the command line.
func parse(args []string, stderr io.Writer) (request, error) {
	if len(args) == 0 || (args[0] != "lookup" && args[0] != "evict") {
		return request{}, errors.New(usage)
	}
	req := request{command: args[0]}
	fs := flag.NewFlagSet("idemctl "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	var op, principal, key string
	var anonymous bool
	attrs := attrFlag{}
	fs.StringVar(&req.table, "table", "", "the idempotency table's name (required)")
	fs.StringVar(&op, "operation", "", "the scope's operation, such as \"POST /products\" (required)")
	fs.StringVar(&principal, "principal", "", "the scope's principal, as the library spells it")
	fs.BoolVar(&anonymous, "anonymous", false, "the anonymous scope (callers that cannot be named)")
	fs.StringVar(&key, "key", "", "the client's idempotency key (required)")
	if req.command == "evict" {
		fs.BoolVar(&req.force, "force", false, "evict a live holder's record too: its effect may run twice")
	}
	fs.StringVar(&req.layout.PartitionKey, "partition-key", "", "the partition key attribute (default \"id\")")
	fs.StringVar(&req.layout.SortKey, "sort-key", "", "the sort key attribute, for a single-table design")
	fs.StringVar(&req.layout.PartitionValue, "partition-value", "", "every record's partition key value, with -sort-key (the ID in the sort key)")
	fs.StringVar(&req.layout.SortValue, "sort-value", "", "every record's sort key value, with -sort-key (the ID in the partition key)")
	fs.StringVar(&req.layout.KeyPrefix, "key-prefix", "", "the prefix before the scope's ID in the key")
	fs.Var(attrs, "attr", "an attribute's name in this table, as default=name (repeatable): "+strings.Join(attrs.defaults(), ", "))
	if err := fs.Parse(args[1:]); err != nil {
		return request{}, err
	}
	if fs.NArg() > 0 {
		return request{}, fmt.Errorf("unexpected arguments %q\n%s", fs.Args(), usage)
	}
	if req.table == "" || op == "" || key == "" {
		return request{}, errors.New("-table, -operation and -key are required\n" + usage)
	}
	req.layout.Attributes = attrs.attributes()
	if err := req.layout.Validate(); err != nil {
		return request{}, err
	}
	if anonymous == (principal != "") {
		return request{}, errors.New("name the caller with -principal, or -anonymous for the anonymous scope\n" + usage)
	}
	sc, err := idem.NewScope(op, principal, key)
	if anonymous {
		sc, err = idem.NewAnonymousScope(op, key)
	}
	if err != nil {
		return request{}, err
	}
	req.scope = sc
	return req, nil
}

// attrFlag is -attr default=name, by the attribute's default name.
type attrFlag map[string]string

// names maps each default attribute name to the field of Attributes.
func (attrFlag) names(at *idemtable.Attributes) map[string]*string {
	return map[string]*string{
		"status": &at.Status, "fingerprint": &at.Fingerprint, "lease_token": &at.LeaseToken,
		"lease_expires_at": &at.LeaseExpiresAt, "response_status": &at.ResponseStatus,
		"response_headers": &at.ResponseHeaders, "response_body": &at.ResponseBody,
		"response_meta": &at.ResponseMeta, "format": &at.Format,
		"created_at": &at.CreatedAt, "completed_at": &at.CompletedAt,
		"completion_id": &at.CompletionID, "expires_at": &at.ExpiresAt,
	}
}

func (a attrFlag) defaults() []string {
	var out []string
	for n := range a.names(&idemtable.Attributes{}) {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (a attrFlag) String() string { return "" }

func (a attrFlag) Set(v string) error {
	def, name, ok := strings.Cut(v, "=")
	if _, known := a.names(&idemtable.Attributes{})[def]; !ok || !known || name == "" {
		return fmt.Errorf("want default=name, default one of %s", strings.Join(a.defaults(), ", "))
	}
	a[def] = name
	return nil
}

func (a attrFlag) attributes() idemtable.Attributes {
	var at idemtable.Attributes
	fields := a.names(&at)
	for def, name := range a {
		*fields[def] = name
	}
	return at
}
