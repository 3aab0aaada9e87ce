package server

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
)

// contractRow is one row of docs/errors.md: a code and the HTTP status an
// MCP face answers it with.
type contractRow struct {
	meaning string
	status  int
}

// readContract reads the table of docs/errors.md, by code.
func readContract(t *testing.T) map[int]contractRow {
	t.Helper()
	f, err := os.Open("../../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile(`^\| (-32\d{3}) \| ([^|]+) \|[^|]*\| (\d{3})`)
	out := map[int]contractRow{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := row.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		code, _ := strconv.Atoi(m[1])
		status, _ := strconv.Atoi(m[3])
		if _, dup := out[code]; dup {
			t.Errorf("docs/errors.md: code %d has two rows: one code, one meaning", code)
		}
		out[code] = contractRow{meaning: strings.TrimSpace(m[2]), status: status}
	}
	if len(out) < 8 {
		t.Fatalf("docs/errors.md: %d rows read", len(out))
	}
	return out
}

// TestErrorContract holds the hub to docs/errors.md: each way a request is
// refused answers the documented code with the documented HTTP status.
func TestErrorContract(t *testing.T) {
	contract := readContract(t)
	a := newRichUpstream(t, "alpha")
	auth := callers.NewAuth([]callers.TokenCaller{
		{Name: "full", Token: "tok-f", Ceiling: autonomy.Full},
		{Name: "listed", Token: "tok-t", Ceiling: autonomy.Full, Tools: []string{"grow_alpha"}},
	}, nil, nil)
	h := newTestHubAuth(t, []config.ServerSpec{a.spec("")}, auth)
	h.waitConnected("alpha")

	post := func(token, session, body string) (int, int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, h.url("/mcp"), strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var reply struct {
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&reply)
		if reply.Error == nil {
			return resp.StatusCode, 0, resp.Header.Get("Mcp-Session-Id")
		}
		return resp.StatusCode, reply.Error.Code, reply.Error.Message
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + mcp.LATEST_LEGACY_PROTOCOL_VERSION + `","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
	_, _, fullSession := post("tok-f", "", initialize)
	_, _, listedSession := post("tok-t", "", initialize)
	mustf(t, fullSession != "" && listedSession != "", "sessions %q %q", fullSession, listedSession)
	read := `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"docs://alpha/readme"}}`

	for _, tc := range []struct {
		name                 string
		token, session, body string
		code                 int
	}{
		{"no caller", "", "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, -32004},
		{"a bad token", "tok-nobody", "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, -32004},
		{"another caller's session", "tok-f", listedSession, read, -32001},
		{"a body that is no JSON", "tok-f", fullSession, `{"jsonrpc":`, -32700},
		{"a read the allow-list refuses", "tok-t", listedSession, read, -32003},
		{"an unknown resource", "tok-f", fullSession, `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"docs://nowhere"}}`, -32002},
	} {
		status, code, msg := post(tc.token, tc.session, tc.body)
		row, ok := contract[tc.code]
		mustf(t, ok, "%s: code %d is not in docs/errors.md", tc.name, tc.code)
		mustf(t, code == tc.code && status == row.status, "%s: %d %d %q, want %d with HTTP %d (%s)", tc.name, status, code, msg, tc.code, row.status, row.meaning)
		mustf(t, !strings.Contains(msg, "tok-"), "%s: the answer names a token: %q", tc.name, msg)
	}

	// The REST API's one error body, a refusal before the run included.
	for _, tc := range []struct {
		name, token, path string
		status, code      int
	}{
		{"a run without a caller", "", runPathOf("grow_alpha"), http.StatusUnauthorized, -32004},
		{"a run of an unknown tool", "tok-f", runPathOf("no_such_tool"), http.StatusNotFound, -32602},
	} {
		req, _ := http.NewRequest(http.MethodPost, h.url(tc.path), strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error string `json:"error"`
			Code  int    `json:"code"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		mustf(t, err == nil && resp.StatusCode == tc.status && body.Code == tc.code && body.Error != "",
			"%s: HTTP %d %+v (%v), want %d with {\"error\",\"code\":%d}", tc.name, resp.StatusCode, body, err, tc.status, tc.code)
	}
}

// runPathOf is the REST run of tool.
func runPathOf(tool string) string { return "/api/mcp/tools/" + tool + "/run" }
