package local

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/outbox"
)

type scripted struct {
	res outbox.Result
	err error
	got [][]string
}

func (s *scripted) Publish(_ context.Context, evs []outbox.Event) (outbox.Result, error) {
	var ids []string
	for _, e := range evs {
		ids = append(ids, e.Subject)
	}
	s.got = append(s.got, ids)
	return s.res, s.err
}

// The consumer's queue gets what the bus accepted, as the rule would
// deliver it: not what it refused, nor anything from the first failure on.
func TestTeeForwardsOnlyWhatTheBusAccepted(t *testing.T) {
	t.Parallel()
	var evs []outbox.Event
	for i := range 5 {
		e, err := outbox.NewEvent("s", "ProductCreated", fmt.Sprintf("p%d", i), []byte(`{}`), time.Now())
		require.NoError(t, err)
		evs = append(evs, e)
	}
	for name, c := range map[string]struct {
		res  outbox.Result
		err  error
		want [][]string
	}{
		"all accepted": {outbox.Result{Published: 5}, nil, [][]string{{"p0", "p1", "p2", "p3", "p4"}}},
		"one refused, a failure at 3": {outbox.Result{Published: 2, Rejected: []outbox.Rejection{{Index: 1, Err: outbox.ErrTooLarge}}},
			&outbox.PublishError{Index: 3, Err: outbox.ErrCallFailed}, [][]string{{"p0", "p2"}}},
		"the call failed":      {outbox.Result{}, errors.New("no route to host"), nil},
		"failed at the first":  {outbox.Result{}, &outbox.PublishError{Index: 0, Err: outbox.ErrCallFailed}, nil},
		"index past the batch": {outbox.Result{Published: 5}, &outbox.PublishError{Index: 9, Err: outbox.ErrCallFailed}, [][]string{{"p0", "p1", "p2", "p3", "p4"}}},
		"everything refused":   {outbox.Result{Rejected: []outbox.Rejection{{Index: 0}, {Index: 1}, {Index: 2}, {Index: 3}, {Index: 4}}}, nil, nil},
	} {
		first, also := &scripted{res: c.res, err: c.err}, &scripted{}
		res, err := tee{first, also}.Publish(context.Background(), evs)
		assert.Equal(t, c.res, res, name)
		assert.Equal(t, c.err, err, name)
		assert.Equal(t, c.want, also.got, name)
	}
}
