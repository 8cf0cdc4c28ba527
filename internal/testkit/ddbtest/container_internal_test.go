package ddbtest

import "testing"

func TestIsDynamoDBLocal(t *testing.T) {
	t.Parallel()
	for image, want := range map[string]bool{
		"amazon/dynamodb-local":                             true,
		"amazon/dynamodb-local:2.6.1":                       true,
		"amazon/dynamodb-local@sha256:0123":                 true,
		"docker.io/amazon/dynamodb-local:latest":            true,
		"registry.example:5000/amazon/dynamodb-local:2.6.1": true,
		"idemlambda/embedded-store:local":                   false,
		"amazon/dynamodb-local-proxy:1":                     false,
		"registry.example:5000/idemlambda/embedded-store":   false,
		"example/not-amazon/dynamodb-local-but-similar:2.0": false,
	} {
		if got := isDynamoDBLocal(image); got != want {
			t.Errorf("isDynamoDBLocal(%q) = %t, want %t", image, got, want)
		}
	}
}

func TestContainerImageFollowsTheOverride(t *testing.T) {
	t.Setenv(EnvImage, "")
	if got := containerImage(); got != DynamoDBLocalImage {
		t.Errorf("%s unset: image %q, want %q", EnvImage, got, DynamoDBLocalImage)
	}
	t.Setenv(EnvImage, " idemlambda/embedded-store:local ")
	if got := containerImage(); got != "idemlambda/embedded-store:local" {
		t.Errorf("%s set: image %q, want idemlambda/embedded-store:local", EnvImage, got)
	}
}

func TestPublishAddr(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]string{
		"localhost":  "127.0.0.1",
		"172.17.0.1": "172.17.0.1",
		"::1":        "::1",
		"docker.lan": "",
		"":           "",
	} {
		addr, ok := publishAddr(host)
		got := ""
		if ok {
			got = addr.String()
		}
		if got != want {
			t.Errorf("publishAddr(%q) = %q, want %q (empty: publish as testcontainers does)", host, got, want)
		}
	}
}
