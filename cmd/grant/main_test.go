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

func deleteReplica(table string, r int) *dynamodb.DeleteItemInput {
	return &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
		access.AttrID: &types.AttributeValueMemberS{Value: access.GrantPrefix + role + "|" + strconv.Itoa(r)},
	}}
}
