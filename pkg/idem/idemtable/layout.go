package idemtable

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoDB's limits on a key attribute's value, in bytes.
const (
	maxPartitionKeyBytes = 2048
	maxSortKeyBytes      = 1024
	// maxKeyPrefixBytes bounds KeyPrefix so a scope's ID keeps most of the
	// key for itself.
	maxKeyPrefixBytes = 256
)

// Layout says where the records live in a table: the key attributes, what
// their values are, and the names of the record's other attributes. The
// zero Layout is the default: partition key "id" holding the scope's ID,
// no sort key, the attribute names the package documentation of pkg/idem
// lists. Every field left empty takes its default.
//
// Three shapes:
//
//   - a table of its own (the default): partition key = the scope's ID;
//   - a shared table with a prefix: partition key = KeyPrefix + the scope's
//     ID, such as "IDEMPOTENCY#v1|14:POST /products|...";
//   - a single-table design: SortKey set, partition key = PartitionValue
//     (a fixed value such as "IDEMPOTENCY"), sort key = KeyPrefix + the
//     scope's ID. All records then share one partition: DynamoDB's per-
//     partition throughput bounds the idempotency traffic.
//
// Every caller of one table must use the same Layout: two layouts never see
// each other's records.
type Layout struct {
	// PartitionKey is the partition key attribute's name (S); default "id".
	PartitionKey string
	// SortKey is the sort key attribute's name (S), for a table that has
	// one; empty for none. With a sort key, PartitionValue is required.
	SortKey string
	// PartitionValue is every record's partition key value when SortKey
	// is set (the scope's ID goes in the sort key); empty without one.
	PartitionValue string
	// KeyPrefix is prepended to the scope's ID in the key attribute that
	// holds it (the sort key if any, else the partition key); at most 256
	// bytes.
	KeyPrefix string
	// Attributes names the record's other attributes.
	Attributes Attributes
}

// Attributes names a record's attributes other than its key. An empty
// field takes its default, given in its comment; pkg/idem's package
// documentation says what each holds.
type Attributes struct {
	Status          string // "status"
	Fingerprint     string // "fingerprint"
	LeaseToken      string // "lease_token"
	LeaseExpiresAt  string // "lease_expires_at"
	ResponseStatus  string // "response_status"
	ResponseHeaders string // "response_headers"
	ResponseBody    string // "response_body"
	CreatedAt       string // "created_at"
	CompletedAt     string // "completed_at"
	CompletionID    string // "completion_id"
	ExpiresAt       string // TTLAttribute, "expires_at"
}

// defaultAttributes are today's names.
var defaultAttributes = Attributes{
	Status: "status", Fingerprint: "fingerprint", LeaseToken: "lease_token",
	LeaseExpiresAt: "lease_expires_at", ResponseStatus: "response_status",
	ResponseHeaders: "response_headers", ResponseBody: "response_body",
	CreatedAt: "created_at", CompletedAt: "completed_at",
	CompletionID: "completion_id", ExpiresAt: TTLAttribute,
}

// fields lists the attribute names with their Go field names, for
// defaults and validation.
func (a *Attributes) fields() []struct {
	name string
	v    *string
} {
	return []struct {
		name string
		v    *string
	}{
		{"Status", &a.Status}, {"Fingerprint", &a.Fingerprint}, {"LeaseToken", &a.LeaseToken},
		{"LeaseExpiresAt", &a.LeaseExpiresAt}, {"ResponseStatus", &a.ResponseStatus},
		{"ResponseHeaders", &a.ResponseHeaders}, {"ResponseBody", &a.ResponseBody},
		{"CreatedAt", &a.CreatedAt}, {"CompletedAt", &a.CompletedAt},
		{"CompletionID", &a.CompletionID}, {"ExpiresAt", &a.ExpiresAt},
	}
}

// WithDefaults returns l with every empty name set to its default: the
// layout as the store uses it.
func (l Layout) WithDefaults() Layout {
	if l.PartitionKey == "" {
		l.PartitionKey = KeyAttribute
	}
	def := defaultAttributes
	defs := def.fields()
	for i, f := range l.Attributes.fields() {
		if *f.v == "" {
			*f.v = *defs[i].v
		}
	}
	return l
}

// Validate reports a layout no table can hold: attribute names that are
// not distinct (the key attributes included), a sort key without a
// partition value or a partition value without a sort key, or a
// partition value or prefix over DynamoDB's key limits (2048 bytes for a
// partition key, 1024 for a sort key; a prefix may take at most 256).
func (l Layout) Validate() error {
	l = l.WithDefaults()
	var errs []error
	seen := map[string]string{}
	use := func(field, name string) {
		if strings.TrimSpace(name) != name || len(name) > 255 {
			errs = append(errs, fmt.Errorf("%s %q: surrounding spaces or over 255 bytes", field, name))
		}
		if prev, ok := seen[name]; ok {
			errs = append(errs, fmt.Errorf("%s and %s are both %q", prev, field, name))
		}
		seen[name] = field
	}
	use("PartitionKey", l.PartitionKey)
	if l.SortKey != "" {
		use("SortKey", l.SortKey)
	}
	for _, f := range l.Attributes.fields() {
		use(f.name, *f.v)
	}
	switch {
	case l.SortKey != "" && l.PartitionValue == "":
		errs = append(errs, errors.New("a sort key needs a PartitionValue"))
	case l.SortKey == "" && l.PartitionValue != "":
		errs = append(errs, errors.New("a PartitionValue needs a sort key (without one, the partition key holds the scope's ID)"))
	case len(l.PartitionValue) > maxPartitionKeyBytes:
		errs = append(errs, fmt.Errorf("PartitionValue is %d bytes, at most %d", len(l.PartitionValue), maxPartitionKeyBytes))
	}
	if len(l.KeyPrefix) > maxKeyPrefixBytes {
		errs = append(errs, fmt.Errorf("KeyPrefix is %d bytes, at most %d", len(l.KeyPrefix), maxKeyPrefixBytes))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("idemtable: invalid layout: %w", err)
	}
	return nil
}

// MaxIDLength is the longest scope ID the layout's key can hold: what is
// left of DynamoDB's limit on the attribute holding it (2048 bytes for a
// partition key, 1024 for a sort key) after KeyPrefix.
func (l Layout) MaxIDLength() int {
	if l.SortKey != "" {
		return maxSortKeyBytes - len(l.KeyPrefix)
	}
	return maxPartitionKeyBytes - len(l.KeyPrefix)
}

// Key is the primary key of the record of the scope whose ID (Scope.ID in
// pkg/idem) is id.
func (l Layout) Key(id string) map[string]types.AttributeValue {
	l = l.WithDefaults()
	if l.SortKey != "" {
		return map[string]types.AttributeValue{
			l.PartitionKey: &types.AttributeValueMemberS{Value: l.PartitionValue},
			l.SortKey:      &types.AttributeValueMemberS{Value: l.KeyPrefix + id},
		}
	}
	return map[string]types.AttributeValue{l.PartitionKey: &types.AttributeValueMemberS{Value: l.KeyPrefix + id}}
}

// ID inverts Key: the scope ID of the record item, which holds its key.
// ok is false when item is not a record of this layout (another key, a
// partition value or prefix of its own).
func (l Layout) ID(item map[string]types.AttributeValue) (id string, ok bool) {
	l = l.WithDefaults()
	attr := l.PartitionKey
	if l.SortKey != "" {
		pv, isS := item[l.PartitionKey].(*types.AttributeValueMemberS)
		if !isS || pv.Value != l.PartitionValue {
			return "", false
		}
		attr = l.SortKey
	}
	v, isS := item[attr].(*types.AttributeValueMemberS)
	if !isS {
		return "", false
	}
	return strings.CutPrefix(v.Value, l.KeyPrefix)
}

// LeadingKeyPrefix is the dynamodb:LeadingKeys value that confines an IAM
// role to operation's records in this layout: KeyPrefix +
// LeadingKeyPrefix(operation) without a sort key. With a sort key, every
// record's partition key is PartitionValue, whatever its operation: the
// LeadingKeys condition (which sees only the partition key) can confine a
// role to the idempotency partition but cannot separate operations, and
// this returns PartitionValue.
func (l Layout) LeadingKeyPrefix(operation string) string {
	if l.SortKey != "" {
		return l.PartitionValue
	}
	return l.KeyPrefix + LeadingKeyPrefix(operation)
}
