package sellers

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/idemlambda/idemlambda/pkg/ddbitem"
)

// GetItemAPI is the part of the DynamoDB client a Reader uses.
type GetItemAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// Reader reads seller statistics.
type Reader struct {
	db    GetItemAPI
	table string
}

// NewReader returns a Reader on the sellers table.
func NewReader(db GetItemAPI, table string) (*Reader, error) {
	if db == nil || table == "" {
		return nil, errors.New("sellers: reader needs a DB and the sellers table name")
	}
	return &Reader{db: db, table: table}, nil
}

// Get returns a seller's statistics, or ErrNotFound before its first
// product. The read is strongly consistent: a count the consumer has just
// committed is seen.
func (r *Reader) Get(ctx context.Context, id uuid.UUID) (Stats, error) {
	out, err := r.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(r.table),
		Key:            map[string]types.AttributeValue{AttrSellerID: ddbitem.S(id.String())},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Stats{}, fmt.Errorf("sellers: get: %w", err)
	}
	if len(out.Item) == 0 {
		return Stats{}, ErrNotFound
	}
	return FromItem(out.Item)
}
