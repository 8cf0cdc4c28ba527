package idemhttp

import (
	"fmt"
	"strings"

	"github.com/idemlambda/idemlambda/pkg/idem"
	"github.com/idemlambda/idemlambda/pkg/idem/internal/scopeid"
)

// HeaderKey carries the client's idempotency key
// (draft-ietf-httpapi-idempotency-key-header): an RFC 8941 structured-field
// string such as "order-42".
const HeaderKey = "Idempotency-Key"

// HeaderReplayed marks a response replayed from the store:
// "Idempotent-Replayed: true". A first execution does not carry it.
const HeaderReplayed = "Idempotent-Replayed"

// HeaderBodyOmitted marks a stored response whose body could not be
// stored (too large for the record, or not storable): pkg/idem records
// such a response without it rather than leave the key open to run the
// handler again, and a replay carries the status and this header, whose
// value ("too large" or "not storable") says why.
const HeaderBodyOmitted = "Idempotent-Body-Omitted"

// ParseKey reads an Idempotency-Key header value: an RFC 8941 string
// ("abc", with \" and \\ escapes, parameters after it ignored) or,
// leniently, a bare token (abc). The key must be a valid key: 1 to
// 255 printable ASCII characters. Every error wraps idem.ErrInvalidKey.
func ParseKey(v string) (string, error) {
	v = strings.Trim(v, " \t")
	if v == "" {
		return "", fmt.Errorf("%w: empty header", idem.ErrInvalidKey)
	}
	if v[0] != '"' {
		if strings.ContainsAny(v, `",;`) {
			return "", fmt.Errorf("%w: a bare key must not contain '\"', ',' or ';'; send a quoted string", idem.ErrInvalidKey)
		}
		return valid(v)
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
			return valid(b.String())
		case c < 0x20 || c > 0x7e:
			return "", fmt.Errorf("%w: character %d is not printable ASCII", idem.ErrInvalidKey, i)
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("%w: unterminated quoted string", idem.ErrInvalidKey)
}

// valid returns the key if it is a valid key, else the error.
func valid(key string) (string, error) {
	if err := scopeid.ValidateKey(key); err != nil {
		return "", err
	}
	return key, nil
}

// checkParams accepts what may follow an sf-string item: nothing, or
// parameters (";name" or ";name=value", RFC 8941 section 3.1.2), which
// carry nothing a key needs and are ignored.
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
		if !isParamName(name) {
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

// isParamName reports whether s is a parameter's key (RFC 8941 section
// 3.1.2): a lowercase letter or "*", then lowercase letters, digits, "_",
// "-", "." or "*". A function, not a package-level regexp, whose
// compilation every cold start of a binary linking idemhttp would pay.
func isParamName(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c == '*':
		case i > 0 && (c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}
