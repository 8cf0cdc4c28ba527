// Command grant lets an IAM caller of the API act for sellers, takes that
// back, or shows what it may: the caller's grant in the callers table,
// which createproduct checks in each product's own transaction
// (docs/operations.md, Security).
//
//	grant -table T -caller ARN [seller-id|*]...           add the sellers
//	grant -table T -caller ARN -revoke [seller-id|*]...   take them back
//	grant -table T -caller ARN                            show the grant
//
// The caller is the IAM identity as the API names it: a role
// (arn:aws:iam::123456789012:role/Importer, whatever the session, and
// without the role's path), a user, or the account root; * stands for every seller. It prints the grant as
// JSON on stdout once changed; an error goes to stderr with exit status 1
// (2 for a usage error). AWS configuration is the SDK's usual one
// (environment, profile, role); AWS_ENDPOINT_URL_DYNAMODB points it at a
// local store (make run's: -table callers).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/internal/access"
)

func main() {
	os.Exit(grant(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// request is what the command line asks for.
type request struct {
	table, caller string
	revoke        bool
	sellers       []string
}

// grant is the whole command, returning its exit status: flags, AWS
// configuration, client, then the change and the grant as it is.
func grant(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	req, err := parse(args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "grant:", err)
		return 2
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "grant: AWS configuration:", err)
		return 1
	}
	if err := apply(ctx, dynamodb.NewFromConfig(cfg), req, stdout); err != nil {
		fmt.Fprintln(stderr, "grant:", err)
		return 1
	}
	return 0
}

// db is what apply needs of a DynamoDB client.
type db interface {
	access.DB
	access.Reader
}

// apply changes the grant as req asks, if it asks, and prints it.
func apply(ctx context.Context, c db, req request, stdout io.Writer) error {
	var err error
	switch {
	case len(req.sellers) == 0:
	case req.revoke:
		err = access.Revoke(ctx, c, req.table, req.caller, req.sellers...)
	default:
		err = access.Grant(ctx, c, req.table, req.caller, req.sellers...)
	}
	if err != nil {
		return err
	}
	sellers, err := access.Granted(ctx, c, req.table, req.caller)
	if sellers == nil {
		sellers = []string{}
	}
	out, _ := json.Marshal(struct {
		Caller  string   `json:"caller"`
		Sellers []string `json:"seller_ids"`
	}{req.caller, sellers})
	fmt.Fprintln(stdout, string(out))
	return err
}

func parse(args []string, stderr io.Writer) (request, error) {
	fs := flag.NewFlagSet("grant", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var req request
	fs.StringVar(&req.table, "table", "", "the callers table (the stack's CallersTableName output)")
	fs.StringVar(&req.caller, "caller", "", "the IAM caller: arn:aws:iam::<account>:role/<name>, :user/<name> or :root")
	fs.BoolVar(&req.revoke, "revoke", false, "take the sellers back instead of granting them")
	if err := fs.Parse(args); err != nil {
		return request{}, err
	}
	req.sellers = fs.Args()
	switch {
	case req.table == "" || req.caller == "":
		return request{}, errors.New("-table and -caller are required")
	case req.revoke && len(req.sellers) == 0:
		return request{}, errors.New("-revoke names the sellers to take back")
	}
	if c, err := access.IAMCaller(req.caller); err != nil || c.ID() != req.caller {
		return request{}, fmt.Errorf("-caller %q: the API names this caller %s (a role without its path or session): grant that", req.caller, c.ID())
	}
	return req, nil
}
