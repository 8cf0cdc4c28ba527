package idemhttp_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemlambda/idemlambda/pkg/idem/idemhttp"
)

// A REST API's handler (payload 1.0) made idempotent; in a Lambda main:
// lambda.Start(mw.APIGatewayV1(sendEmail)). The method's Cognito user
// pool authorizer names the caller (PrincipalV1).
func ExampleMiddleware_APIGatewayV1() {
	store, stop := localStore()
	defer stop()
	sent := 0
	sendEmail := func(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		sent++ // the effect: a call to the mail provider
		return events.APIGatewayProxyResponse{StatusCode: 202, Body: fmt.Sprintf(`{"message":%d}`, sent)}, nil
	}
	mw, err := idemhttp.New(store)
	if err != nil {
		log.Fatal(err)
	}
	handler := mw.APIGatewayV1(sendEmail)

	req := events.APIGatewayProxyRequest{
		Resource: "/emails", Path: "/emails", HTTPMethod: "POST",
		Headers: map[string]string{"Idempotency-Key": `"mail-1"`, "Content-Type": "application/json"},
		Body:    `{"to":"ada@example.com"}`,
		RequestContext: events.APIGatewayProxyRequestContext{
			Authorizer: map[string]any{"claims": map[string]any{"iss": "https://cognito-idp.eu-west-1.amazonaws.com/pool", "sub": "ada"}},
		},
	}
	for range 2 {
		resp, _ := handler(context.Background(), req)
		fmt.Printf("%d %s replayed=%q\n", resp.StatusCode, resp.Body, resp.Headers[idemhttp.HeaderReplayed])
	}
	principal, _ := idemhttp.PrincipalV1(req.RequestContext)
	fmt.Println("e-mails sent:", sent, "for", principal)
	// Output:
	// 202 {"message":1} replayed=""
	// 202 {"message":1} replayed="true"
	// e-mails sent: 1 for jwt:"https://cognito-idp.eu-west-1.amazonaws.com/pool":sub="ada"
}

// An Application Load Balancer's Lambda target made idempotent; in a
// Lambda main: lambda.Start(mw.ALB(sendEmail)). The listener rule
// authenticates with OIDC, so the load balancer's x-amzn-oidc-* headers
// name the caller (PrincipalALBOIDC); the target group sends multi-value
// headers, and gets its answers in them.
func ExampleMiddleware_ALB() {
	store, stop := localStore()
	defer stop()
	sent := 0
	sendEmail := func(ctx context.Context, req events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
		sent++
		return events.ALBTargetGroupResponse{StatusCode: 202, Body: fmt.Sprintf(`{"message":%d}`, sent)}, nil
	}
	mw, err := idemhttp.New(store, idemhttp.WithPrincipalALB(idemhttp.PrincipalALBOIDC))
	if err != nil {
		log.Fatal(err)
	}
	handler := mw.ALB(sendEmail)

	req := events.ALBTargetGroupRequest{
		HTTPMethod: "POST", Path: "/emails", Body: `{"to":"ada@example.com"}`,
		MultiValueHeaders: map[string][]string{
			"idempotency-key":      {`"mail-1"`},
			"content-type":         {"application/json"},
			"x-amzn-oidc-identity": {"ada"},
			// The load balancer's signed user claims: {"iss":"https://auth.example.com/","sub":"ada"}.
			"x-amzn-oidc-data": {"eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJodHRwczovL2F1dGguZXhhbXBsZS5jb20vIiwic3ViIjoiYWRhIn0.c2ln"},
		},
	}
	for range 2 {
		resp, _ := handler(context.Background(), req)
		fmt.Printf("%s %s replayed=%q\n", resp.StatusDescription, resp.Body, resp.MultiValueHeaders[idemhttp.HeaderReplayed])
	}
	fmt.Println("e-mails sent:", sent)
	// Output:
	// 202 Accepted {"message":1} replayed=[]
	// 202 Accepted {"message":1} replayed=["true"]
	// e-mails sent: 1
}
