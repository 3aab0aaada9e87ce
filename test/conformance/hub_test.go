package conformance

import (
	"fmt"
	"testing"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// TestHubTransparency runs the suite (all 32 scenarios) against go-sdk's
// everything-server directly and through the hub, in the same test: every
// scenario that passes directly must pass through the hub, on both of the
// server's modes. With one
// upstream the tools, prompts and resources keep their names (naming policy
// on-conflict), so the suite finds them by the fixed names it calls.
func TestHubTransparency(t *testing.T) {
	bin := hubtest.HubBinary(t)
	for _, stateless := range []bool{false, true} {
		t.Run(fmt.Sprintf("stateless=%v", stateless), func(t *testing.T) {
			// Every scenario, the pending ones too: json-schema-2020-12
			// checks that a tool's schema reaches the client as written.
			upstream := EverythingServer(t, stateless)
			direct := RunSuite(t, upstream, "all")
			hub := hubtest.StartHub(t, hubtest.HubOptions{Bin: bin, Config: oneUpstream(upstream), LogLevel: "info", Wait: hubtest.Connected})
			through := RunSuite(t, hub.MCPURL(), "all")

			passedDirect, _ := Passing(direct)
			if len(passedDirect) == 0 {
				t.Fatal("no scenario passed directly: the comparison would be empty")
			}
			for _, name := range passedDirect {
				r, ok := through[name]
				switch {
				case !ok:
					t.Errorf("%s passes directly but did not run through the hub", name)
				case !r.Passed:
					t.Errorf("%s passes directly but fails through the hub:\n%s", name, indent(r.Details))
				}
			}
			passedHub, _ := Passing(through)
			t.Logf("passed: %d/%d directly, %d/%d through the hub", len(passedDirect), len(direct), len(passedHub), len(through))
		})
	}
}

// oneUpstream is a hub config with upstream as its only server, the
// hub's own tools off: the comparison is about transparency.
func oneUpstream(upstream string) string {
	return fmt.Sprintf(`naming: {prefix: on-conflict}
builtins: {staticAnalysis: {enabled: false}, triggerWorkflow: {enabled: false}}
servers:
  - name: everything
    url: %s
    transport: streamable-http
`, upstream)
}
