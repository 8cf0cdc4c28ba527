package ddbtest

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// DynamoDBLocalImage is the image the container backend runs by default. It
// is pulled by Docker on the user's machine; this repository never ships it.
const DynamoDBLocalImage = "amazon/dynamodb-local:2.6.1"

// EnvImage names the variable that replaces DynamoDBLocalImage: any image
// that serves the DynamoDB API on port 8000. amazon/dynamodb-local images
// get DynamoDB Local's command line; any other image runs its own command.
// `make store-image` builds one from cmd/local (the embedded store), which
// is what CI runs where no registry is reachable.
const EnvImage = "DYNAMODB_TEST_IMAGE"

// Labels of the container backend.
const (
	// LabelContainer marks every container this package starts, so a
	// script that turned testcontainers' reaper off can remove them.
	LabelContainer = "org.idemlambda.ddbtest"
	// LabelServer, on an image, names the DynamoDB-compatible server it
	// runs. LabelServerEmbedded is the embedded store (minidyn); an image
	// without the label is taken to be DynamoDB Local.
	LabelServer         = "org.idemlambda.dynamodb-server"
	LabelServerEmbedded = "embedded"
)

// errNoDocker marks a machine with no reachable Docker engine.
var errNoDocker = errors.New("no Docker engine is reachable")

// containerServer is the shared container's endpoint and what it is.
type containerServer struct {
	url   string
	image string
}

// sharedContainer starts one server container per test binary: a container
// per test would cost seconds each, and unique table names already isolate
// tests. It is the package's only process-wide state, and only tests use it.
var sharedContainer = sync.OnceValues(func() (containerServer, error) {
	return startContainer(containerImage())
})

// containerImage is the image named by DYNAMODB_TEST_IMAGE, or DynamoDB Local.
func containerImage() string {
	if img := strings.TrimSpace(os.Getenv(EnvImage)); img != "" {
		return img
	}
	return DynamoDBLocalImage
}

func containerEndpoint(tb testing.TB) (containerServer, error) {
	tb.Helper()
	srv, err := sharedContainer()
	if errors.Is(err, errNoDocker) {
		msg := fmt.Sprintf("DYNAMODB_TEST_BACKEND=container: %v. Use the embedded backend, or start Docker.", err)
		if os.Getenv("CI") == "true" {
			// CI starts Docker before it picks this backend: a missing
			// engine there is a broken run, not a reason to skip.
			tb.Fatalf("%s (CI=true: failing instead of skipping)", msg)
		}
		tb.Skipf("skipping: %s", msg)
	}
	return srv, err
}

// dynamoDBLocalCommand is DynamoDB Local's command line: in memory, and one
// database for every access key and region.
var dynamoDBLocalCommand = []string{"-jar", "DynamoDBLocal.jar", "-inMemory", "-sharedDb"}

func startContainer(image string) (srv containerServer, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	host, herr := dockerHost(ctx)
	if herr != nil {
		return srv, fmt.Errorf("%w: %w", errNoDocker, herr)
	}
	req := testcontainers.ContainerRequest{
		Image:        image,
		ExposedPorts: []string{"8000/tcp"},
		Labels:       map[string]string{LabelContainer: "true"},
		// The port can be published before the server answers on it (a
		// scratch image has no shell for the port check inside): wait
		// for an HTTP answer, any status, too.
		WaitingFor: wait.ForAll(
			wait.ForListeningPort("8000/tcp"),
			wait.ForHTTP("/").WithPort("8000/tcp").WithStatusCodeMatcher(func(int) bool { return true }),
		).WithDeadline(2 * time.Minute),
	}
	if isDynamoDBLocal(image) {
		req.Cmd = dynamoDBLocalCommand
	}
	if addr, ok := publishAddr(host); ok {
		// Publish the port on the one address the tests dial, not on
		// every interface of the machine.
		req.HostConfigModifier = func(hc *container.HostConfig) {
			hc.PortBindings = network.PortMap{
				network.MustParsePort("8000/tcp"): {{HostIP: addr}},
			}
		}
	}
	ctr, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: req,
		Started:          true,
	})
	if err != nil {
		return srv, fmt.Errorf("start %s: %w", image, err)
	}
	// Ryuk, testcontainers' reaper, removes the container when the test
	// binary exits; there is no per-test cleanup for a shared container.
	// Where Ryuk is off (TESTCONTAINERS_RYUK_DISABLED=true, as in
	// `make container-test`), the caller removes containers by LabelContainer.
	endpoint, err := ctr.PortEndpoint(ctx, "8000/tcp", "http")
	if err != nil {
		return srv, fmt.Errorf("container endpoint: %w", err)
	}
	return containerServer{url: endpoint, image: image}, nil
}

// isDynamoDBLocal reports whether image is one of amazon/dynamodb-local's.
func isDynamoDBLocal(image string) bool {
	repo, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	return repo == "amazon/dynamodb-local" || strings.HasSuffix(repo, "/amazon/dynamodb-local")
}

// publishAddr is the address to publish the port on: the one
// testcontainers dials (host), when it is an IP address or localhost.
func publishAddr(host string) (netip.Addr, bool) {
	if host == "localhost" {
		return netip.MustParseAddr("127.0.0.1"), true
	}
	addr, err := netip.ParseAddr(host)
	return addr, err == nil
}

// dockerHost asks testcontainers' provider for a health check and returns
// the host it reaches published ports at: localhost, or the bridge gateway
// when this process runs in a container itself. The provider panics on
// some hosts without a socket, which counts as unhealthy.
func dockerHost(ctx context.Context) (host string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("docker provider: %v", r)
		}
	}()
	provider, err := testcontainers.ProviderDocker.GetProvider()
	if err != nil {
		return "", err
	}
	defer provider.Close()
	if err := provider.Health(ctx); err != nil {
		return "", err
	}
	dp, ok := provider.(*testcontainers.DockerProvider)
	if !ok {
		return "", nil
	}
	return dp.DaemonHost(ctx)
}
