// Package idemtable creates the DynamoDB table pkg/idem keeps its records
// in (Create, Input), describes where in a table they live (Layout), and
// names the key prefix that confines an IAM role to one operation's
// records (LeadingKeyPrefix).
//
// # Layouts
//
// A Layout has four shapes:
//
//   - a table of its own (the default): partition key = the scope's ID;
//   - a shared table with a prefix: partition key = KeyPrefix + the scope's
//     ID, such as "IDEMPOTENCY#v1|14:POST /products|...";
//   - a single-table design, one partition: SortKey set, partition key =
//     PartitionValue (a fixed value such as "IDEMPOTENCY"), sort key =
//     KeyPrefix + the scope's ID. All records share one partition key
//     value, and so one partition: DynamoDB serves one about 1,000 write
//     units a second (3,000 read units), which bounds the idempotency
//     traffic of the whole table, and the IAM condition
//     dynamodb:LeadingKeys (which sees the partition key only) cannot
//     tell one operation's records from another's. In exchange, one
//     Query lists every record.
//   - a single-table design, spread: SortKey set, partition key =
//     KeyPrefix + the scope's ID, sort key = SortValue (a fixed value
//     such as "IDEMPOTENCY" or "#METADATA"). Each record is an item
//     collection of its own, so the records spread over the table's
//     partitions as a table of its own does, and LeadingKeyPrefix
//     confines a role to one operation's records. Listing them takes a
//     Scan (or an index of the adopter's).
package idemtable
