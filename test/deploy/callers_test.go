//go:build deploy

package deploy

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	ststypes "github.com/aws/aws-sdk-go-v2/service/sts/types"
	"github.com/stretchr/testify/require"

	"github.com/idemlambda/idemlambda/pkg/idem/idemprincipal"
)

// limitParameters are the test's own deployment parameters, after
// samconfig.toml's: a caller may create 2 products per 10 minutes, so the
// requests reach the limit in a few creations, and no more than one window
// can end while they are sent. The deployed stack keeps them: with
// DEPLOY_LOCAL_KEEP, each caller creates at most 2 products per 10 minutes.
const limitParameters = "CallerLimit=2 CallerLimitWindow=10m"

// deployParameters are samconfig.toml's parameter overrides for sam deploy
// with limitParameters after them (on the command line, sam takes these
// instead of the file's, so the file's are repeated).
func deployParameters(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(samconfig)
	require.NoError(t, err)
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			section = line
			continue
		}
		if v, ok := strings.CutPrefix(line, "parameter_overrides = "); ok && section == "[default.deploy.parameters]" {
			file, err := strconv.Unquote(v)
			require.NoError(t, err, "samconfig.toml's deploy parameter_overrides: %s", v)
			t.Logf("adjustment (deployment parameters, not the template): %s, after samconfig.toml's %s", limitParameters, file)
			return file + " " + limitParameters
		}
	}
	t.Fatalf("%s has no parameter_overrides in [default.deploy.parameters]", samconfig)
	return ""
}

// signingIdentity is the IAM identity the test's requests are signed as,
// as the API names its caller (idemprincipal.IdentityARN of what `aws sts
// get-caller-identity` answers: a role's session is the role): the ARN
// an operator grants sellers to.
func signingIdentity(ctx context.Context, t *testing.T, c *sts.Client) string {
	t.Helper()
	out, err := c.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	require.NoError(t, err)
	t.Logf("\n> STS GetCallerIdentity\n< Arn %s, Account %s", aws.ToString(out.Arn), aws.ToString(out.Account))
	return idemprincipal.IdentityARN(aws.ToString(out.Arn))
}

// grantSeller lets caller create products for seller in the deployed
// callers table, as docs/operations.md tells an operator to: cmd/grant,
// pointed at the emulator by AWS_ENDPOINT_URL as the rest of the test is.
func grantSeller(ctx context.Context, t *testing.T, table, caller, seller string) {
	t.Helper()
	args := []string{"run", "./cmd/grant", "-table", table, "-caller", caller, seller}
	go_ := os.Getenv("GO")
	if go_ == "" {
		go_ = "go"
	}
	cmd := exec.CommandContext(ctx, go_, args...)
	cmd.Dir = root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("\n> go %s\n< %s(%.1f s)", strings.Join(args, " "), stdout.String(), time.Since(start).Seconds())
	require.NoError(t, err, "go %s: %s", strings.Join(args, " "), stderr.String())
}

// federatedCaller is another IAM caller of the account, with credentials
// of its own: a federated user named name (STS GetFederationToken, signed
// by the test's identity), whose permissions are the managed policies
// policyARNs (a federated user has none but those its token is given, on
// AWS and on MiniStack alike). Nothing grants it a seller.
func federatedCaller(ctx context.Context, t *testing.T, c *sts.Client, name string, policyARNs ...string) (string, aws.CredentialsProvider) {
	t.Helper()
	in := &sts.GetFederationTokenInput{Name: aws.String(name)}
	for _, p := range policyARNs {
		in.PolicyArns = append(in.PolicyArns, ststypes.PolicyDescriptorType{Arn: aws.String(p)})
	}
	out, err := c.GetFederationToken(ctx, in)
	require.NoError(t, err)
	creds := out.Credentials
	arn := aws.ToString(out.FederatedUser.Arn)
	t.Logf("\n> STS GetFederationToken Name=%s PolicyArns=%v\n< Arn %s, AccessKeyId %s", name, policyARNs, arn, aws.ToString(creds.AccessKeyId))
	return arn, credentials.NewStaticCredentialsProvider(aws.ToString(creds.AccessKeyId), aws.ToString(creds.SecretAccessKey), aws.ToString(creds.SessionToken))
}
