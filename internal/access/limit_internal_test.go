package access

import (
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The counters' shares add up to the limit, whatever it is, and no
// counter has none.
func TestSharesAddUpToTheLimit(t *testing.T) {
	t.Parallel()
	for _, creates := range []int{1, 2, 3, 15, 16, 17, 100, 1001, 1_000_000} {
		l := Limit{Creates: creates, Window: time.Second}
		sum := 0
		for r := range l.replicas() {
			assert.Positive(t, l.share(r), "limit %d, counter %d", creates, r)
			sum += l.share(r)
		}
		assert.Equal(t, creates, sum, "limit %d", creates)
		assert.LessOrEqual(t, l.replicas(), WindowReplicas)
	}
}

// One process fills a caller's counters evenly and knows, by its own
// count, when they are full: with nobody else creating for the caller,
// the limit's last creation is followed by a refusal that needs no
// DynamoDB call, and no creation before it is refused.
func TestOneProcessKnowsWhenTheWindowIsFull(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_005, 0)
	g, err := NewGuard(Config{Table: "callers", Limit: Limit{Creates: 37, Window: 10 * time.Second}, Now: func() time.Time { return now }})
	require.NoError(t, err)
	c, err := IAMCaller("arn:aws:iam::123456789012:role/R")
	require.NoError(t, err)
	seller := uuid.New()
	per := map[int]int{}
	for i := range 37 {
		require.NoError(t, g.Admit(c, seller), "creation %d", i)
		k := g.Check(c, seller)
		require.Len(t, k.Writes, 2, "the grant's check and the window's count")
		assert.Equal(t, 1, k.count)
		per[k.counter]++
		k.Committed()
	}
	for r := range WindowReplicas {
		assert.Equal(t, g.limit.share(r), per[r], "counter %d filled to its share", r)
	}
	err = g.Admit(c, seller)
	var le *LimitedError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, 5*time.Second, le.RetryAfter, "until the window [1_800_000_000, +10 s) ends")

	// Another caller is not limited, and neither is this one once the
	// window has passed.
	other, err := IAMCaller("arn:aws:iam::123456789012:role/Other")
	require.NoError(t, err)
	assert.NoError(t, g.Admit(other, seller))
	now = now.Add(5 * time.Second)
	assert.NoError(t, g.Admit(c, seller))
}

// A counter another process filled is learned by its refusal: a second's
// wait while others may have room, the window's end once none has.
func TestRefusalsTeachWhatOthersFilled(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_001, 0)
	g, err := NewGuard(Config{Table: "callers", Limit: Limit{Creates: 3, Window: 10 * time.Second}, Now: func() time.Time { return now }})
	require.NoError(t, err)
	c, err := FromRequestV2(jwtWith("u", "*"))
	require.NoError(t, err)
	seller := uuid.New()
	seen := map[int]bool{}
	for i := range 3 {
		k := g.Check(c, seller)
		require.Len(t, k.Writes, 1, "a token's caller has no grant to check")
		assert.False(t, seen[k.counter], "a counter refused is not picked again")
		seen[k.counter] = true
		var le *LimitedError
		require.ErrorAs(t, k.Refused(k.count), &le)
		if i < 2 {
			assert.Equal(t, time.Second, le.RetryAfter, "others may have room")
			assert.NoError(t, g.Admit(c, seller))
		} else {
			assert.Equal(t, 9*time.Second, le.RetryAfter, "none has: the window's end")
			assert.ErrorIs(t, g.Admit(c, seller), ErrLimited)
		}
	}
	assert.NoError(t, Check{}.Refused(0), "the zero Check refuses nothing")
}

// The memory is bounded: past Remember callers, the oldest windows go.
func TestUsageForgetsOldestWindows(t *testing.T) {
	t.Parallel()
	u := newUsage(2)
	u.refused("a", 10, 0, 1)
	u.refused("b", 20, 0, 1)
	u.refused("c", 20, 0, 1)
	assert.False(t, u.allFull("a", 10, 1), "the oldest window went")
	assert.True(t, u.allFull("b", 20, 1))
	assert.True(t, u.allFull("c", 20, 1))
	assert.False(t, u.allFull("b", 30, 1), "another window starts empty")
}

func jwtWith(sub, sellers string) events.APIGatewayV2HTTPRequestContext {
	return events.APIGatewayV2HTTPRequestContext{Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": sub, "seller_ids": sellers}},
	}}
}
