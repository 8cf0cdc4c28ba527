package metrics_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/idemlambda/idemlambda/internal/metrics"
)

// An API function's line per request: CloudWatch publishes Requests,
// Faults, DynamoDBCalls and Duration under [Function, Outcome] and
// [Function].
func ExampleRecorder_Request() {
	var stdout strings.Builder
	rec, err := metrics.New(&stdout, "idemlambda/prod", "createproduct")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	rec.Request(context.Background(), metrics.API{Outcome: "replayed", Status: 201, DynamoDBCalls: 1}, 1200*time.Microsecond)
	line := stdout.String()
	fmt.Println(line[strings.Index(line, `,"Function"`):])
	// Output: ,"Function":"createproduct","Outcome":"replayed","Requests":1,"Faults":0,"DynamoDBCalls":1,"Duration":1.2}
}
