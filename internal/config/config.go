// Package config is the one list of environment variables each function
// reads, with defaults and parsing. The functions' main packages load it,
// and the template drift test checks template.yaml against it.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/idemlambda/idemlambda/internal/tables"
)

// Var is one environment variable.
type Var struct {
	// Name is the variable's name.
	Name string
	// Default applies when the variable is unset or empty; "" means required.
	Default string
	// Doc says what it is for.
	Doc string
}

// The variables, by name (DESIGN.md section 4).
var (
	ProductsTable        = Var{Name: tables.Products.EnvVar, Doc: "products table name"}
	IdempotencyTable     = Var{Name: tables.Idempotency.EnvVar, Doc: "idempotency table name"}
	OutboxTable          = Var{Name: tables.Outbox.EnvVar, Doc: "outbox table name"}
	EventBusName         = Var{Name: "EVENT_BUS_NAME", Doc: "EventBridge bus the relay publishes to"}
	EventSource          = Var{Name: "EVENT_SOURCE", Default: "idemlambda.products", Doc: "CloudEvents source and EventBridge Source"}
	IdempotencyRetention = Var{Name: "IDEMPOTENCY_RETENTION", Default: "24h", Doc: "how long a completed key replays (Go duration)"}
	LogLevel             = Var{Name: "LOG_LEVEL", Default: "info", Doc: "debug, info, warn or error"}
)

// The AWS SDK's own endpoint variables: config.LoadDefaultConfig reads
// them, this code never does. template.yaml declares each function's, empty,
// because `sam local invoke` passes a function only the variables its
// template declares; the SDK ignores an empty value, so a deployed function
// calls the regional endpoint.
var (
	EndpointDynamoDB    = Var{Name: "AWS_ENDPOINT_URL_DYNAMODB", Doc: "DynamoDB endpoint, read by the AWS SDK (empty: the regional endpoint)"}
	EndpointEventBridge = Var{Name: "AWS_ENDPOINT_URL_EVENTBRIDGE", Doc: "EventBridge endpoint, read by the AWS SDK (empty: the regional endpoint)"}
)

// Function names the Lambda functions, as in template.yaml's logical ids
// without the "Function" suffix.
type Function string

// The functions.
const (
	CreateProduct Function = "createproduct"
	GetProduct    Function = "getproduct"
	OutboxRelay   Function = "outboxrelay"
)

// Functions lists every function.
func Functions() []Function { return []Function{CreateProduct, GetProduct, OutboxRelay} }

// Vars returns the variables a function reads; template.yaml must set
// exactly these (defaults may be left to the code).
func Vars(f Function) []Var {
	switch f {
	case CreateProduct:
		return []Var{ProductsTable, IdempotencyTable, OutboxTable, EventSource, IdempotencyRetention, LogLevel}
	case GetProduct:
		return []Var{ProductsTable, LogLevel}
	case OutboxRelay:
		return []Var{EventBusName, EventSource, LogLevel}
	}
	return nil
}

// SDKVars returns the AWS SDK endpoint variables of the clients a function
// builds (DynamoDB for the API functions, EventBridge for the relay). The
// SDK reads them; they are not part of Vars, and template.yaml declares them
// empty.
func SDKVars(f Function) []Var {
	switch f {
	case CreateProduct, GetProduct:
		return []Var{EndpointDynamoDB}
	case OutboxRelay:
		return []Var{EndpointEventBridge}
	}
	return nil
}

// ErrInvalid reports a missing or malformed variable.
var ErrInvalid = errors.New("config: invalid environment")

// Env reads variables through getenv (os.Getenv in production).
type Env struct {
	getenv func(string) string
	errs   []error
}

// New returns an Env reading through getenv.
func New(getenv func(string) string) *Env { return &Env{getenv: getenv} }

// String returns the variable's value or its default; a required variable
// that is unset is recorded as an error for Err.
func (e *Env) String(v Var) string {
	s := strings.TrimSpace(e.getenv(v.Name))
	if s == "" {
		s = v.Default
	}
	if s == "" {
		e.errs = append(e.errs, fmt.Errorf("%w: %s is required (%s)", ErrInvalid, v.Name, v.Doc))
	}
	return s
}

// Duration parses the variable as a positive Go duration.
func (e *Env) Duration(v Var) time.Duration {
	s := e.String(v)
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		e.errs = append(e.errs, fmt.Errorf("%w: %s=%q is not a positive duration", ErrInvalid, v.Name, s))
		return 0
	}
	return d
}

// Level parses the variable as a slog level.
func (e *Env) Level(v Var) slog.Level {
	s := e.String(v)
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		e.errs = append(e.errs, fmt.Errorf("%w: %s=%q: want debug, info, warn or error", ErrInvalid, v.Name, s))
		return slog.LevelInfo
	}
	return l
}

// Err returns every problem found so far, joined.
func (e *Env) Err() error { return errors.Join(e.errs...) }
