// Package embedded serves the in-process DynamoDB-compatible store
// (github.com/truora/minidyn/server) the way DynamoDB answers, so clients
// built for AWS, the Lambda bootstraps included, talk to it unchanged.
package embedded

import (
	"bytes"
	"hash/crc32"
	"net/http"
	"strconv"

	"github.com/truora/minidyn/server"
)

// Store is the embedded store and its HTTP handler.
type Store struct {
	// Server is minidyn's server, for failure injection in tests.
	Server  *server.Server
	handler http.Handler
}

// New returns an empty store.
func New() *Store {
	s := server.NewServer()
	return &Store{Server: s, handler: withCRC32(s)}
}

// ServeHTTP answers DynamoDB JSON API requests.
func (s *Store) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// withCRC32 adds the X-Amz-Crc32 header DynamoDB sends with every
// response. The SDK checks it and, when it is missing, logs a warning on
// every call; minidyn does not send it.
func withCRC32(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{header: http.Header{}, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		for k, vs := range rec.header {
			w.Header()[k] = vs
		}
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(rec.body.Bytes())), 10))
		w.Header().Set("Content-Length", strconv.Itoa(rec.body.Len()))
		w.WriteHeader(rec.status)
		_, _ = w.Write(rec.body.Bytes())
	})
}

// recorder buffers a response so its checksum can lead it.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	wrote  bool
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.wrote = true
	return r.body.Write(p)
}
