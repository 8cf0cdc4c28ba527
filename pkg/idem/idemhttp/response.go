package idemhttp

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem"
)

// connectionOnly reports whether a response header belongs to the
// connection it came on, not to the response: hop-by-hop headers (RFC
// 9110 section 7.6.1), those the Connection header names, and
// Content-Length, which the connection a replay goes out on computes for
// the body it sends. None is stored or replayed.
func connectionOnly(name string, named []string) bool {
	switch name = http.CanonicalHeaderKey(name); name {
	case "Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length":
		return true
	}
	return strings.HasPrefix(name, "Proxy-") || slices.Contains(named, name)
}

// connectionNamed returns the header names a Connection header lists.
func connectionNamed(connection string) []string {
	var named []string
	for tok := range strings.SplitSeq(connection, ",") {
		if tok = strings.TrimSpace(tok); tok != "" {
			named = append(named, http.CanonicalHeaderKey(tok))
		}
	}
	return named
}

// describesBody reports whether a header describes the body it came with:
// a replay of a response stored without its body (HeaderBodyOmitted)
// leaves it out, or it would describe a body that is not there.
func describesBody(name string) bool {
	switch http.CanonicalHeaderKey(name) {
	case "Content-Type", "Content-Encoding", "Content-Language", "Content-Length", "Content-Location",
		"Content-Range", "Content-Md5", "Content-Digest", "Content-Disposition", "Repr-Digest", "Digest",
		"Etag", "Last-Modified", "Accept-Ranges":
		return true
	}
	return false
}

// replayHeader reports whether a stored header goes out with the response.
// Records stored before hop-by-hop headers were left out may hold some.
func replayHeader(r response, name string, named []string) bool {
	if connectionOnly(name, named) {
		return false
	}
	_, omitted := r.headers[HeaderBodyOmitted]
	return !omitted || !describesBody(name)
}

// storedConnection returns the names a response's Connection header
// lists, looked up by any case.
func storedConnection(h map[string]string) []string {
	for k, v := range h {
		if strings.EqualFold(k, "Connection") {
			return connectionNamed(v)
		}
	}
	return nil
}

// headerSetCookie is stored with its values joined by newlines, which no
// header value can contain: cookies cannot be joined with commas.
const headerSetCookie = "Set-Cookie"

// response is an HTTP response as this package stores and replays it.
type response struct {
	status  int
	headers map[string]string
	body    []byte
}

// stored is r as pkg/idem stores it: the status, each header as a
// metadata entry of its own name, the body. A name that begins with ':'
// is no HTTP field name (net/http never sends one) and the store keeps
// such names for itself: it is left out, like a hop-by-hop header. A
// status that is not an HTTP status, or a header name or value that is
// not UTF-8, cannot be stored: the result then holds the status (500 for
// a status that is the problem) and Omitted ("not storable"), which a
// replay sends as HeaderBodyOmitted, so the handler still runs once.
func (r response) stored() idem.Response {
	meta := make(map[string]string, len(r.headers))
	for k, v := range r.headers {
		switch {
		case strings.HasPrefix(k, ":"):
			continue
		case k == "" || !utf8.ValidString(k) || !utf8.ValidString(v):
			return standIn(r.status)
		}
		meta[k] = v
	}
	if r.status < 100 || r.status > 599 {
		return standIn(http.StatusInternalServerError)
	}
	return idem.Response{Status: r.status, Meta: meta, Body: r.body}
}

// standIn is what is stored for a response that cannot be: its status,
// and why its headers and body are not there.
func standIn(status int) idem.Response {
	if status < 100 || status > 599 {
		status = http.StatusInternalServerError
	}
	return idem.Response{Status: status, Omitted: "not storable"}
}

// replayOf is a stored result as an HTTP response: the status (200 for a
// result that has none, which no HTTP way in stored), the headers (the
// store's mark of an omitted body as HeaderBodyOmitted), the body. A
// record stored before format 2 reads the same way, so it replays byte
// for byte.
func replayOf(r idem.Response) response {
	out := response{status: r.Status, headers: make(map[string]string, len(r.Meta)+1), body: r.Body}
	for k, v := range r.Meta {
		if !strings.HasPrefix(k, ":") {
			out.headers[k] = v
		}
	}
	if r.Omitted != "" {
		out.headers[HeaderBodyOmitted] = r.Omitted
	}
	if out.status == 0 {
		out.status = http.StatusOK
	}
	return out
}

// FromAPIGatewayV2 turns a handler's API Gateway v2 response into a
// storable one: a base64 body decoded to its bytes, multi-value headers
// joined with ", ", and cookies (from Cookies and any Set-Cookie header)
// kept as Set-Cookie lines.
func FromAPIGatewayV2(r events.APIGatewayV2HTTPResponse) (idem.Response, error) {
	resp, err := fromAPIGatewayV2(r)
	if err != nil {
		return idem.Response{}, err
	}
	return resp.stored(), nil
}

func fromAPIGatewayV2(r events.APIGatewayV2HTTPResponse) (response, error) {
	return fromEvent(r.StatusCode, r.Headers, r.MultiValueHeaders, r.Cookies, r.Body, r.IsBase64Encoded)
}

// fromEvent reads a Lambda event's response (API Gateway's, a load
// balancer's): a base64 body decoded to its bytes, multi-value headers
// joined with ", ", and cookies (from cookies and any Set-Cookie header)
// kept as Set-Cookie lines.
func fromEvent(status int, single map[string]string, multi map[string][]string, cookies []string, raw string, isBase64 bool) (response, error) {
	body := []byte(raw)
	if isBase64 {
		b, err := base64.StdEncoding.DecodeString(raw)
		if err != nil {
			return response{}, fmt.Errorf("idemhttp: response body marked base64 does not decode: %w", err)
		}
		body = b
	}
	if status == 0 {
		status = http.StatusOK // what API Gateway sends for a response without one
	}
	h := make(map[string]string, len(single)+len(multi)+1)
	named := storedConnection(single)
	for k, vs := range multi {
		if strings.EqualFold(k, "Connection") {
			named = append(named, connectionNamed(strings.Join(vs, ","))...)
		}
	}
	var setCookies []string
	for k, v := range single {
		switch {
		case strings.EqualFold(k, headerSetCookie):
			setCookies = append(setCookies, v)
		case !strings.EqualFold(k, HeaderReplayed) && !connectionOnly(k, named):
			h[k] = v
		}
	}
	for k, vs := range multi {
		switch {
		case len(vs) == 0 || strings.EqualFold(k, HeaderReplayed) || connectionOnly(k, named):
		case strings.EqualFold(k, headerSetCookie):
			setCookies = append(setCookies, vs...)
		default:
			h[k] = strings.Join(vs, ", ")
		}
	}
	setCookies = append(setCookies, cookies...)
	if len(setCookies) > 0 {
		h[headerSetCookie] = strings.Join(setCookies, "\n")
	}
	return response{status: status, headers: h, body: body}, nil
}

// ToAPIGatewayV2 renders a stored response for API Gateway; replayed adds
// Idempotent-Replayed: true. A body that is not UTF-8 goes out base64
// encoded, so the client receives the same bytes.
func ToAPIGatewayV2(r idem.Response, replayed bool) events.APIGatewayV2HTTPResponse {
	return toAPIGatewayV2(replayOf(r), replayed)
}

func toAPIGatewayV2(r response, replayed bool) events.APIGatewayV2HTTPResponse {
	out := rendered(r, replayed)
	return events.APIGatewayV2HTTPResponse{StatusCode: r.status, Headers: out.headers, Cookies: out.cookies, Body: out.body, IsBase64Encoded: out.base64}
}

// eventResponse is a response as a Lambda event's answer carries it: the
// headers a replay sends (Idempotent-Replayed: true on a replay), the
// cookies apart, and the body as a string, base64 when it is not UTF-8
// so the client receives the same bytes.
type eventResponse struct {
	headers map[string]string
	cookies []string
	body    string
	base64  bool
}

func rendered(r response, replayed bool) eventResponse {
	out := eventResponse{headers: make(map[string]string, len(r.headers)+1), body: string(r.body)}
	named := storedConnection(r.headers)
	for k, v := range r.headers {
		switch {
		case strings.EqualFold(k, headerSetCookie):
			out.cookies = strings.Split(v, "\n")
		case replayHeader(r, k, named):
			out.headers[k] = v
		}
	}
	if replayed {
		out.headers[HeaderReplayed] = "true"
	}
	if !utf8.Valid(r.body) {
		out.body = base64.StdEncoding.EncodeToString(r.body)
		out.base64 = true
	}
	return out
}

// fromHeader flattens a net/http header for storage: values joined with
// ", ", cookies with newlines (no header value holds one; commas can).
func fromHeader(hdr http.Header) map[string]string {
	h := make(map[string]string, len(hdr))
	named := connectionNamed(strings.Join(hdr.Values("Connection"), ","))
	var cookies []string
	for k, vs := range hdr {
		switch k = http.CanonicalHeaderKey(k); {
		case k == HeaderReplayed || connectionOnly(k, named):
		case k == headerSetCookie:
			cookies = append(cookies, vs...)
		default:
			h[k] = strings.Join(vs, ", ")
		}
	}
	if len(cookies) > 0 {
		h[headerSetCookie] = strings.Join(cookies, "\n")
	}
	return h
}

// write sends a stored response on a net/http response, headers in a
// stable order.
func write(w http.ResponseWriter, r response, replayed bool) {
	named := storedConnection(r.headers)
	for _, k := range slices.Sorted(maps.Keys(r.headers)) {
		v := r.headers[k]
		if !replayHeader(r, k, named) {
			continue
		}
		if http.CanonicalHeaderKey(k) == headerSetCookie {
			for _, c := range strings.Split(v, "\n") {
				w.Header().Add(headerSetCookie, c)
			}
			continue
		}
		w.Header().Set(k, v)
	}
	if replayed {
		w.Header().Set(HeaderReplayed, "true")
	}
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body)
}

// recorder buffers what a net/http handler writes, so the response can be
// stored before it is sent.
type recorder struct {
	header http.Header
	status int
	body   []byte
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

func (r *recorder) Header() http.Header { return r.header }

// WriteHeader keeps the first final status; informational ones (103
// Early Hints) are not the response.
func (r *recorder) WriteHeader(status int) {
	if r.status == 0 && (status >= 200 || status == http.StatusSwitchingProtocols) {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	r.body = append(r.body, b...)
	return len(b), nil
}

func (r *recorder) response() response {
	status := r.status
	if status == 0 {
		status = http.StatusOK
	}
	return response{status: status, headers: fromHeader(r.header), body: r.body}
}
