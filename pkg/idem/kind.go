package idem

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aws/smithy-go"

	"github.com/idemlambda/idemlambda/pkg/idem/idemtable"
	"github.com/idemlambda/idemlambda/pkg/idem/idemtrace"
)

// tableState is what a store knows of its table, and how it learns it.
type tableState struct {
	describe idemtable.Describer // nil: the client cannot describe
	told     *idemtable.Info     // WithTableKind's
	mu       sync.Mutex          // one DescribeTable at a time
	// known is what the store knows for good; nil until then.
	known atomic.Pointer[idemtable.Info]
}

// checkKind refuses a kind WithTableKind cannot mean.
func checkKind(k idemtable.Kind) error {
	switch k {
	case idemtable.Regional, idemtable.MREC, idemtable.MRSC:
		return nil
	}
	return fmt.Errorf("idem: table kind %q: want idemtable.Regional, MREC or MRSC", k)
}

// strongRefusal reports whether err is DynamoDB's refusal of a
// transaction on a table with multi-Region strong consistency: a
// ValidationException that says so.
func strongRefusal(err error) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ValidationException" {
		return false
	}
	msg := strings.ToLower(apiErr.ErrorMessage())
	return strings.Contains(msg, "transaction") &&
		(strings.Contains(msg, "multiregionconsistency") || strings.Contains(msg, "strong consistency"))
}

// denied reports whether DynamoDB refused the caller the request, for
// good: asking again would change nothing.
func denied(err error) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode() {
	case "AccessDeniedException", "UnrecognizedClientException", "UnknownOperationException":
		return true
	}
	return false
}

// learnedInfo is info as the trace reports it.
func learnedInfo(info idemtable.Info, from string) idemtrace.TableLearnedInfo {
	return idemtrace.TableLearnedInfo{
		Kind: string(info.Kind), From: from, Region: info.Region,
		Replicas: info.Replicas, Witness: info.Witness,
	}
}
