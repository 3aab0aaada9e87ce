package interop

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// TestURLElicitation: the reference server's trigger-url-elicitation behind
// the hub, called by two SDK clients at once (over /mcp and /ws) that
// declare URL-mode elicitation. Each client gets exactly its own elicitation/create (mode
// url, its URL and elicitationId intact), its answer goes back to the
// upstream request that asked (the tool's result names the client's own
// elicitation), and the -32042 URL-elicitation-required error of the error
// path reaches the caller with its data (the elicitations) intact.
func TestURLElicitation(t *testing.T) {
	e := newEnv(t)
	e.addHTTP(t, "ev-http")
	e.startHub(t)
	e.waitConnected(t, "ev-http")
	const tool = "trigger-url-elicitation" // one server: no prefix
	// The server offers the tool only to clients that declare URL mode:
	// listed, it proves the hub declared it upstream.
	e.waitListing(t, changeTimeout, tool+" listed", func(l *hubtest.Listing) bool {
		sv, _ := l.Server("ev-http")
		names, _ := sv.ToolNames()
		return slices.Contains(names, tool)
	})

	t.Run("two callers at once", func(t *testing.T) {
		kinds := []string{"http", "ws"} // one caller on each face that takes server requests
		callers := len(kinds)
		outs := make([]clientOut, callers)
		runs := make([]*clientRun, callers)
		for i := range callers {
			tr := hubTransports[slices.IndexFunc(hubTransports, func(tr hubTransport) bool { return tr.kind == kinds[i] })]
			runs[i] = startClient(t, tr.kind, tr.url(e.base), opCallElicit(tool, map[string]any{
				"url":           fmt.Sprintf("https://example.com/consent/%d", i),
				"elicitationId": fmt.Sprintf("elicitation-of-caller-%d", i),
				"message":       fmt.Sprintf("caller %d, please consent", i),
			}))
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []string
		for i := range callers {
			wg.Go(func() {
				// wait calls t.Fatalf, which must run on the test's
				// goroutine: wait for the process here, decode below.
				<-runs[i].p.Done()
				if err := runs[i].p.Err(); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Sprintf("caller %d: %v\n%s", i, err, runs[i].p.Output()))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(errs) > 0 {
			t.Fatal(strings.Join(errs, "\n"))
		}
		for i := range callers {
			outs[i] = runs[i].wait(t)
		}
		for i, out := range outs {
			r := out.call(t, 0)
			if r.failed() {
				t.Fatalf("caller %d: call failed: %s", i, r)
			}
			url, id := fmt.Sprintf("https://example.com/consent/%d", i), fmt.Sprintf("elicitation-of-caller-%d", i)
			if len(r.Elicitations) != 1 {
				t.Fatalf("caller %d got %d elicitations, want its own one: %s", i, len(r.Elicitations), r)
			}
			got := r.Elicitations[0]
			if got.Mode != "url" || got.URL != url || got.ElicitationID != id || got.Message != fmt.Sprintf("caller %d, please consent", i) {
				t.Errorf("caller %d got elicitation %+v; want mode url, url %s, elicitationId %s and its message", i, got, url, id)
			}
			// The server's result names the elicitation it got an answer
			// for: the answer went back to this caller's request.
			text := r.text()
			if !strings.Contains(text, "User completed the URL elicitation flow") || !strings.Contains(text, id) || !strings.Contains(text, url) {
				t.Errorf("caller %d: result %q; want the accepted elicitation %s of %s", i, text, id, url)
			}
		}
	})

	t.Run("-32042 error path", func(t *testing.T) {
		out := runClient(t, "http", e.base+"/mcp", opCallElicit(tool, map[string]any{
			"url": "https://example.com/needs-auth", "errorPath": true, "elicitationId": "error-path",
		}))
		r := out.call(t, 0)
		if r.Error == nil || r.Error.Code != -32042 {
			t.Fatalf("result %s; want JSON-RPC error -32042", r)
		}
		var data struct {
			Elicitations []elicitParams `json:"elicitations"`
		}
		if err := json.Unmarshal(r.Error.Data, &data); err != nil || len(data.Elicitations) != 1 {
			t.Fatalf("error data %s (%v); want one elicitation", r.Error.Data, err)
		}
		if el := data.Elicitations[0]; el.Mode != "url" || el.URL != "https://modelcontextprotocol.io" || el.ElicitationID == "" {
			t.Errorf("error data elicitation %+v; want the server's prerequisite (mode url, https://modelcontextprotocol.io, an id)", el)
		}
		if len(r.Elicitations) != 0 {
			t.Errorf("the error path sent %d elicitation requests; want none", len(r.Elicitations))
		}
	})
}

// elicitParams are the members of a URL-mode elicitation the test checks.
type elicitParams struct {
	Mode          string `json:"mode"`
	Message       string `json:"message"`
	URL           string `json:"url"`
	ElicitationID string `json:"elicitationId"`
}

func opCallElicit(tool string, args map[string]any) []string {
	op := opCall(tool, args)
	op[0] = "call-elicit"
	return op
}
