package sellersqs

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// heldShard reports whether a batch's last transaction was cancelled
// because another transaction held its home shard: a TransactionConflict
// on the update of the sellers table among the shared writes pkg/idem
// reports contended. A conflict on an event's record (a duplicate of it
// committing in another environment) says nothing about the shard.
func heldShard(contended []types.TransactWriteItem, table string) bool {
	for _, w := range contended {
		if w.Update != nil && aws.ToString(w.Update.TableName) == table {
			return true
		}
	}
	return false
}
