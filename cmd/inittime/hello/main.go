// Command hello is the yardstick of make init-time: the smallest
// aws-lambda-go bootstrap, built with the functions' flags, whose time from
// exec to its first request for an invocation is what Go and the runtime
// client cost before any code of this project runs.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(context.Context) (string, error) { return "hello", nil })
}
