package template_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/idemlambda/idemlambda/internal/config"
)

// TestSamLocalEnvFiles holds events/env/<fn>.json, the --env-vars files of
// `make sam-invoke` and `make sam-test`, against template.yaml: `sam local
// invoke` silently drops a variable the template does not declare for the
// function, so each file may set only declared variables, and must set the
// function's required ones (table names, the bus). The one exception is
// AWS_ENDPOINT_URL, the endpoint of every client, which each file must
// set: the template declares no endpoint variable (an emulator injects
// this one), so scripts/sam-invoke.sh and test/sam declare it, empty, in
// the Globals of their copy of the built template.
func TestSamLocalEnvFiles(t *testing.T) {
	tpl := load(t)
	for fn, id := range functionIDs(t, tpl) {
		t.Run(fn, func(t *testing.T) {
			path := filepath.Join("..", "..", "..", "events", "env", fn+".json")
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read the function's env file: %v", err)
			}
			var file map[string]map[string]string
			if err := json.Unmarshal(b, &file); err != nil {
				t.Fatalf("%s: want {%q: {NAME: \"value\", ...}}: %v", path, id, err)
			}
			if len(file) != 1 || file[id] == nil {
				t.Fatalf("%s has sections %v, want exactly one, %q (SAM applies a section to the function of that logical id)",
					path, sortedKeys(file), id)
			}
			vars := file[id]
			declared := functionEnv(tpl, id)
			endpoint := config.EndpointURL.Name
			for _, name := range sortedKeys(vars) {
				if _, ok := declared[name]; !ok && name != endpoint {
					t.Errorf("%s sets %s, which template.yaml does not declare for %s: sam local invoke would drop it",
						path, name, id)
				}
			}
			var required []string
			for _, v := range functionVars()[fn] {
				if v.Default == "" && !v.Optional {
					required = append(required, v.Name)
				}
			}
			required = append(required, endpoint)
			for _, name := range required {
				if vars[name] == "" {
					t.Errorf("%s does not set %s (required: %v)", path, name, required)
				}
			}
		})
	}
}
