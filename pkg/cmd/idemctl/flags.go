package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemadmin"
	"github.com/idemlambda/idemlambda/pkg/idem/idemglobal"
	"github.com/idemlambda/idemlambda/pkg/idem/idemprincipal"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// request is one parsed command line.
type request struct {
	command string // lookup, evict, find, principal, home or failover
	table   idemadmin.Table
	// homes are home's and failover's: the table's Regions (and the
	// witness's), the home asked about, where a failover moves it, the
	// new epoch's quorum and the stores' lease settings.
	homes   homeFlags
	control idemglobal.Control
	scope   idem.Scope
	evict   idemadmin.EvictOptions
	// operation and scopeHash are find's.
	operation, scopeHash string
	// caller is principal's.
	caller spelled
}

const usage = `usage: idemctl lookup    -table T -operation O CALLER -key K [layout flags]
       idemctl evict     -table T -operation O CALLER -key K [-force] [-rerun-writes] [layout flags]
       idemctl find      -table T -scope-hash H [-operation O] [layout flags]   (IDEM_SCOPE_HASH_KEY set)
       idemctl principal CALLER
       idemctl home      -table T -regions R1,R2[,...] [-witness-region W] -slot S [layout flags]
       idemctl failover  -table T -regions R1,R2[,...] [-witness-region W] -slot S -to R [-quorum N] [-lease D] [-replication-bound D] [-margin D] [layout flags]
CALLER: -jwt-issuer ISS (-jwt-sub S | -jwt-client-id C | -jwt-azp A) | -iam-arn ARN | -iam-account A -iam-caller C
        | -cognito-identity-pool P -cognito-identity-id I | -lambda-principal-id ID | -lambda-sub S | -anonymous
        | -principal P (spelled as the library stores it)
layout flags: [-partition-key N] [-sort-key N -partition-value V | -sort-key N -sort-value V] [-key-prefix P] [-attr default=name ...]`

// parse reads the command line; hashKey is IDEM_SCOPE_HASH_KEY's value.
func parse(args []string, hashKey string, stderr io.Writer) (request, error) {
	if len(args) == 0 {
		return request{}, errors.New(usage)
	}
	req := request{command: args[0]}
	switch req.command {
	case "lookup", "evict", "find", "principal", "home", "failover":
	default:
		return request{}, errors.New(usage)
	}
	fs := flag.NewFlagSet("idemctl "+req.command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var caller callerFlags
	var key string
	attrs := attrFlag{}
	if req.command != "principal" {
		fs.StringVar(&req.table.Name, "table", "", "the idempotency table's name (required)")
		if req.command != "home" && req.command != "failover" {
			fs.StringVar(&req.operation, "operation", "", "the scope's operation, such as \"POST /products\" (required but for find)")
		}
		fs.StringVar(&req.table.Layout.PartitionKey, "partition-key", "", "the partition key attribute (default \"id\")")
		fs.StringVar(&req.table.Layout.SortKey, "sort-key", "", "the sort key attribute, for a single-table design")
		fs.StringVar(&req.table.Layout.PartitionValue, "partition-value", "", "every record's partition key value, with -sort-key (the ID in the sort key)")
		fs.StringVar(&req.table.Layout.SortValue, "sort-value", "", "every record's sort key value, with -sort-key (the ID in the partition key)")
		fs.StringVar(&req.table.Layout.KeyPrefix, "key-prefix", "", "the prefix before the scope's ID in the key")
		fs.Var(attrs, "attr", "an attribute's name in this table, as default=name (repeatable): "+strings.Join(attrs.defaults(), ", "))
	}
	switch req.command {
	case "find":
		fs.StringVar(&req.scopeHash, "scope-hash", "", "a span's idem.scope_hash (required)")
	case "lookup", "evict":
		fs.StringVar(&key, "key", "", "the client's idempotency key (required)")
		fallthrough
	case "principal":
		caller.register(fs)
	}
	if req.command == "home" || req.command == "failover" {
		req.homes.register(fs, req.command == "failover")
	}
	if req.command == "evict" {
		fs.BoolVar(&req.evict.Force, "force", false, "evict a live holder's record too: its effect may run twice")
		fs.BoolVar(&req.evict.RerunWrites, "rerun-writes", false, "evict a completed record whose DynamoDB writes landed: its next request runs them again")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return request{}, err
	}
	if fs.NArg() > 0 {
		return request{}, fmt.Errorf("unexpected arguments %q\n%s", fs.Args(), usage)
	}
	if req.command == "principal" {
		principal, anonymous, err := caller.resolve()
		req.caller = spelled{Principal: principal, Anonymous: anonymous}
		return req, err
	}
	req.table.Layout.Attributes = attrs.attributes()
	if err := req.table.Layout.Validate(); err != nil {
		return request{}, err
	}
	if hashKey != "" {
		h, err := idemtrace.NewScopeHasher([]byte(hashKey))
		if err != nil {
			return request{}, fmt.Errorf("%s: %w", envScopeHashKey, err)
		}
		req.table.ScopeHasher = h
	}
	switch {
	case req.table.Name == "":
		return request{}, errors.New("-table is required\n" + usage)
	case req.command == "find" && req.scopeHash == "":
		return request{}, errors.New("-scope-hash is required\n" + usage)
	case req.command == "find" && req.table.ScopeHasher == nil:
		return request{}, fmt.Errorf("find needs %s: the key the functions hash scopes with in their traces", envScopeHashKey)
	case req.command == "find":
		return req, nil
	case req.command == "home" || req.command == "failover":
		return req, req.homes.check(req.command == "failover")
	case req.operation == "" || key == "":
		return request{}, errors.New("-operation and -key are required\n" + usage)
	}
	principal, anonymous, err := caller.resolve()
	if err != nil {
		return request{}, err
	}
	if anonymous {
		req.scope, err = idem.NewAnonymousScope(req.operation, key)
	} else {
		req.scope, err = idem.NewScope(req.operation, principal, key)
	}
	return req, err
}

// callerFlags name a key's caller as an operator knows it.
type callerFlags struct {
	principal                            string
	anonymous                            bool
	jwtIssuer, jwtSub, jwtClient, jwtAZP string
	iamARN, iamAccount, iamCaller        string
	cognitoPool, cognitoID               string
	lambdaPrincipalID, lambdaSub         string
}

func (c *callerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.principal, "principal", "", "the caller, spelled exactly as the library stores it")
	fs.BoolVar(&c.anonymous, "anonymous", false, "the anonymous scope (callers that cannot be named)")
	fs.StringVar(&c.jwtIssuer, "jwt-issuer", "", "a JWT authorizer's caller: the token's issuer (iss), with -jwt-sub, -jwt-client-id or -jwt-azp")
	fs.StringVar(&c.jwtSub, "jwt-sub", "", "a JWT authorizer's caller: the token's sub")
	fs.StringVar(&c.jwtClient, "jwt-client-id", "", "a JWT authorizer's caller without a sub: the token's client_id")
	fs.StringVar(&c.jwtAZP, "jwt-azp", "", "a JWT authorizer's caller without a sub or client_id: the token's azp")
	fs.StringVar(&c.iamARN, "iam-arn", "", "an IAM authorizer's caller: its ARN (a role's or any of its sessions': each names the role)")
	fs.StringVar(&c.iamAccount, "iam-account", "", "an IAM caller without an ARN: its account, with -iam-caller")
	fs.StringVar(&c.iamCaller, "iam-caller", "", "an IAM caller without an ARN: its caller id, with -iam-account")
	fs.StringVar(&c.cognitoPool, "cognito-identity-pool", "", "a Cognito identity pool's caller (IAM credentials of the pool): the pool's id, with -cognito-identity-id")
	fs.StringVar(&c.cognitoID, "cognito-identity-id", "", "a Cognito identity pool's caller: its identity id, with -cognito-identity-pool")
	fs.StringVar(&c.lambdaPrincipalID, "lambda-principal-id", "", "a Lambda authorizer's caller: its context's principalId")
	fs.StringVar(&c.lambdaSub, "lambda-sub", "", "a Lambda authorizer's caller without a principalId: its context's sub")
}

// resolve is the caller's principal as the way in spells it, or the
// anonymous scope; exactly one way of naming it must be given.
func (c *callerFlags) resolve() (principal string, anonymous bool, err error) {
	type way struct {
		name  string
		given bool
		spell func() (string, error)
	}
	one := func(flags string, values ...string) error {
		n := 0
		for _, v := range values {
			if v != "" {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("give one of %s", flags)
		}
		return nil
	}
	ways := []way{
		{"-principal", c.principal != "", func() (string, error) { return c.principal, nil }},
		{"-anonymous", c.anonymous, func() (string, error) { return "", nil }},
		{"-jwt-*", c.jwtIssuer != "" || c.jwtSub != "" || c.jwtClient != "" || c.jwtAZP != "", func() (string, error) {
			if c.jwtIssuer == "" {
				return "", errors.New("-jwt-issuer is required: the token's iss")
			}
			if err := one("-jwt-sub, -jwt-client-id and -jwt-azp", c.jwtSub, c.jwtClient, c.jwtAZP); err != nil {
				return "", err
			}
			claim, value := "sub", c.jwtSub
			switch {
			case c.jwtClient != "":
				claim, value = "client_id", c.jwtClient
			case c.jwtAZP != "":
				claim, value = "azp", c.jwtAZP
			}
			return idemprincipal.JWT(c.jwtIssuer, claim, value), nil
		}},
		{"-iam-*", c.iamARN != "" || c.iamAccount != "" || c.iamCaller != "", func() (string, error) {
			switch {
			case c.iamARN != "" && c.iamAccount == "" && c.iamCaller == "":
				return idemprincipal.IAM(c.iamARN), nil
			case c.iamARN == "" && c.iamAccount != "" && c.iamCaller != "":
				return idemprincipal.IAMCaller(c.iamAccount, c.iamCaller), nil
			}
			return "", errors.New("give -iam-arn, or -iam-account with -iam-caller")
		}},
		{"-cognito-identity-*", c.cognitoPool != "" || c.cognitoID != "", func() (string, error) {
			if c.cognitoPool == "" || c.cognitoID == "" {
				return "", errors.New("give -cognito-identity-pool with -cognito-identity-id")
			}
			return idemprincipal.CognitoIdentity(c.cognitoPool, c.cognitoID), nil
		}},
		{"-lambda-*", c.lambdaPrincipalID != "" || c.lambdaSub != "", func() (string, error) {
			if err := one("-lambda-principal-id and -lambda-sub", c.lambdaPrincipalID, c.lambdaSub); err != nil {
				return "", err
			}
			if c.lambdaPrincipalID != "" {
				return idemprincipal.Lambda("principalId", c.lambdaPrincipalID), nil
			}
			return idemprincipal.Lambda("sub", c.lambdaSub), nil
		}},
	}
	var given []way
	for _, w := range ways {
		if w.given {
			given = append(given, w)
		}
	}
	if len(given) != 1 {
		return "", false, errors.New("name the caller one way: -jwt-issuer with -jwt-sub (or -jwt-client-id, -jwt-azp), -iam-arn, -iam-account with -iam-caller, -cognito-identity-pool with -cognito-identity-id, -lambda-principal-id, -lambda-sub, -anonymous, or -principal as the library spells it\n" + usage)
	}
	principal, err = given[0].spell()
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", given[0].name, err)
	}
	return principal, c.anonymous, nil
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
		"completion_id": &at.CompletionID, "expires_at": &at.ExpiresAt, "writes": &at.Writes,
		"intents": &at.Intents, "markers": &at.Markers,
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

// homeFlags are home's and failover's flags.
type homeFlags struct {
	regions, witness, slot, to string
	quorum                     int
	lease, bound, margin       time.Duration
}

func (h *homeFlags) register(fs *flag.FlagSet, failover bool) {
	fs.StringVar(&h.regions, "regions", "", "the table's replica Regions, comma-separated, as idem.Homes.Clients names them (required)")
	fs.StringVar(&h.witness, "witness-region", "", "the Region of the witness's table (idem.Homes.Witness), if the stores have one")
	fs.StringVar(&h.slot, "slot", "", "the home the keys were given (idem.Homes.Home's answer: a Region) (required)")
	if failover {
		fs.StringVar(&h.to, "to", "", "the Region to move the home to (required)")
		fs.IntVar(&h.quorum, "quorum", 0, "the new epoch's quorum (default a majority of the voters; 1 with two Regions and no witness, only while the other is down); a smaller one than every quorum it reads can meet is raised to one that meets them, and the failover reports the quorum it used")
		fs.DurationVar(&h.lease, "lease", 0, "the stores' idem.Homes.Lease (default 20s)")
		fs.DurationVar(&h.bound, "replication-bound", 0, "the stores' idem.Homes.ReplicationBound (default 10s)")
		fs.DurationVar(&h.margin, "margin", 0, "the stores' lease margin, idem.WithLease's (default 2s)")
	}
}

// names are the Regions -regions names.
func (h *homeFlags) names() []string {
	var out []string
	for _, r := range strings.Split(h.regions, ",") {
		if r = strings.TrimSpace(r); r != "" {
			out = append(out, r)
		}
	}
	return out
}

func (h *homeFlags) check(failover bool) error {
	rs := h.names()
	switch {
	case len(rs) < 2:
		return errors.New("-regions names the table's replica Regions, two or more\n" + usage)
	case h.slot == "":
		return errors.New("-slot is required\n" + usage)
	case failover && !slices.Contains(rs, h.to):
		return fmt.Errorf("-to %q is not one of -regions %v\n%s", h.to, rs, usage)
	case slices.Contains(rs, h.witness):
		return fmt.Errorf("-witness-region %q is a replica Region", h.witness)
	}
	return nil
}
