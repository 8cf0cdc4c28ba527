package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// JSONLinesPublisher writes each event as one line of CloudEvent JSON to a
// writer: the local runner's stand-in for EventBridge. It is safe for
// concurrent use; each line goes out in a single Write, so lines never
// interleave.
type JSONLinesPublisher struct {
	mu sync.Mutex
	w  io.Writer
}

// NewJSONLinesPublisher returns a publisher writing to w (os.Stdout in the
// local runner).
func NewJSONLinesPublisher(w io.Writer) *JSONLinesPublisher {
	return &JSONLinesPublisher{w: w}
}

// Publish implements Publisher. An invalid event is rejected; a failed
// write stops it with ErrCallFailed at that event.
func (p *JSONLinesPublisher) Publish(ctx context.Context, events []Event) (Result, error) {
	var res Result
	p.mu.Lock()
	defer p.mu.Unlock()
	var line []byte
	for i, e := range events {
		if err := ctx.Err(); err != nil {
			return res, &PublishError{Index: i, Err: fmt.Errorf("%w: %w", ErrCallFailed, err)}
		}
		if err := e.Validate(); err != nil {
			res.Rejected = append(res.Rejected, Rejection{Index: i, Err: err})
			continue
		}
		b, err := json.Marshal(e)
		if err != nil {
			res.Rejected = append(res.Rejected, Rejection{Index: i, Err: fmt.Errorf("%w: %w", ErrInvalidEvent, err)})
			continue
		}
		line = append(append(line[:0], b...), '\n')
		if _, err := p.w.Write(line); err != nil {
			return res, &PublishError{Index: i, Err: fmt.Errorf("%w: %w", ErrCallFailed, err)}
		}
		res.Published++
	}
	return res, nil
}
