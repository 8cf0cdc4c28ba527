package idem_test

import (
	"fmt"

	"github.com/idemlambda/idemlambda/pkg/idem"
)

// NewAnonymousScope is the one scope callers that cannot be named share,
// chosen explicitly; a caller named "anonymous" is a named caller, in a
// scope of its own.
func ExampleNewAnonymousScope() {
	guest, _ := idem.NewAnonymousScope("POST /signups", "k-1")
	user, _ := idem.NewScope("POST /signups", "anonymous", "k-1")
	fmt.Println(guest.Anonymous(), guest.ID())
	fmt.Println(user.Anonymous(), user.ID())
	// Output:
	// true v1|13:POST /signups|9:anonymous|3:k-1
	// false v1|13:POST /signups|n9:anonymous|3:k-1
}
