package server

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/purko-io/mcp-hub/internal/adminapi"
	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
)

// TestRegistryAPIPublishesTheHub: a hub whose upstream takes a token and a
// header publishes it on /v0.1/servers with the version it announced and
// the hub's own URL as its remote; neither the upstream's address nor any
// credential of the hub's is in the answer. Like the other listings it is
// open to callers without credentials, on a hub that requires them for
// its tools, and says so in the remote's header.
func TestRegistryAPIPublishesTheHub(t *testing.T) {
	const token, key, callerToken = "upstream-t0ken-7781", "upstream-k3y-4410", "caller-t0ken-2203"
	up := newFakeUpstream(t, "weather")
	spec := up.spec()
	spec.BearerToken, spec.Headers = config.Secret(token), map[string]string{"X-Api-Key": key}
	auth := callers.NewAuth([]callers.TokenCaller{{Name: "ci", Token: callerToken, Ceiling: autonomy.Full}}, nil, nil)
	h := newTestHubOpts(t, []config.ServerSpec{spec}, hubOpts{Auth: auth, RegistryAPI: adminapi.RegistryOptions{Namespace: "com.example.hub"}})
	h.waitConnected("weather")

	get := func(path string) (int, string) {
		t.Helper()
		res, err := http.Get(h.url(path))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	list, body := get("/v0.1/servers")
	if list != http.StatusOK {
		t.Fatalf("GET /v0.1/servers: %d %s", list, body)
	}
	one, doc := get("/v0.1/servers/" + url.PathEscape("com.example.hub/weather") + "/versions/1.0.0")
	if one != http.StatusOK {
		t.Fatalf("GET the version: %d %s", one, doc)
	}
	for _, answer := range []string{body, doc} {
		for _, want := range []string{`"name": "com.example.hub/weather"`, `"version": "1.0.0"`,
			`"url": "http://` + h.addr + `/servers/weather/mcp"`, `"url": "http://` + h.addr + `/servers/weather/sse"`,
			`"name": "Authorization"`, `"isRequired": true`} {
			if !strings.Contains(answer, want) {
				t.Errorf("no %s in %s", want, answer)
			}
		}
		for _, leak := range []string{up.addr, token, key, callerToken, "[redacted]", "X-Api-Key"} {
			if strings.Contains(answer, leak) {
				t.Errorf("the answer holds %q: %s", leak, answer)
			}
		}
	}

	// The remote a client installs is an MCP endpoint of the hub that
	// serves that server's tools and no other's.
	tr, err := transport.NewStreamableHTTP(h.url("/servers/weather/mcp"), transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + callerToken}))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := dialFace(t, tr)
	names := toolNames(t, c)
	want := 0
	for _, tool := range h.reg.Catalog().Tools {
		if tool.Server == "weather" {
			want++
		}
	}
	mustf(t, want > 0 && len(names) == want, "the remote lists %v, want the %d tools of weather", names, want)
	for _, name := range names {
		tool, ok := h.reg.Catalog().Tool(name)
		mustf(t, ok && tool.Server == "weather", "the remote lists %s of %s", name, tool.Server)
	}
}
