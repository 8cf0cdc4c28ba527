package api

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/idemlambda/idemlambda/internal/problem"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/internal/product"
	"github.com/idemlambda/idemlambda/internal/strictjson"
	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

// MaxBodyBytes is the largest create request body accepted (16 KiB).
const MaxBodyBytes = 16 << 10

// checkJSONContentType accepts application/json with optional parameters
// (charset=utf-8); anything else is 415.
func checkJSONContentType(h map[string]string) *problem.Problem {
	ct, ok := idemhttp.HeaderV2(h, "Content-Type")
	if !ok || strings.TrimSpace(ct) == "" {
		p := probMediaType.WithDetail("Content-Type must be application/json")
		return &p
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		p := probMediaType.WithDetail(fmt.Sprintf("Content-Type must be application/json, got %.64q", ct))
		return &p
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		p := probMediaType.WithDetail(fmt.Sprintf("charset must be utf-8, got %.32q", cs))
		return &p
	}
	return nil
}

// readBody returns the request body bytes, decoding base64 where API
// Gateway encoded it, within MaxBodyBytes.
func readBody(req events.APIGatewayV2HTTPRequest) ([]byte, *problem.Problem) {
	tooLarge := func(n int) *problem.Problem {
		p := probTooLarge.WithDetail(fmt.Sprintf("body is %d bytes or more; the limit is %d", n, MaxBodyBytes))
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
		p := probBadRequest.WithDetail("body is marked base64 but does not decode")
		return nil, &p
	}
	if len(b) > MaxBodyBytes {
		return nil, tooLarge(len(b))
	}
	return b, nil
}

// createBody is a decoded create request body.
type createBody struct {
	key string // idempotency_key, "" when absent
	cmd product.CreateCommand
}

// isIntegerLiteral reports whether s is -?(0|[1-9][0-9]*): a JSON number
// with neither fraction nor exponent. A function, not a package-level
// regexp, whose compilation every cold start would pay.
func isIntegerLiteral(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// decodeCreate decodes the body strictly: one JSON object, known fields
// once each, the right JSON type for each. Every problem is reported, and
// product rules are checked for the fields that decoded; what passes comes
// back as the validated command.
func decodeCreate(body []byte) (createBody, *problem.Problem) {
	if !utf8.Valid(body) {
		// encoding/json would quietly turn bad bytes into U+FFFD.
		p := probBadRequest.WithDetail("body is not valid UTF-8")
		return createBody{}, &p
	}
	fields, perr := objectFields(body)
	if perr != nil {
		return createBody{}, perr
	}
	var out createBody
	var in product.CreateInput
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
	str("name", &in.Name, true)
	str("currency", &in.Currency, true)
	str("seller_id", &in.SellerID, true)
	str("idempotency_key", &out.key, false)
	if raw, ok := fields["price_cents"]; !ok {
		fail("price_cents", "is required")
	} else {
		in.PriceCents = priceCents(raw, fail)
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
	cmd, err := product.NewCreateCommand(in)
	if err != nil {
		var verr *product.ValidationError
		if !errors.As(err, &verr) {
			errs = append(errs, product.FieldError{Field: "", Message: err.Error()})
		} else {
			for _, fe := range verr.Errors {
				if !bad[fe.Field] {
					errs = append(errs, fe)
				}
			}
		}
	}
	out.cmd = cmd
	if _, ok := fields["idempotency_key"]; ok && !bad["idempotency_key"] {
		if _, err := idem.NewScope(OperationCreateProduct, "-", out.key); err != nil {
			errs = append(errs, product.FieldError{Field: "idempotency_key", Message: "must be 1 to 255 printable ASCII characters (0x21-0x7E)"})
		}
	}
	if len(errs) > 0 {
		sortFieldErrors(errs)
		p := validation(errs)
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
	case !isIntegerLiteral(s):
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

// objectFields splits the body into its members (internal/strictjson),
// answering what makes it no single JSON object with a 400.
func objectFields(body []byte) (map[string]json.RawMessage, *problem.Problem) {
	fields, err := strictjson.Object(body)
	if err == nil {
		return fields, nil
	}
	detail := "body is not valid JSON"
	var dup *strictjson.DuplicateError
	switch {
	case errors.As(err, &dup):
		detail = fmt.Sprintf("field %.40q appears more than once", dup.Name)
	case errors.Is(err, strictjson.ErrNotObject):
		detail = "body must be a JSON object"
	case errors.Is(err, strictjson.ErrTrailing):
		detail = "body has data after the JSON object"
	}
	p := probBadRequest.WithDetail(detail)
	return nil, &p
}

// sortFieldErrors orders errors by field for stable responses, keeping
// the order of messages within a field.
func sortFieldErrors(errs []product.FieldError) {
	slices.SortStableFunc(errs, func(a, b product.FieldError) int { return strings.Compare(a.Field, b.Field) })
}
