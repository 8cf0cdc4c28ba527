package access

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/idemlambda/idemlambda/pkg/ddbitem"
)

// The callers table: its key and TTL attributes, and what its items hold.
const (
	// AttrID is the table's hash key: GrantPrefix or WindowPrefix, then
	// the rest of the item's identity.
	AttrID = "id"
	// AttrExpiresAt is the TTL attribute (epoch seconds) of window
	// items; grants have none and never expire.
	AttrExpiresAt = "expires_at"
	// AttrSellerIDs is a grant's string set of seller ids (lower-case,
	// 36 characters) or AnySeller.
	AttrSellerIDs = "seller_ids"
	// AttrCreates is a window counter's count of creations.
	AttrCreates = "creates"
	// GrantPrefix begins a grant replica's id,
	// "grant|<caller id>|<replica>".
	GrantPrefix = "grant|"
	// WindowPrefix begins a window counter's id,
	// "window|<start, epoch seconds>|<caller id>|<counter>".
	WindowPrefix = "window|"
)

// GrantReplicas is how many items hold each caller's grant, all alike
// (Grant and Revoke change them in one transaction). A creation checks
// one of them, at random, in its own transaction: DynamoDB cancels a
// transaction that meets an item another running transaction holds, so
// on one item a caller's concurrent creations would cancel each other;
// on 16 they rarely meet (docs/operations.md, Security).
const GrantReplicas = 16

// Config wires a Guard.
type Config struct {
	// Table is the callers table: grants and window counters.
	Table string
	// Limit bounds each caller's creations.
	Limit Limit
	// Now replaces time.Now in tests.
	Now func() time.Time
	// Remember is how many callers' full windows the guard keeps in
	// memory (default 10,000); a caller forgotten is asked of DynamoDB
	// again.
	Remember int
}

// Guard checks callers' creations: their sellers and their limit. It
// makes no DynamoDB call of its own: what it cannot answer from memory
// it answers with writes for the creation's own transaction (Check).
type Guard struct {
	table string
	limit Limit
	now   func() time.Time
	usage *usage
}

// NewGuard checks the configuration and returns the guard.
func NewGuard(cfg Config) (*Guard, error) {
	switch {
	case cfg.Table == "":
		return nil, errors.New("access: the callers table name is required")
	case cfg.Limit.Creates < 0:
		return nil, errors.New("access: a limit's creates cannot be negative")
	case cfg.Limit.Creates > 0 && (cfg.Limit.Window < time.Second || cfg.Limit.Window%time.Second != 0):
		return nil, fmt.Errorf("access: a limit's window must be whole seconds, at least one, not %v", cfg.Limit.Window)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Remember <= 0 {
		cfg.Remember = 10_000
	}
	return &Guard{table: cfg.Table, limit: cfg.Limit, now: cfg.Now, usage: newUsage(cfg.Remember)}, nil
}

// Admit answers what needs no DynamoDB call: a caller whose token does not
// list the seller (ErrSellerForbidden), and one whose window this process
// found full (*LimitedError: a window's counts only grow, so that answer
// cannot be wrong before the window ends). Replays are answered after it:
// a caller refused here gets its replays once its window has ended.
func (g *Guard) Admit(c Caller, seller uuid.UUID) error {
	if err := c.VouchesFor(seller); err != nil {
		return err
	}
	if g.limit.Creates == 0 {
		return nil
	}
	now := g.now()
	if w := g.window(now); g.usage.allFull(c.id, w, g.limit.replicas()) {
		return &LimitedError{RetryAfter: g.windowEnd(w).Sub(now)}
	}
	return nil
}

// Check is what a creation by one caller for one seller writes besides
// the product, in the product's own transaction: a ConditionCheck of one
// replica of the caller's grant (unless its token vouched for the seller)
// and a creation added to one counter of the caller's window (unless the
// limit is off). Either failing cancels the whole transaction: nothing is
// created, nothing counted. A replay never commits a transaction, so it
// is never counted.
type Check struct {
	// Writes go into the transaction, after the operation's own.
	Writes []types.TransactWriteItem

	g       *Guard
	caller  string
	seller  uuid.UUID
	grant   int   // index of the grant's check in Writes, -1 without one
	count   int   // index of the window's count in Writes, -1 without one
	window  int64 // the window counted in
	counter int   // the window's counter
}

// Check returns the writes that make a creation by c for seller
// conditional on c's grant and c's limit.
func (g *Guard) Check(c Caller, seller uuid.UUID) Check {
	k := Check{g: g, caller: c.id, seller: seller, grant: -1, count: -1}
	if !c.Vouched() {
		k.grant = len(k.Writes)
		k.Writes = append(k.Writes, g.grantCheck(c.id, seller))
	}
	if g.limit.Creates > 0 {
		k.window = g.window(g.now())
		// Every counter known full: Admit refuses such a caller, unless
		// this process learned it since; then any counter says so again.
		k.counter = max(0, g.usage.pick(c.id, k.window, g.limit.replicas()))
		k.count = len(k.Writes)
		k.Writes = append(k.Writes, g.countWrite(c.id, k.window, k.counter))
	}
	return k
}

// grantCheck is the ConditionCheck that one replica of the caller's
// grant, at random, lists seller or every seller.
func (g *Guard) grantCheck(caller string, seller uuid.UUID) types.TransactWriteItem {
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                aws.String(g.table),
		Key:                      grantKey(caller, rand.IntN(GrantReplicas)),
		ConditionExpression:      aws.String("contains(#sellers, :seller) OR contains(#sellers, :any)"),
		ExpressionAttributeNames: map[string]string{"#sellers": AttrSellerIDs},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":seller": ddbitem.S(seller.String()), ":any": ddbitem.S(AnySeller),
		},
	}}
}

// Committed records that the creation's transaction committed: the
// counter it counted on has one creation more, which this process keeps
// to know when the counter is full without asking.
func (k Check) Committed() {
	if k.g != nil && k.count >= 0 {
		k.g.usage.counted(k.caller, k.window, k.counter, k.g.limit.share(k.counter))
	}
}

// Refused is the caller's error for the write at index i of Writes whose
// condition failed (idem.FailedWrite, less the operation's own writes):
// ErrSellerForbidden for the grant; a *LimitedError for the window's
// counter, which the guard remembers as full: until the window ends once
// it knows every counter is, else a second, for a retry to pick another.
// nil for an index that is none of them.
func (k Check) Refused(i int) error {
	switch {
	case k.g == nil || i < 0:
	case i == k.grant:
		return &SellerError{Seller: k.seller, Reason: "no grant in the callers table lists it for this caller"}
	case i == k.count:
		now := k.g.now()
		if k.g.usage.refused(k.caller, k.window, k.counter, k.g.limit.replicas()) {
			return &LimitedError{RetryAfter: k.g.windowEnd(k.window).Sub(now)}
		}
		return &LimitedError{RetryAfter: time.Second}
	}
	return nil
}

func grantKey(caller string, replica int) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrID: ddbitem.S(GrantPrefix + caller + "|" + strconv.Itoa(replica))}
}
