package access

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemlambda/idemlambda/pkg/ddbitem"
)

// ErrLimited: the caller created as many products as its limit allows
// in the current window. The error is a *LimitedError. 429.
var ErrLimited = errors.New("access: the caller is over its limit")

// LimitedError is the ErrLimited case with the time until the caller
// may create again.
type LimitedError struct {
	// RetryAfter is the time until the caller's window ends, or, while
	// some of its window's counters may still have room, a second.
	RetryAfter time.Duration
}

func (e *LimitedError) Error() string {
	return fmt.Sprintf("%v (retry in %v)", ErrLimited, e.RetryAfter.Round(time.Millisecond))
}

// Is makes errors.Is(err, ErrLimited) true.
func (e *LimitedError) Is(target error) bool { return target == ErrLimited }

// RetryAfterSeconds is a Retry-After header's value for d: whole seconds,
// rounded up, at least 1.
func RetryAfterSeconds(d time.Duration) string {
	return strconv.FormatInt(max(1, int64(math.Ceil(d.Seconds()))), 10)
}

// Limit is how many products one caller may create per window: fixed
// windows, aligned on multiples of Window since the epoch.
type Limit struct {
	// Creates is the most products a caller creates in one window; 0
	// turns the limit off.
	Creates int
	// Window is the window's length (whole seconds, at least one).
	Window time.Duration
}

// WindowReplicas is how many counters share a caller's window (fewer
// when the limit is smaller): each creation adds one to one of them, at
// random, in its own transaction, within that counter's share of the
// limit, for the reason grants have replicas (GrantReplicas). The shares
// add up to the limit exactly.
const WindowReplicas = 16

// replicas is how many counters a window of the limit has.
func (l Limit) replicas() int { return min(WindowReplicas, l.Creates) }

// share is counter r's share of the limit: the limit divided among the
// counters, the first ones one more when it does not divide.
func (l Limit) share(r int) int {
	n := l.replicas()
	s := l.Creates / n
	if r < l.Creates%n {
		s++
	}
	return s
}

// window is the start (epoch seconds) of the window t is in.
func (g *Guard) window(t time.Time) int64 {
	w := int64(g.limit.Window / time.Second)
	s := t.Unix()
	return s - s%w
}

// windowEnd is when the window that starts at w ends.
func (g *Guard) windowEnd(w int64) time.Time { return time.Unix(w, 0).Add(g.limit.Window) }

// countWrite is the Update that adds a creation to counter r of the
// caller's window w, within its share.
func (g *Guard) countWrite(caller string, w int64, r int) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(g.table),
		Key: map[string]types.AttributeValue{
			AttrID: ddbitem.S(WindowPrefix + strconv.FormatInt(w, 10) + "|" + caller + "|" + strconv.Itoa(r)),
		},
		UpdateExpression:         aws.String("ADD #creates :one SET #expires = :expires"),
		ConditionExpression:      aws.String("attribute_not_exists(#creates) OR #creates < :share"),
		ExpressionAttributeNames: map[string]string{"#creates": AttrCreates, "#expires": AttrExpiresAt},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": ddbitem.N(1), ":share": ddbitem.N(int64(g.limit.share(r))),
			":expires": ddbitem.N(g.windowEnd(w).Unix()),
		},
	}}
}

// usage is what this process knows of its callers' current windows:
// how many creations it counted on each counter, and which counters it
// found full. A creation picks, among the counters not known full, one
// this process counted least on, so that one environment fills them
// evenly and learns each is full by its own count, not by a refusal; a
// counter another environment filled it learns by a refusal. A window's
// counts only grow, so nothing here is ever wrong, only incomplete. At
// most max callers are kept; past that, the oldest windows go first (a
// caller forgotten is asked of DynamoDB again).
type usage struct {
	mu  sync.Mutex
	max int
	by  map[string]*callerUsage
}

// callerUsage is one caller's window w as this process knows it.
type callerUsage struct {
	w    int64
	used [WindowReplicas]int // creations this process counted, per counter
	full uint64              // counters known full, one bit each
}

func newUsage(max int) *usage { return &usage{max: max, by: map[string]*callerUsage{}} }

// of returns the caller's window w, new when what is held is of another
// window; called with u.mu held.
func (u *usage) of(caller string, w int64) *callerUsage {
	cu, ok := u.by[caller]
	switch {
	case !ok:
		if len(u.by) >= u.max {
			u.evict()
		}
		cu = &callerUsage{w: w}
		u.by[caller] = cu
	case cu.w != w:
		*cu = callerUsage{w: w}
	}
	return cu
}

// allFull reports whether every one of n counters of the caller's window
// w is known full.
func (u *usage) allFull(caller string, w int64, n int) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	cu, ok := u.by[caller]
	return ok && cu.w == w && bits.OnesCount64(cu.full) >= n
}

// pick is the counter of the caller's window w to count a creation on:
// among the n not known full, one counted least on here, at random
// among those; -1 when all are known full.
func (u *usage) pick(caller string, w int64, n int) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	cu := u.of(caller, w)
	best, ties := -1, 0
	for r := range n {
		switch {
		case cu.full&(1<<r) != 0:
		case best < 0 || cu.used[r] < cu.used[best]:
			best, ties = r, 1
		case cu.used[r] == cu.used[best]:
			if ties++; rand.IntN(ties) == 0 {
				best = r
			}
		}
	}
	return best
}

// counted records a creation counted on counter r of the caller's window
// w, whose share is share: at its share by this process's count alone,
// the counter is full.
func (u *usage) counted(caller string, w int64, r, share int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	cu := u.of(caller, w)
	if cu.used[r]++; cu.used[r] >= share {
		cu.full |= 1 << r
	}
}

// refused records counter r of the caller's window w as full, and
// reports whether all n are now.
func (u *usage) refused(caller string, w int64, r, n int) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	cu := u.of(caller, w)
	cu.full |= 1 << r
	return bits.OnesCount64(cu.full) >= n
}

// evict forgets the callers of the oldest window held; called with u.mu
// held.
func (u *usage) evict() {
	oldest := int64(math.MaxInt64)
	for _, cu := range u.by {
		oldest = min(oldest, cu.w)
	}
	for c, cu := range u.by {
		if cu.w == oldest {
			delete(u.by, c)
		}
	}
}
