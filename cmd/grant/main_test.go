package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/access"
	"github.com/idemlambda/idemlambda/internal/testkit/ddbtest"
)

const (
	role   = "arn:aws:iam::123456789012:role/Importer"
	seller = "3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b"
)

func TestGrantRevokeShow(t *testing.T) {
	t.Parallel()
	env := ddbtest.New(t)
	ctx := context.Background()
	run := func(args ...string) string {
		t.Helper()
		req, err := parse(append([]string{"-table", env.Tables.Callers, "-caller", role}, args...), &bytes.Buffer{})
		require.NoError(t, err)
		var out bytes.Buffer
		require.NoError(t, apply(ctx, env.Client, req, &out))
		return strings.TrimSpace(out.String())
	}
	assert.Equal(t, `{"caller":"`+role+`","seller_ids":[]}`, run())
	assert.Equal(t, `{"caller":"`+role+`","seller_ids":["*","`+seller+`"]}`, run(strings.ToUpper(seller), "*"))
	assert.Equal(t, `{"caller":"`+role+`","seller_ids":["`+seller+`"]}`, run("-revoke", "*"))

	// Every replica alike; one written by hand makes the show fail.
	_, err := env.Client.DeleteItem(ctx, deleteReplica(env.Tables.Callers, 7))
	require.NoError(t, err)
	req, err := parse([]string{"-table", env.Tables.Callers, "-caller", role}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.ErrorIs(t, apply(ctx, env.Client, req, &bytes.Buffer{}), access.ErrReplicasDiffer)
}

func TestParseRefusesWhatCannotBeMeant(t *testing.T) {
	t.Parallel()
	for name, args := range map[string][]string{
		"no table":       {"-caller", role},
		"no caller":      {"-table", "t"},
		"a session":      {"-table", "t", "-caller", "arn:aws:sts::123456789012:assumed-role/Importer/s"},
		"revoke nothing": {"-table", "t", "-caller", role, "-revoke"},
	} {
		_, err := parse(args, &bytes.Buffer{})
		assert.Error(t, err, name)
	}
}

// A role's ARN as IAM shows it carries the role's path (service-role/,
// an IAM Identity Center permission set's aws-reserved/sso.amazonaws.com/);
// its sessions' ARNs, which name the caller of a request, do not. A grant
// under the path would never be checked: the command names the caller as
// the API does, or refuses.
func TestARolesPathIsNotPartOfItsCaller(t *testing.T) {
	t.Parallel()
	for _, arn := range []string{
		"arn:aws:iam::123456789012:role/service-role/Importer",
		"arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/eu-west-1/Importer",
	} {
		_, err := parse([]string{"-table", "t", "-caller", arn, seller}, &bytes.Buffer{})
		require.Error(t, err, arn)
		assert.Contains(t, err.Error(), `the API names this caller `+role, arn)
		c, err := access.IAMCaller(arn)
		require.NoError(t, err)
		assert.Equal(t, role, c.ID(), "%s: a session of the role is this caller", arn)
	}
}

func deleteReplica(table string, r int) *dynamodb.DeleteItemInput {
	return &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
		access.AttrID: &types.AttributeValueMemberS{Value: access.GrantPrefix + role + "|" + strconv.Itoa(r)},
	}}
}
