package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/secrets"
	"github.com/purko-io/mcp-hub/internal/upstream/relay"
)

// outcomesServerEnv makes the test binary serve hubtest's outcome tools on
// stdin/stdout under the name in its first argument (an environment value
// is a credential, redacted wherever it appears).
const outcomesServerEnv = "MCPHUB_UPSTREAM_TEST_OUTCOMES"

// outcome is how a call ended, as far as a caller can tell.
type outcome struct {
	kind string // result, tool error, rpc error, failure
	text string // the result's text, or the error's
	code int    // an rpc error's
	data string // an rpc error's data, compacted
}

func outcomeOf(raw json.RawMessage, err error) outcome {
	var rpcErr *RPCError
	switch {
	case errors.As(err, &rpcErr):
		return outcome{kind: "rpc error", text: rpcErr.Message, code: rpcErr.Code, data: compact(rpcErr.Data)}
	case err != nil:
		return outcome{kind: "failure", text: err.Error()}
	}
	var res struct {
		IsError bool                    `json:"isError"`
		Content []struct{ Text string } `json:"content"`
	}
	if json.Unmarshal(raw, &res) != nil || len(res.Content) != 1 {
		return outcome{kind: "unreadable", text: string(raw)}
	}
	if res.IsError {
		return outcome{kind: "tool error", text: res.Content[0].Text}
	}
	return outcome{kind: "result", text: res.Content[0].Text}
}

func compact(b json.RawMessage) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// TestOneWayOut: a call leaves the hub one way, so the same upstream
// behaviour ends the call the same way on every upstream transport,
// whether the caller takes what the upstream sends during the call
// (relayed: progress, server requests) or not (the shortest way): a
// result, a tool error, the upstream's JSON-RPC error with its code,
// message and data (redacted of the server's credential), a failure that
// names the tool and server when the connection drops, and the timeout.
// And the server is asked for its tools once per connect.
func TestOneWayOut(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 400 * time.Millisecond
	type upstream struct {
		u    *hubtest.OutcomeUpstream // nil for stdio (a child process)
		spec config.ServerSpec
	}
	remote := func(u *hubtest.OutcomeUpstream) upstream {
		return upstream{u, config.ServerSpec{Name: u.Name, URL: u.URL, Transport: config.Transport(u.Transport)}}
	}
	ups := []upstream{
		remote(hubtest.StartOutcomeStreamable(t, "http")),
		remote(hubtest.StartOutcomeSSE(t, "sse")),
		remote(hubtest.StartOutcomeWebSocket(t, "ws")),
		{nil, config.ServerSpec{Name: "stdio", Command: self, Args: []string{"stdio"}, Env: map[string]string{outcomesServerEnv: "1"}, Transport: config.TransportStdio}},
	}
	redactedData := strings.ReplaceAll(compact(json.RawMessage(hubtest.RPCErrorData)), hubtest.Secret, secrets.Marker)
	for _, up := range ups {
		for _, relayed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s relayed=%v", up.spec.Name, relayed), func(t *testing.T) {
				spec := up.spec
				spec.BearerToken = config.Secret(hubtest.Secret)
				spec.Timeout = config.Duration(timeout)
				before := int64(0)
				if up.u != nil {
					before = up.u.ToolsLists()
				}
				c := startClient(t, spec, Options{BreakerFailures: 1000})
				if up.u != nil {
					if n := up.u.ToolsLists() - before; n != 1 {
						t.Errorf("tools/list asked %d times on connect, want 1", n)
					}
				}
				tool := func(kind string) string { return spec.Name + "_" + kind }
				failure := func(kind, says string) outcome {
					return outcome{kind: "failure", text: "call " + tool(kind) + " on " + spec.Name + ": " + says}
				}
				cases := []struct {
					kind string
					want outcome
				}{
					{hubtest.ToolOK, outcome{kind: "result", text: "ok from " + spec.Name}},
					{hubtest.ToolError, outcome{kind: "tool error", text: "bad input"}},
					{hubtest.ToolRPCError, outcome{kind: "rpc error", code: hubtest.RPCErrorCode,
						text: strings.ReplaceAll(hubtest.RPCErrorMessage, hubtest.Secret, secrets.Marker), data: redactedData}},
					{hubtest.ToolSleep, failure(hubtest.ToolSleep, "timed out after "+timeout.String())},
					{hubtest.ToolDrop, failure(hubtest.ToolDrop, "connection lost during the call: ")},
				}
				for _, tc := range cases {
					ctx := context.Background()
					if relayed {
						ctx = relay.With(ctx, nopRelay{"caller"})
					}
					got := outcomeOf(c.Call(ctx, jsonrpc.ToolCall{Name: tool(tc.kind), Arguments: json.RawMessage(`{"text":"x"}`)}))
					if strings.Contains(fmt.Sprint(got), hubtest.Secret) {
						t.Errorf("%s: the server's credential reached the caller: %+v", tc.kind, got)
					}
					if tc.kind == hubtest.ToolDrop {
						// What broke is the transport's to say; that it
						// broke, and where, is the same everywhere.
						if got.kind != "failure" || !strings.HasPrefix(got.text, tc.want.text) {
							t.Errorf("%s = %+v, want a failure starting %q", tc.kind, got, tc.want.text)
						}
						t.Logf("drop: %s", got.text)
						continue
					}
					if got != tc.want {
						t.Errorf("%s = %+v, want %+v", tc.kind, got, tc.want)
					}
				}
			})
		}
	}
}
