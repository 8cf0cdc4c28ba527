// Package benchrun holds what bench-peer's Go runners (cmd/gorunner,
// cmd/goconsumer) share: their DynamoDB client, their CPU clock, the
// versions they report and the JSON lines they speak to the driver on.
package benchrun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemlambda/idemlambda/internal/ddb"
)

// NewClient is a DynamoDB client for the benchmark's local endpoint:
// dummy credentials, the SDK's defaults otherwise, hc as its HTTP client
// when not nil, and the call counter the functions' metrics read, as
// ddb.NewClient adds it.
func NewClient(ctx context.Context, endpoint string, hc aws.HTTPClient) (*dynamodb.Client, error) {
	opts := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithRegion("us-east-1"),
		awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")),
	}
	if hc != nil {
		opts = append(opts, awsconfig.WithHTTPClient(hc))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("benchrun: aws config: %w", err)
	}
	return dynamodb.NewFromConfig(cfg, ddb.CountPerContext, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) }), nil
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
