// Package ddb builds the DynamoDB clients the functions use and counts the
// calls they make.
package ddb

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// NewClient loads the default AWS configuration, so the SDK's own
// AWS_ENDPOINT_URL_DYNAMODB, AWS_REGION and credential chain apply, and
// returns a DynamoDB client that counts its calls per context
// (CountCalls). Extra options (a call counter, a test endpoint) are
// applied last.
func NewClient(ctx context.Context, opts ...func(*dynamodb.Options)) (*dynamodb.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load aws config: %w", err)
	}
	return dynamodb.NewFromConfig(cfg, append([]func(*dynamodb.Options){CountPerContext}, opts...)...), nil
}
