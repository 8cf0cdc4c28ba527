package outbox_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/internal/outbox"
	"github.com/idemlambda/idemlambda/internal/testkit/logbuf"
)

func TestJSONLinesWritesOneCloudEventPerLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	events := newEvents(t, 3)
	res, err := outbox.NewJSONLinesPublisher(&buf).Publish(t.Context(), events)
	require.NoError(t, err)
	assert.Equal(t, outbox.Result{Published: 3}, res)

	sc := bufio.NewScanner(&buf)
	var i int
	for ; sc.Scan(); i++ {
		var got outbox.Event
		require.NoError(t, json.Unmarshal(sc.Bytes(), &got))
		assert.Equal(t, events[i].ID, got.ID)
		assert.Equal(t, "1.0", got.SpecVersion)
		assert.JSONEq(t, string(events[i].Data), string(got.Data))
	}
	assert.Equal(t, 3, i)
}

func TestJSONLinesRejectsInvalidEvents(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	events := newEvents(t, 3)
	events[1].Type = ""
	res, err := outbox.NewJSONLinesPublisher(&buf).Publish(t.Context(), events)
	require.NoError(t, err)
	assert.Equal(t, 2, res.Published)
	require.Len(t, res.Rejected, 1)
	assert.Equal(t, 1, res.Rejected[0].Index)
	assert.ErrorIs(t, res.Rejected[0].Err, outbox.ErrInvalidEvent)
	assert.Equal(t, 2, bytes.Count(buf.Bytes(), []byte("\n")))
}

type failingWriter struct{ after int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.after == 0 {
		return 0, errors.New("disk full")
	}
	w.after--
	return len(p), nil
}

func TestJSONLinesStopsAtAFailedWrite(t *testing.T) {
	t.Parallel()
	res, err := outbox.NewJSONLinesPublisher(&failingWriter{after: 2}).Publish(t.Context(), newEvents(t, 5))
	pe, ok := errors.AsType[*outbox.PublishError](err)
	require.True(t, ok)
	assert.Equal(t, 2, pe.Index)
	assert.ErrorIs(t, err, outbox.ErrCallFailed)
	assert.Equal(t, 2, res.Published)
}

func TestJSONLinesStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := outbox.NewJSONLinesPublisher(&bytes.Buffer{}).Publish(ctx, newEvents(t, 2))
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, outbox.ErrCallFailed)
}

func TestJSONLinesNeverInterleavesLines(t *testing.T) {
	t.Parallel()
	var buf logbuf.Buffer
	p := outbox.NewJSONLinesPublisher(&buf)
	events := newEvents(t, 20)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			_, err := p.Publish(t.Context(), events)
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	sc := bufio.NewScanner(bytes.NewBufferString(buf.String()))
	lines := 0
	for sc.Scan() {
		assert.True(t, json.Valid(sc.Bytes()), "line %d", lines)
		lines++
	}
	assert.Equal(t, 8*20, lines)
}
