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
// zero Layout is the default (partition key "id" holding the scope's ID);
// every field left empty takes its default. The package documentation
// gives its four shapes. Every caller of one table must use the same
// Layout: two layouts never see each other's records.
type Layout struct {
	// PartitionKey is the partition key attribute's name (S); default "id".
	PartitionKey string
	// SortKey is the sort key attribute's name (S), for a table that has
	// one; empty for none. With a sort key, exactly one of PartitionValue
	// and SortValue is set: the other key holds the scope's ID.
	SortKey string
	// PartitionValue is every record's partition key value, the scope's
	// ID going in the sort key: every record in one partition. At most
	// 2048 bytes; only with a sort key.
	PartitionValue string
	// SortValue is every record's sort key value, the scope's ID going in
	// the partition key: every record in a partition of its own. At most
	// 1024 bytes; only with a sort key.
	SortValue string
	// KeyPrefix is prepended to the scope's ID in the key attribute that
	// holds it (the sort key with a PartitionValue, else the partition
	// key); at most 256 bytes.
	KeyPrefix string
	// Attributes names the record's other attributes.
	Attributes Attributes
}

// Attributes names a record's attributes other than its key. An empty
// field takes its default, given in its comment; pkg/idem's package
// documentation says what each holds.
type Attributes struct {
	Status         string // "status"
	Fingerprint    string // "fingerprint"
	LeaseToken     string // "lease_token"
	LeaseExpiresAt string // "lease_expires_at"
	ResponseBody   string // "response_body"
	ResponseMeta   string // "response_meta"
	Format         string // "format"
	// ResponseStatus and ResponseHeaders are read from records of
	// format 1 only (written before format 2), never written.
	ResponseStatus  string // "response_status"
	ResponseHeaders string // "response_headers"
	CreatedAt       string // "created_at"
	CompletedAt     string // "completed_at"
	CompletionID    string // "completion_id"
	ExpiresAt       string // TTLAttribute, "expires_at"
	// Writes counts the DynamoDB writes committed with a completed
	// record, for operators (records completed before hold none).
	Writes string // "writes"
	// Intents holds, on a table with multi-Region strong consistency,
	// the writes recorded with a completion and not yet all applied
	// (pkg/idem's package documentation, "Global tables").
	Intents string // "intents"
	// Markers lists, once a completion's writes are applied, the items
	// whose updates carry its apply-once markers, for the sweeper to
	// clear when the record goes.
	Markers string // "markers"
	// Origin and Epoch are written by a store on a global table
	// (idem.WithHomes, idem.WithRegion): the Region whose replica took
	// the claim, and the epoch of that Region's home lease (absent
	// without one), so that a claim overwritten by another Region's is
	// told from the streams.
	Origin string // "origin"
	Epoch  string // "home_epoch"
}

// defaultAttributes are today's names.
var defaultAttributes = Attributes{
	Status: "status", Fingerprint: "fingerprint", LeaseToken: "lease_token",
	LeaseExpiresAt: "lease_expires_at", ResponseStatus: "response_status",
	ResponseHeaders: "response_headers", ResponseBody: "response_body",
	ResponseMeta: "response_meta", Format: "format",
	CreatedAt: "created_at", CompletedAt: "completed_at",
	CompletionID: "completion_id", ExpiresAt: TTLAttribute, Writes: "writes",
	Intents: "intents", Markers: "markers",
	Origin: "origin", Epoch: "home_epoch",
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
		{"ResponseMeta", &a.ResponseMeta}, {"Format", &a.Format},
		{"CreatedAt", &a.CreatedAt}, {"CompletedAt", &a.CompletedAt},
		{"CompletionID", &a.CompletionID}, {"ExpiresAt", &a.ExpiresAt},
		{"Writes", &a.Writes}, {"Intents", &a.Intents}, {"Markers", &a.Markers},
		{"Origin", &a.Origin}, {"Epoch", &a.Epoch},
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
// not distinct (the key attributes included), a sort key with neither or
// both of PartitionValue and SortValue, either of them without a sort
// key, or a fixed value or prefix over DynamoDB's key limits (2048 bytes
// for a partition key, 1024 for a sort key; a prefix may take at most
// 256).
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
	case l.SortKey != "" && l.PartitionValue == "" && l.SortValue == "":
		errs = append(errs, errors.New("a sort key needs a PartitionValue (the scope's ID in the sort key) or a SortValue (the ID in the partition key)"))
	case l.SortKey != "" && l.PartitionValue != "" && l.SortValue != "":
		errs = append(errs, errors.New("PartitionValue and SortValue are both set: one key holds a fixed value, the other the scope's ID"))
	case l.SortKey == "" && (l.PartitionValue != "" || l.SortValue != ""):
		errs = append(errs, errors.New("a PartitionValue or SortValue needs a sort key (without one, the partition key holds the scope's ID)"))
	}
	if len(l.PartitionValue) > maxPartitionKeyBytes {
		errs = append(errs, fmt.Errorf("PartitionValue is %d bytes, at most %d", len(l.PartitionValue), maxPartitionKeyBytes))
	}
	if len(l.SortValue) > maxSortKeyBytes {
		errs = append(errs, fmt.Errorf("SortValue is %d bytes, at most %d", len(l.SortValue), maxSortKeyBytes))
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
// left of DynamoDB's limit on the attribute holding it (1024 bytes for
// the sort key with a PartitionValue, 2048 for the partition key
// otherwise) after KeyPrefix.
func (l Layout) MaxIDLength() int {
	if l.idInSortKey() {
		return maxSortKeyBytes - len(l.KeyPrefix)
	}
	return maxPartitionKeyBytes - len(l.KeyPrefix)
}

// idInSortKey reports whether the sort key holds the scope's ID: a sort
// key with a fixed partition value.
func (l Layout) idInSortKey() bool { return l.SortKey != "" && l.PartitionValue != "" }

// Key is the primary key of the record of the scope whose ID (Scope.ID in
// pkg/idem) is id.
func (l Layout) Key(id string) map[string]types.AttributeValue {
	l = l.WithDefaults()
	switch {
	case l.idInSortKey():
		return map[string]types.AttributeValue{
			l.PartitionKey: &types.AttributeValueMemberS{Value: l.PartitionValue},
			l.SortKey:      &types.AttributeValueMemberS{Value: l.KeyPrefix + id},
		}
	case l.SortKey != "":
		return map[string]types.AttributeValue{
			l.PartitionKey: &types.AttributeValueMemberS{Value: l.KeyPrefix + id},
			l.SortKey:      &types.AttributeValueMemberS{Value: l.SortValue},
		}
	}
	return map[string]types.AttributeValue{l.PartitionKey: &types.AttributeValueMemberS{Value: l.KeyPrefix + id}}
}

// ID inverts Key: the scope ID of the record item, which holds its key.
// ok is false when item is not a record of this layout (another key, a
// partition value, sort value or prefix of its own).
func (l Layout) ID(item map[string]types.AttributeValue) (id string, ok bool) {
	l = l.WithDefaults()
	attr := l.PartitionKey
	switch {
	case l.idInSortKey():
		pv, isS := item[l.PartitionKey].(*types.AttributeValueMemberS)
		if !isS || pv.Value != l.PartitionValue {
			return "", false
		}
		attr = l.SortKey
	case l.SortKey != "":
		sv, isS := item[l.SortKey].(*types.AttributeValueMemberS)
		if !isS || sv.Value != l.SortValue {
			return "", false
		}
	}
	v, isS := item[attr].(*types.AttributeValueMemberS)
	if !isS {
		return "", false
	}
	return strings.CutPrefix(v.Value, l.KeyPrefix)
}

// LeadingKeyPrefix is the dynamodb:LeadingKeys value that confines an IAM
// role to operation's records in this layout: KeyPrefix +
// LeadingKeyPrefix(operation) wherever the partition key holds the
// scope's ID (no sort key, or a SortValue); give the policy the condition
// ForAllValues:StringLike on dynamodb:LeadingKeys of it + "*". With a
// PartitionValue, every record's partition key is that value, whatever
// its operation: the LeadingKeys condition (which sees only the partition
// key) can confine a role to the idempotency partition but cannot
// separate operations, and this returns PartitionValue (for a
// StringEquals condition).
func (l Layout) LeadingKeyPrefix(operation string) string {
	if l.idInSortKey() {
		return l.PartitionValue
	}
	return l.KeyPrefix + LeadingKeyPrefix(operation)
}
