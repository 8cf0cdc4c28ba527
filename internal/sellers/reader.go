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

// QueryAPI is the part of the DynamoDB client a Reader uses.
type QueryAPI interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Reader reads seller statistics.
type Reader struct {
	db    QueryAPI
	table string
}

// NewReader returns a Reader on the sellers table.
func NewReader(db QueryAPI, table string) (*Reader, error) {
	if db == nil || table == "" {
		return nil, errors.New("sellers: reader needs a DB and the sellers table name")
	}
	return &Reader{db: db, table: table}, nil
}

// Get returns a seller's statistics, the sum of its shards (FromItems),
// or ErrNotFound before its first product. One strongly consistent Query
// on the seller's id reads every shard, however many the counter writes,
// so a count the consumer has just committed is seen, and the number of
// shards can change without a migration.
func (r *Reader) Get(ctx context.Context, id uuid.UUID) (Stats, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(r.table),
		KeyConditionExpression:    aws.String("#seller = :seller"),
		ExpressionAttributeNames:  map[string]string{"#seller": AttrSellerID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":seller": ddbitem.S(id.String())},
		ConsistentRead:            aws.Bool(true),
	}
	var items []map[string]types.AttributeValue
	for {
		out, err := r.db.Query(ctx, in)
		if err != nil {
			return Stats{}, fmt.Errorf("sellers: get: %w", err)
		}
		items = append(items, out.Items...)
		// A page holds 1 MB, hundreds of shards: more pages only if the
		// shards ever outgrow that.
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	s, err := FromItems(items)
	if err != nil {
		return Stats{}, err
	}
	if s.SellerID != id {
		return Stats{}, fmt.Errorf("%w: seller %s's query returned seller %s", ErrCorrupt, id, s.SellerID)
	}
	return s, nil
}
