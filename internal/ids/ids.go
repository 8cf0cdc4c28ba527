// Package ids parses the UUIDs this service reads from outside: product,
// seller and event ids.
package ids

import (
	"fmt"

	"github.com/google/uuid"
)

// Parse reads a UUID in its 36-character form only, never the nil UUID.
// uuid.Parse also takes urn:uuid:, braces and 32 bare hex digits, which
// would give one id several spellings: two keys for one seller, or one
// event counted twice.
func Parse(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 || id == uuid.Nil {
		return uuid.Nil, fmt.Errorf("%.64q is not a UUID such as 3f2b8c1e-7a4d-4e6f-9b0a-1c2d3e4f5a6b", s)
	}
	return id, nil
}
