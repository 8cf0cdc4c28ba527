// Package benchrun holds what bench-peer's Go runners (cmd/gorunner,
// cmd/goconsumer) share: their DynamoDB client, their CPU clock, the
// versions they report and the JSON lines they speak to the driver on.
package benchrun

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/internal/app"
	"github.com/idemlambda/idemlambda/internal/config"
	"github.com/idemlambda/idemlambda/internal/ddb"
)

// NewClient is a DynamoDB client for the benchmark's local endpoint,
// built as the functions build theirs (app.Client, with the call counter
// their metrics read), with dummy credentials and hc as its HTTP client
// when not nil.
func NewClient(endpoint string, hc aws.HTTPClient) (*dynamodb.Client, error) {
	opts := []func(*dynamodb.Options){ddb.CountPerContext}
	if hc != nil {
		opts = append(opts, func(o *dynamodb.Options) { o.HTTPClient = hc })
	}
	return app.Client(config.AWS{Region: "us-east-1", AccessKeyID: "local", SecretAccessKey: "local", Endpoint: endpoint}, nil,
		dynamodb.NewFromConfig, opts...)
}

// CPU is a process's CPU time, user and system, in ms.
type CPU struct{ User, Sys float64 }

// CPUTime is this process's CPU time so far, every thread.
func CPUTime() CPU {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	ms := func(t syscall.Timeval) float64 { return float64(t.Sec)*1e3 + float64(t.Usec)/1e3 }
	return CPU{User: ms(ru.Utime), Sys: ms(ru.Stime)}
}

// Versions are the Go and AWS SDK versions this binary was built with.
func Versions() map[string]string {
	v := map[string]string{"go": runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/aws/aws-sdk-go-v2", "github.com/aws/aws-sdk-go-v2/service/dynamodb":
				v[d.Path] = d.Version
			}
		}
	}
	return v
}

// Emit writes v to w as one JSON line, the driver's protocol.
func Emit(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("benchrun: emit: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
