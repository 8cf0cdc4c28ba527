package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/pkg/idem"
)

// MaxBodyBytes is the largest create request body accepted (16 KiB).
const MaxBodyBytes = 16 << 10

// HeaderIdempotencyKey carries the client's key (IETF
// draft-ietf-httpapi-idempotency-key-header: a structured-field string).
const HeaderIdempotencyKey = "Idempotency-Key"

// header returns a request header by case-insensitive name. API Gateway
// sends lower-case names; other sources may not.
func header(h map[string]string, name string) (string, bool) {
	if v, ok := h[strings.ToLower(name)]; ok {
		return v, true
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// checkJSONContentType accepts application/json with optional parameters
// (charset=utf-8); anything else is 415.
func checkJSONContentType(h map[string]string) *Problem {
	ct, ok := header(h, "Content-Type")
	if !ok || strings.TrimSpace(ct) == "" {
		p := probMediaType.with("Content-Type must be application/json")
		return &p
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		p := probMediaType.with(fmt.Sprintf("Content-Type must be application/json, got %.64q", ct))
		return &p
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		p := probMediaType.with(fmt.Sprintf("charset must be utf-8, got %.32q", cs))
		return &p
	}
	return nil
}

// readBody returns the request body bytes, decoding base64 where API
// Gateway encoded it, within MaxBodyBytes.
func readBody(req events.APIGatewayV2HTTPRequest) ([]byte, *Problem) {
	tooLarge := func(n int) *Problem {
		p := probTooLarge.with(fmt.Sprintf("body is %d bytes or more; the limit is %d", n, MaxBodyBytes))
		return &p
	}
	if !req.IsBase64Encoded {
		if len(req.Body) > MaxBodyBytes {
			return nil, tooLarge(len(req.Body))
		}
		return []byte(req.Body), nil
	}
	if base64.StdEncoding.DecodedLen(len(req.Body)) > MaxBodyBytes+2 {
		return nil, tooLarge(base64.StdEncoding.DecodedLen(len(req.Body)))
	}
	b, err := base64.StdEncoding.DecodeString(req.Body)
	if err != nil {
		p := probBadRequest.with("body is marked base64 but does not decode")
		return nil, &p
	}
	if len(b) > MaxBodyBytes {
		return nil, tooLarge(len(b))
	}
	return b, nil
}

// ParseIdempotencyKey reads an Idempotency-Key header value: a
// structured-field string ("abc", with \" and \\ escapes, parameters
// ignored) or, leniently, a bare token. The result must pass
// idem.ValidateKey.
func ParseIdempotencyKey(v string) (string, error) {
	v = strings.Trim(v, " \t")
	if v == "" {
		return "", fmt.Errorf("%w: empty header", idem.ErrInvalidKey)
	}
	if v[0] != '"' {
		if strings.ContainsAny(v, `",;`) {
			return "", fmt.Errorf("%w: a bare key must not contain '\"', ',' or ';'; send a quoted string", idem.ErrInvalidKey)
		}
		return v, idem.ValidateKey(v)
	}
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\':
			i++
			if i == len(v) || (v[i] != '"' && v[i] != '\\') {
				return "", fmt.Errorf("%w: only \\\" and \\\\ may be escaped", idem.ErrInvalidKey)
			}
			b.WriteByte(v[i])
		case c == '"':
			if err := checkParams(v[i+1:]); err != nil {
				return "", err
			}
			key := b.String()
			return key, idem.ValidateKey(key)
		case c < 0x20 || c > 0x7e:
			return "", fmt.Errorf("%w: character %d is not printable ASCII", idem.ErrInvalidKey, i)
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("%w: unterminated quoted string", idem.ErrInvalidKey)
}

// checkParams accepts what may follow an sf-string item: nothing, or
// parameters (";name" or ";name=value", RFC 8941 section 3.1.2), which
// carry nothing this API uses and are ignored.
func checkParams(rest string) error {
	for rest != "" {
		if rest[0] != ';' {
			return fmt.Errorf("%w: unexpected %.16q after the quoted key", idem.ErrInvalidKey, rest)
		}
		rest = strings.TrimLeft(rest[1:], " ")
		end := strings.IndexByte(rest, ';')
		if end < 0 {
			end = len(rest)
		}
		name, _, _ := strings.Cut(rest[:end], "=")
		if !paramName.MatchString(name) {
			return fmt.Errorf("%w: malformed parameter %.16q", idem.ErrInvalidKey, rest[:end])
		}
		for _, c := range []byte(rest[:end]) {
			if c < 0x20 || c > 0x7e {
				return fmt.Errorf("%w: parameter is not printable ASCII", idem.ErrInvalidKey)
			}
		}
		rest = rest[end:]
	}
	return nil
}

var paramName = regexp.MustCompile(`^[a-z*][a-z0-9_.*-]*$`)

// createBody is a decoded create request body.
type createBody struct {
	key   string // idempotency_key, "" when absent
	input product.CreateInput
}

var integerLiteral = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// decodeCreate decodes the body strictly: one JSON object, known fields
// once each, the right JSON type for each. Every problem is reported, and
// product rules are checked for the fields that decoded.
func decodeCreate(body []byte) (createBody, *Problem) {
	if !utf8.Valid(body) {
		// encoding/json would quietly turn bad bytes into U+FFFD.
		p := probBadRequest.with("body is not valid UTF-8")
		return createBody{}, &p
	}
	fields, perr := objectFields(body)
	if perr != nil {
		return createBody{}, perr
	}
	var out createBody
	var errs []product.FieldError
	bad := map[string]bool{}
	fail := func(field, msg string) {
		errs = append(errs, product.FieldError{Field: field, Message: msg})
		bad[field] = true
	}
	str := func(field string, dst *string, required bool) {
		raw, ok := fields[field]
		switch {
		case !ok && required:
			fail(field, "is required")
		case !ok:
		case raw[0] != '"':
			fail(field, "must be a JSON string")
		default:
			if err := json.Unmarshal(raw, dst); err != nil {
				fail(field, "must be a valid JSON string")
			}
		}
	}
	str("name", &out.input.Name, true)
	str("currency", &out.input.Currency, true)
	str("seller_id", &out.input.SellerID, true)
	str("idempotency_key", &out.key, false)
	if raw, ok := fields["price_cents"]; !ok {
		fail("price_cents", "is required")
	} else {
		out.input.PriceCents = priceCents(raw, fail)
	}
	for name := range fields {
		switch name {
		case "name", "currency", "seller_id", "idempotency_key", "price_cents":
		default:
			if len(name) > 64 {
				name = name[:64] + "..."
			}
			fail(name, "is not a known field")
		}
	}
	if _, err := product.NewCreateCommand(out.input); err != nil {
		var verr *product.ValidationError
		if errors.As(err, &verr) {
			for _, fe := range verr.Errors {
				if !bad[fe.Field] {
					errs = append(errs, fe)
				}
			}
		}
	}
	if _, ok := fields["idempotency_key"]; ok && !bad["idempotency_key"] {
		if err := idem.ValidateKey(out.key); err != nil {
			errs = append(errs, product.FieldError{Field: "idempotency_key", Message: "must be 1 to 255 printable ASCII characters (0x21-0x7E)"})
		}
	}
	if len(errs) > 0 {
		sortFieldErrors(errs)
		p := probValidation.with("the request body breaks the rules listed in errors")
		p.Errors = errs
		return createBody{}, &p
	}
	return out, nil
}

// priceCents reads price_cents: an integer literal that fits int64. Floats
// (999.0, 1e3), strings and null are refused rather than coerced.
func priceCents(raw json.RawMessage, fail func(field, msg string)) int64 {
	s := string(raw)
	switch {
	case s == "null":
		fail("price_cents", "must be an integer, not null")
	case s[0] == '"':
		fail("price_cents", "must be a JSON integer, not a string")
	case !integerLiteral.MatchString(s):
		fail("price_cents", "must be an integer (no fraction or exponent)")
	default:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			fail("price_cents", "is out of range")
			return 0
		}
		return n
	}
	return 0
}

// objectFields splits a JSON object into its members, refusing duplicates
// (which encoding/json would silently resolve to the last) and trailing data.
func objectFields(body []byte) (map[string]json.RawMessage, *Problem) {
	badJSON := func(detail string) (map[string]json.RawMessage, *Problem) {
		p := probBadRequest.with(detail)
		return nil, &p
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return badJSON("body is not valid JSON")
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return badJSON("body must be a JSON object")
	}
	fields := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return badJSON("body is not valid JSON")
		}
		name, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return badJSON("body is not valid JSON")
		}
		if _, dup := fields[name]; dup {
			return badJSON(fmt.Sprintf("field %.40q appears more than once", name))
		}
		fields[name] = raw
	}
	if _, err := dec.Token(); err != nil {
		return badJSON("body is not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return badJSON("body has data after the JSON object")
	}
	return fields, nil
}

// sortFieldErrors orders errors by field for stable responses, keeping
// the order of messages within a field.
func sortFieldErrors(errs []product.FieldError) {
	slices.SortStableFunc(errs, func(a, b product.FieldError) int { return strings.Compare(a.Field, b.Field) })
}
