package idemtest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Start serves a new store on a loopback port; Close stops it.
func Start(opts ...Option) *Server {
	s := NewServer(opts...)
	s.httpSrv = httptest.NewServer(s)
	return s
}

// New starts a store for one test and stops it when the test ends.
func New(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s := Start(opts...)
	tb.Cleanup(s.Close)
	return s
}

// URL is the endpoint of a store Start started ("" for one that was not).
func (s *Server) URL() string {
	if s.httpSrv == nil {
		return ""
	}
	return s.httpSrv.URL
}

// Client returns a DynamoDB client for a started store: its Region
// (us-east-1 outside a Global), static dummy credentials (no AWS account or profile is read),
// the SDK's standard retryer. opts adjust it, as for dynamodb.New.
func (s *Server) Client(opts ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       s.region,
		BaseEndpoint: aws.String(s.URL()),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			if s.URL() == "" {
				return aws.Credentials{}, errors.New("idemtest: the store was not started (use Start or New)")
			}
			return aws.Credentials{AccessKeyID: "idemtest", SecretAccessKey: "idemtest", Source: "idemtest"}, nil
		}),
	}, opts...)
}

// HandlerClient returns a DynamoDB client, with Client's settings, whose
// requests s.ServeHTTP answers in-process: no listener, no network, no
// goroutine of its own. It works on a store NewServer returned, started
// or not, and inside a testing/synctest bubble: a store created in the
// bubble blocks only on channels, sync primitives and time.Sleep, so
// WithTransactionLatency and InjectLatency run on the bubble's fake
// clock. opts adjust it, as for dynamodb.New.
func (s *Server) HandlerClient(opts ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       s.region,
		BaseEndpoint: aws.String("http://idemtest.invalid"),
		HTTPClient:   handlerDoer{s},
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "idemtest", SecretAccessKey: "idemtest", Source: "idemtest"}, nil
		}),
	}, opts...)
}

// handlerDoer is an HTTP client that hands each request to a handler.
type handlerDoer struct{ h http.Handler }

func (d handlerDoer) Do(r *http.Request) (*http.Response, error) {
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	rec := httptest.NewRecorder()
	d.h.ServeHTTP(rec, r)
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}
