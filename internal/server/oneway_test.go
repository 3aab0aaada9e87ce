package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/internal/pipeline"
	"github.com/purko-io/mcp-hub/internal/ratelimit"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/secrets"
)

// An answer is how a call ended, as its caller reads it on any face.
type answer struct {
	kind string // result, tool error, rpc error, failure (an "ERROR: ..." result)
	text string // the result's text without "ERROR: ", or the error's message
	code int    // an rpc error's
	data string // an rpc error's data, compacted
}

// answerOf reads a face's reply to a tools/call.
func answerOf(t *testing.T, r faceReply) answer {
	t.Helper()
	if r.Error != nil {
		return answer{kind: "rpc error", text: r.Error.Message, code: r.Error.Code, data: compactJSON(r.Error.Data)}
	}
	var res struct {
		IsError bool                    `json:"isError"`
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || len(res.Content) != 1 {
		t.Fatalf("reply %s is neither a result with one text nor an error (%v)", r.Result, err)
	}
	text := res.Content[0].Text
	switch {
	case res.IsError && strings.HasPrefix(text, "ERROR: "):
		return answer{kind: "failure", text: strings.TrimPrefix(text, "ERROR: ")}
	case res.IsError:
		return answer{kind: "tool error", text: text}
	}
	return answer{kind: "result", text: text}
}

func compactJSON(b json.RawMessage) string {
	var v any
	if len(b) == 0 || json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// TestOneWayOutEveryFace: the same upstream behaviour reaches the caller
// as the same answer on every face of the hub and over every upstream
// transport, and is audited as the same outcome: a result; a tool error;
// the upstream's JSON-RPC error, code, message and data kept (redacted of
// the server's credential), audited rpc_error; a dropped connection and
// the timeout, each an "ERROR: ..." result that names the tool and the
// server, audited error. REST answers each in its HTTP way: 200 with a
// result or a tool error, 502 with the JSON-RPC error or the failure.
// Each upstream is asked for its tools once per connect.
func TestOneWayOutEveryFace(t *testing.T) {
	const timeout = 400 * time.Millisecond
	ups := []*hubtest.OutcomeUpstream{
		hubtest.StartOutcomeStreamable(t, "http"),
		hubtest.StartOutcomeSSE(t, "sse"),
		hubtest.StartOutcomeWebSocket(t, "ws"),
	}
	var specs []config.ServerSpec
	for _, u := range ups {
		specs = append(specs, config.ServerSpec{Name: u.Name, URL: u.URL, Transport: config.Transport(u.Transport),
			BearerToken: config.Secret(hubtest.Secret), Timeout: config.Duration(timeout)})
	}
	audit := &lockedBuffer{}
	tokens := map[string]*ratelimit.Limits{}
	for _, n := range faceCallers {
		tokens[n] = nil
	}
	h := newTestHubLog(t, specs, hubOpts{Auth: limitedTokens(tokens)}, audit, func(o *registry.Options) { o.Upstream.BreakerFailures = 1000 })
	h.waitConnected("http", "sse", "ws")
	for _, u := range ups {
		if n := u.ToolsLists(); n != 1 {
			t.Errorf("%s: tools/list asked %d times on connect, want 1", u.Name, n)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	faces := h.everyFace(ctx, t)

	redact := func(s string) string { return strings.ReplaceAll(s, hubtest.Secret, secrets.Marker) }
	for _, f := range faces {
		for _, u := range ups {
			t.Run(f.name+" to "+u.Transport, func(t *testing.T) {
				failure := func(kind, says string) answer {
					return answer{kind: "failure", text: "call " + u.Tool(kind) + " on " + u.Name + ": " + says}
				}
				for _, tc := range []struct {
					kind    string
					want    answer
					audited string
					status  int // REST's
				}{
					{hubtest.ToolOK, answer{kind: "result", text: "ok from " + u.Name}, pipeline.OK, http.StatusOK},
					{hubtest.ToolError, answer{kind: "tool error", text: "bad input"}, pipeline.ToolError, http.StatusOK},
					{hubtest.ToolRPCError, answer{kind: "rpc error", code: hubtest.RPCErrorCode, text: redact(hubtest.RPCErrorMessage),
						data: compactJSON(json.RawMessage(redact(hubtest.RPCErrorData)))}, pipeline.RPCError, http.StatusBadGateway},
					{hubtest.ToolSleep, failure(hubtest.ToolSleep, "timed out after "+timeout.String()), pipeline.Error, http.StatusBadGateway},
					{hubtest.ToolDrop, failure(hubtest.ToolDrop, "connection lost during the call: "), pipeline.Error, http.StatusBadGateway},
				} {
					tool := u.Tool(tc.kind)
					audits := len(audit.auditLines(t))
					r := f.call(t, tool)
					got := answerOf(t, r)
					if strings.Contains(fmt.Sprint(got), hubtest.Secret) {
						t.Errorf("%s: the server's credential reached the caller: %+v", tc.kind, got)
					}
					if tc.kind == hubtest.ToolDrop {
						// What broke is the transport's to say; that it
						// broke, and where, is the same everywhere.
						if got.kind != tc.want.kind || !strings.HasPrefix(got.text, tc.want.text) {
							t.Errorf("%s = %+v, want a failure starting %q", tc.kind, got, tc.want.text)
						}
					} else if got != tc.want {
						t.Errorf("%s = %+v, want %+v", tc.kind, got, tc.want)
					}
					if f.caller == "rest" && r.status != tc.status {
						t.Errorf("REST answered %s with HTTP %d, want %d", tc.kind, r.status, tc.status)
					}
					var line map[string]any
					waitFor(t, "the audit line of "+tool, func() bool {
						if lines := audit.auditLines(t); len(lines) > audits {
							line = lines[len(lines)-1]
						}
						return line != nil
					})
					if line["tool"] != tool || line["caller"] != f.caller || line["outcome"] != tc.audited {
						t.Errorf("%s audited as %v by %v: %v, want %s", tool, line["tool"], line["caller"], line["outcome"], tc.audited)
					}
					if tc.kind == hubtest.ToolDrop {
						waitCallable(t, h, u)
					}
				}
			})
		}
	}
}

// waitCallable waits until u, reconnected after a drop, answers a call.
func waitCallable(t *testing.T, h *testHub, u *hubtest.OutcomeUpstream) {
	t.Helper()
	waitFor(t, u.Name+" back", func() bool {
		rt, err := h.reg.Lookup(u.Tool(hubtest.ToolOK))
		if err != nil {
			return false
		}
		call := registry.Call{}
		call.Name = rt.Original
		_, err = rt.Backend.Call(context.Background(), call)
		return err == nil
	})
}
