module github.com/idemlambda/idemlambda/test/adopter

go 1.26

require (
	github.com/aws/aws-lambda-go v1.55.1
	github.com/idemlambda/idemlambda/pkg v0.0.0-00010101000000-000000000000
	github.com/idemlambda/idemlambda/pkg/idem/idemconform v0.0.0-00010101000000-000000000000
)

require (
	github.com/anishathalye/porcupine v1.3.1 // indirect
	github.com/aws/aws-sdk-go-v2 v1.48.0 // indirect
	github.com/aws/aws-sdk-go-v2/internal/configsources v1.5.12 // indirect
	github.com/aws/aws-sdk-go-v2/internal/endpoints/v2 v2.8.12 // indirect
	github.com/aws/aws-sdk-go-v2/service/dynamodb v1.74.0 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/accept-encoding v1.13.25 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/endpoint-discovery v1.13.12 // indirect
	github.com/aws/smithy-go v1.28.9 // indirect
	github.com/cockroachdb/apd/v3 v3.2.3 // indirect
	github.com/google/uuid v1.6.0 // indirect
)

// An adopter requires published versions; this module, which stands in for
// one, takes the copies in this repository.
replace (
	github.com/idemlambda/idemlambda/pkg => ../../pkg
	github.com/idemlambda/idemlambda/pkg/idem/idemconform => ../../pkg/idem/idemconform
)
