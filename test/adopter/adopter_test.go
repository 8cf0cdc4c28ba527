package adopter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtest"
	"github.com/idemlambda/idemlambda/pkg/money"
)

// server is an adopter's net/http service: POST /charges charges a
// Money amount once per Idempotency-Key, its store on the strict test
// store. gate, when set, holds the charge until it is closed; entered is
// closed when the first charge reaches it.
type server struct {
	url     string
	charges atomic.Int64
	gate    chan struct{}
	entered chan struct{}
	once    sync.Once
}

func newServer(t *testing.T) *server {
	t.Helper()
	db := idemtest.New(t, idemtest.WithTransactionLatency(time.Millisecond)).Client()
	if err := idemtable.Create(context.Background(), db, "idempotency", idemtable.Layout{}); err != nil {
		t.Fatal(err)
	}
	store, err := idem.NewStore(db, "idempotency")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{}
	mw, err := idemhttp.New(store,
		idemhttp.WithPrincipal(func(r *http.Request) (string, error) { return "user:" + r.Header.Get("X-User"), nil }),
	)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /charges", mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Cents    int64  `json:"cents"`
			Currency string `json:"currency"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		amount, err := money.New(in.Cents, money.Currency(in.Currency))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if s.gate != nil {
			s.once.Do(func() { close(s.entered) })
			<-s.gate
		}
		n := s.charges.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"charge":"ch_%d","amount":%q}`, n, amount.String())
	})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

type reply struct {
	status     int
	body       string
	replayed   string
	retryAfter string
}

func (s *server) post(t *testing.T, key, body string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url+"/charges", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return reply{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("X-User", "ada")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return reply{}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Error(err)
	}
	return reply{resp.StatusCode, string(b), resp.Header.Get("Idempotent-Replayed"), resp.Header.Get("Retry-After")}
}

const charge = `{"cents":500,"currency":"EUR"}`

// 32 concurrent duplicates: one charge; every caller gets the charge's
// 201 byte for byte or 409 with Retry-After; a retry afterwards replays.
func TestThirtyTwoConcurrentDuplicatesChargeOnce(t *testing.T) {
	s := newServer(t)
	const callers = 32
	replies := make(chan reply, callers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range callers {
		wg.Go(func() {
			<-start
			replies <- s.post(t, `"charge-1"`, charge)
		})
	}
	close(start)
	wg.Wait()
	close(replies)
	counts := map[int]int{}
	var created []string
	for r := range replies {
		counts[r.status]++
		switch r.status {
		case http.StatusCreated:
			created = append(created, r.body)
		case http.StatusConflict:
			if r.retryAfter == "" {
				t.Errorf("409 without Retry-After: %s", r.body)
			}
		}
	}
	t.Logf("32 duplicates: %v", counts)
	if got := s.charges.Load(); got != 1 {
		t.Fatalf("charges = %d, want 1", got)
	}
	if counts[http.StatusCreated]+counts[http.StatusConflict] != callers {
		t.Errorf("statuses %v: want only 201 and 409", counts)
	}
	for _, b := range created {
		if b != created[0] {
			t.Errorf("201 bodies differ: %q and %q", b, created[0])
		}
	}
	again := s.post(t, `"charge-1"`, charge)
	if again.status != http.StatusCreated || again.replayed != "true" || again.body != created[0] {
		t.Errorf("retry: %+v, want the stored 201 %q replayed", again, created[0])
	}
}

// The same key with another payload is refused with 422 and charges
// nothing; the same payload spaced differently is a retry.
func TestKeyReuseIs422(t *testing.T) {
	s := newServer(t)
	first := s.post(t, `"charge-2"`, charge)
	spaced := s.post(t, `"charge-2"`, `{ "currency": "EUR", "cents": 500 }`)
	other := s.post(t, `"charge-2"`, `{"cents":900,"currency":"EUR"}`)
	if first.status != http.StatusCreated || spaced.body != first.body || spaced.replayed != "true" {
		t.Errorf("first %+v, spaced retry %+v: want one 201 replayed byte for byte", first, spaced)
	}
	if other.status != http.StatusUnprocessableEntity || !strings.Contains(other.body, `"status":422`) {
		t.Errorf("another payload: %+v, want a 422 problem", other)
	}
	if got := s.charges.Load(); got != 1 {
		t.Errorf("charges = %d, want 1", got)
	}
}

// A duplicate while the first request still runs gets 409 with
// Retry-After; once the first completes, its answer replays.
func TestInFlightIs409WithRetryAfter(t *testing.T) {
	s := newServer(t)
	s.gate, s.entered = make(chan struct{}), make(chan struct{})
	first := make(chan reply, 1)
	go func() { first <- s.post(t, `"charge-3"`, charge) }()
	select {
	case <-s.entered: // the first request holds the key and is charging
	case <-time.After(time.Minute):
		t.Fatal("the first request never reached the handler")
	}
	dup := s.post(t, `"charge-3"`, charge)
	close(s.gate)
	won := <-first
	if dup.status != http.StatusConflict || dup.retryAfter == "" {
		t.Errorf("duplicate in flight: %+v, want 409 with Retry-After", dup)
	}
	after := s.post(t, `"charge-3"`, charge)
	if won.status != http.StatusCreated || after.body != won.body || after.replayed != "true" {
		t.Errorf("first %+v, later retry %+v: want the first's 201 replayed", won, after)
	}
	if got := s.charges.Load(); got != 1 {
		t.Errorf("charges = %d, want 1", got)
	}
}
