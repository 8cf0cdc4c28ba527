package api

import (
	"context"
	"errors"
	"net"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// unavailableCodes are DynamoDB errors that mean "try again later" once the
// SDK's own retries are spent.
var unavailableCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"RequestLimitExceeded":                   true,
	"InternalServerError":                    true,
	"ServiceUnavailable":                     true,
	"LimitExceededException":                 true,
	"TransactionInProgressException":         true,
}

// unavailable reports whether err means the store is throttled or out of
// reach, which the client should retry (503), rather than a bug (500).
func unavailable(err error) bool {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && unavailableCodes[apiErr.ErrorCode()] {
		return true
	}
	var maxAttempts *retry.MaxAttemptsError
	var sendErr *smithyhttp.RequestSendError
	var netErr net.Error
	var ise *types.InternalServerError
	return errors.As(err, &maxAttempts) || errors.As(err, &sendErr) || errors.As(err, &netErr) ||
		errors.As(err, &ise) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}
