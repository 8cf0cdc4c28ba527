package emf_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/idemlambda/idemlambda/pkg/emf"
)

// One line per invocation, on stdout, where Lambda sends it to CloudWatch
// Logs, which publishes Requests and Duration under [Function, Outcome]
// and [Function].
func ExampleWriter_Write() {
	var out strings.Builder
	w, err := emf.NewWriter(&out, "orders")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	w.Write(emf.NewLine().
		Dimension("Function", "placeorder").Dimension("Outcome", "executed").
		DimensionSet("Function", "Outcome").DimensionSet("Function").
		Metric("Requests", emf.Count, 1).
		Metric("Duration", emf.Milliseconds, 12))
	fmt.Println(emf.Validate([]byte(out.String())))
	fmt.Println(strings.Contains(out.String(), `"Dimensions":[["Function","Outcome"],["Function"]]`))
	// Output:
	// <nil>
	// true
}
