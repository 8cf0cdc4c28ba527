package template_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idemlambda/idemlambda/internal/config"
)

// A function is in five places, and this test, with the drift test's
// others, fails when it is missing from any: its main (functions/<fn>),
// its loader (config.Functions), its assembly (internal/app/<fn>), its
// resource in template.yaml (<Fn>Function, functionIDs) and its env file
// for sam local invoke (events/env/<fn>.json, TestSamLocalEnvFiles).
// make build, make init-time, sam build (mk/sam.mk's build-%Function) and
// make validate find the functions themselves.
func TestEveryFunctionIsEverywhere(t *testing.T) {
	var loaders []string
	for _, f := range config.Functions() {
		loaders = append(loaders, f.Name)
	}
	slices.Sort(loaders)
	var templated []string
	for fn := range functionIDs(t, load(t)) {
		templated = append(templated, fn)
	}
	slices.Sort(templated)
	for what, got := range map[string][]string{
		"folders with a main.go under functions/": dirsWith(t, "functions", "main.go"),
		"assembly packages under internal/app/":   dirsWith(t, filepath.Join("internal", "app"), "*.go"),
		"AWS::Serverless::Function resources":     templated,
	} {
		if !slices.Equal(got, loaders) {
			t.Errorf("%s: %v; config.Functions(): %v (docs/development.md, Add a function)", what, got, loaders)
		}
	}
	for _, fn := range loaders {
		if _, err := os.Stat(filepath.Join(repoRoot, "events", "env", fn+".json")); err != nil {
			t.Errorf("%s has no events/env/%s.json for sam local invoke: %v", fn, fn, err)
		}
	}
}

// dirsWith lists the folders under dir (of the repository) holding a file
// that matches pattern.
func dirsWith(t *testing.T, dir, pattern string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(repoRoot, dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if m, _ := filepath.Glob(filepath.Join(repoRoot, dir, e.Name(), pattern)); len(m) > 0 {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestEachFunctionLinksOnlyWhatItRuns holds each bootstrap to the packages
// of its own work (go list -deps of its main): no other function's
// assembly, nothing of make run or the tests, no gRPC or protobuf runtime,
// and, by function, none of the packages it does not run. The relay links
// no HTTP API, no product, no seller statistics, no idempotency and no
// DynamoDB package at all (it reads stream images in the Lambda event's
// types); the consumer no HTTP API; the API functions no other route's
// domain; none the DynamoDB Streams client, its types or attributevalue.
// A package linked is one whose initialisers run at every cold start: the
// DynamoDB types' serialization schemas cost about half a millisecond
// (docs/development.md, Start time).
func TestEachFunctionLinksOnlyWhatItRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list on every function")
	}
	const mod = "github.com/idemlambda/idemlambda/"
	never := map[string][]string{
		config.NameOutboxRelay: {"internal/api", "internal/product", "internal/sellers", "pkg/money", "pkg/idem",
			"pkg/ddbitem", "internal/streams", "internal/outbox/outboxitem", "github.com/aws/aws-sdk-go-v2/service/dynamodb/..."},
		config.NameSellerStats:   {"internal/api", "pkg/idem/idemhttp", "internal/relay", "github.com/aws/aws-sdk-go-v2/service/eventbridge"},
		config.NameCreateProduct: {"internal/sellers", "internal/relay", "pkg/idem/idemsqs", "github.com/aws/aws-sdk-go-v2/service/eventbridge"},
		config.NameGetProduct:    {"internal/sellers", "internal/relay", "pkg/idem/idemsqs", "github.com/aws/aws-sdk-go-v2/service/eventbridge"},
		config.NameGetSeller:     {"internal/sellers/sellersqs", "internal/relay", "pkg/idem/idemsqs", "github.com/aws/aws-sdk-go-v2/service/eventbridge"},
		// The sweeper deletes items; it serves no route, publishes and
		// counts nothing.
		config.NameSweeper: {"internal/api", "internal/access", "internal/problem", "internal/product", "internal/sellers", "internal/relay",
			"pkg/idem/idemhttp", "pkg/idem/idemsqs", "github.com/aws/aws-sdk-go-v2/service/eventbridge"},
	}
	// No function calls S3, SNS or SQS (the consumer's queue is read by
	// its event source mapping): otelaws linked all three, and DynamoDB.
	// None reads the Streams API or maps items with attributevalue, which
	// pkg/money linked into every function, with the Streams types.
	unused := []string{"github.com/aws/aws-sdk-go-v2/service/s3", "github.com/aws/aws-sdk-go-v2/service/sns", "github.com/aws/aws-sdk-go-v2/service/sqs",
		"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/...", "github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"}
	for _, f := range config.Functions() {
		t.Run(f.Name, func(t *testing.T) {
			cmd := exec.Command("go", "list", "-deps", "./functions/"+f.Name)
			cmd.Dir = repoRoot
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("go list -deps ./functions/%s: %v", f.Name, err)
			}
			for _, dep := range strings.Fields(string(out)) {
				own := strings.TrimPrefix(dep, mod)
				switch {
				case strings.HasPrefix(own, "internal/app/") && own != "internal/app/"+f.Name:
					t.Errorf("links another function's assembly, %s", own)
				case strings.HasPrefix(own, "internal/dev/"), strings.HasPrefix(own, "internal/testkit/"):
					t.Errorf("links %s, which make run or the tests use, not Lambda", own)
				case strings.HasPrefix(dep, "google.golang.org/grpc"), strings.HasPrefix(dep, "google.golang.org/protobuf/"),
					strings.HasPrefix(dep, "google.golang.org/genproto/"), strings.HasPrefix(dep, "github.com/grpc-ecosystem/"):
					// What OpenTelemetry's OTLP exporters link
					// (open-telemetry/opentelemetry-go#2579): twice the
					// binary and its start; internal/otlp sends the same.
					t.Errorf("links %s: gRPC or the protobuf runtime, which no function needs (docs/development.md, Start time)", dep)
				}
				for _, n := range append(never[f.Name], unused...) {
					// The module's packages with what is under them; a
					// third-party package alone (an SDK client: its types
					// may be linked) unless it ends in /....
					tree, all := strings.CutSuffix(n, "/...")
					if own == n || own == tree ||
						(all || !strings.HasPrefix(n, "github.com/")) && strings.HasPrefix(own, tree+"/") {
						t.Errorf("links %s, which %s does not run", dep, f.Name)
					}
				}
			}
		})
	}
}

// TestGETFunctionsLinkTheIdempotencyCoreOnlyThroughTheSharedPlumbing
// holds the exception internal/app's package comment names: getproduct
// and getseller never call pkg/idem, and link it (and idemhttp) only
// because the routes' shared plumbing renders every answer with
// idemhttp's problem+json type, and names a token's caller with
// idemhttp's PrincipalV2, the spelling its idempotency scope uses. In
// their go list -deps graph, every package of the module that imports
// either is that plumbing (internal/api, internal/problem,
// internal/access), idemhttp itself, or the function's assembly, whose
// handler has idemhttp's handler type.
func TestGETFunctionsLinkTheIdempotencyCoreOnlyThroughTheSharedPlumbing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list on the GET functions")
	}
	const mod = "github.com/idemlambda/idemlambda/"
	core := []string{mod + "pkg/idem", mod + "pkg/idem/idemhttp"}
	for _, fn := range []string{config.NameGetProduct, config.NameGetSeller} {
		t.Run(fn, func(t *testing.T) {
			cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./functions/"+fn)
			cmd.Dir = repoRoot
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("go list -deps ./functions/%s: %v", fn, err)
			}
			allowed := []string{"internal/api", "internal/problem", "internal/access", "pkg/idem/idemhttp", "internal/app/" + fn}
			linked := false
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				pkg, imports, _ := strings.Cut(line, " ")
				for _, imp := range strings.Fields(imports) {
					if !slices.Contains(core, imp) {
						continue
					}
					linked = true
					if own := strings.TrimPrefix(pkg, mod); !slices.Contains(allowed, own) {
						t.Errorf("%s imports %s: %s would call the idempotency core", own, imp, fn)
					}
				}
			}
			if !linked {
				t.Errorf("%s no longer links pkg/idem: drop the exception here and in internal/app's package comment", fn)
			}
		})
	}
}
