package idem

import "time"

// CallOption sets one call of a way in (Execute, Transact, Run, Do,
// ExecuteBatch), overriding the store's options for that call alone. It is
// the seam of an adapter, pkg/idem/idemhttp's or one of your own: the
// settings of one request, passed with its call. A call's options never
// reach the calls its operation makes in turn.
type CallOption struct{ set func(*callSettings) }

// callSettings are a call's settings: the store's, with its CallOptions
// applied (Store.settings).
type callSettings struct {
	wait       time.Duration
	redelivers bool
	retention  time.Duration
}

// CallWait is WithWait for one call: how long it waits for a live holder
// of its key. 0 or less turns waiting off for it. It has no effect on
// ExecuteBatch.
func CallWait(d time.Duration) CallOption {
	return CallOption{func(c *callSettings) { c.wait = max(d, 0) }}
}

// CallRedelivers says that the call's source delivers it again when it is
// answered ErrInFlight (a queue message, an asynchronous event), so such
// an answer costs a redelivery: a claim that meets its key in another
// request's running transaction then waits about what a transaction
// takes and reads the record once, rather than answer ErrInFlight at
// once. It has no effect on ExecuteBatch.
func CallRedelivers() CallOption {
	return CallOption{func(c *callSettings) { c.redelivers = true }}
}

// CallRetention is WithRetention for one call: how long the record it
// completes replays (per operation, pass it on every call of the
// operation). Like WithRetention, it is at least the store's lease and
// margin (Store.ValidateCall), or the call fails before it starts.
func CallRetention(d time.Duration) CallOption {
	return CallOption{func(c *callSettings) { c.retention = d }}
}
