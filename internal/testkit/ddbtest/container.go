package ddbtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// DynamoDBLocalImage is the image the container backend runs. It is pulled
// by Docker on the user's machine; this repository never ships it.
const DynamoDBLocalImage = "amazon/dynamodb-local:2.6.1"

// errNoDocker marks a machine with no reachable Docker engine.
var errNoDocker = errors.New("no Docker engine is reachable")

// sharedContainer starts one DynamoDB Local per test binary: a container per
// test would cost seconds each, and unique table names already isolate
// tests. It is the package's only process-wide state, and only tests use it.
var sharedContainer = sync.OnceValues(startContainer)

func containerEndpoint(tb testing.TB) (string, error) {
	tb.Helper()
	url, err := sharedContainer()
	if errors.Is(err, errNoDocker) {
		tb.Skipf("DYNAMODB_TEST_BACKEND=container: skipping: %v. Use the embedded backend, or start Docker.", err)
	}
	return url, err
}

func startContainer() (url string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if herr := dockerHealthy(ctx); herr != nil {
		return "", fmt.Errorf("%w: %w", errNoDocker, herr)
	}
	ctr, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:        DynamoDBLocalImage,
			Cmd:          []string{"-jar", "DynamoDBLocal.jar", "-inMemory", "-sharedDb"},
			ExposedPorts: []string{"8000/tcp"},
			WaitingFor:   wait.ForListeningPort("8000/tcp").WithStartupTimeout(2 * time.Minute),
		},
		Started: true,
	})
	if err != nil {
		return "", fmt.Errorf("start %s: %w", DynamoDBLocalImage, err)
	}
	// Ryuk, testcontainers' reaper, removes the container when the test
	// binary exits; there is no per-test cleanup for a shared container.
	endpoint, err := ctr.PortEndpoint(ctx, "8000/tcp", "http")
	if err != nil {
		return "", fmt.Errorf("container endpoint: %w", err)
	}
	return endpoint, nil
}

// dockerHealthy asks testcontainers' provider for a health check; the
// provider panics on some hosts without a socket, which counts as unhealthy.
func dockerHealthy(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("docker provider: %v", r)
		}
	}()
	provider, err := testcontainers.ProviderDocker.GetProvider()
	if err != nil {
		return err
	}
	defer provider.Close()
	return provider.Health(ctx)
}
