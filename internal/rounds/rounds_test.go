package rounds

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/pipeline"
)

func TestTakes(t *testing.T) {
	caps := map[string]json.RawMessage{jsonrpc.MetaClientCapabilities: json.RawMessage(`{"elicitation":{}}`)}
	for _, tc := range []struct {
		name string
		call jsonrpc.ToolCall
		want bool
	}{
		{"declares nothing", jsonrpc.ToolCall{Name: "x"}, false},
		{"declares elicitation", jsonrpc.ToolCall{Name: "x", Meta: caps}, true},
		{"a round of the hub's", jsonrpc.ToolCall{Name: "x", RequestState: json.RawMessage(`"mhr1.abc"`), InputResponses: json.RawMessage(`{}`)}, true},
		{"a round of an upstream's", jsonrpc.ToolCall{Name: "x", Meta: caps, RequestState: json.RawMessage(`"upstream-state"`)}, false},
	} {
		if got := Takes(&tc.call); got != tc.want {
			t.Errorf("%s: Takes = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// asking is a call whose upstream asks one elicitation and answers with
// what the caller said; cancelled is closed when its context ends first.
func asking(cancelled chan struct{}) Run {
	return func(ctx context.Context, call jsonrpc.ToolCall, ask Ask) pipeline.Result {
		res, err := Elicit(ctx, ask, mcp.ElicitationRequest{Params: mcp.ElicitationParams{Mode: mcp.ElicitationModeURL,
			URL: "https://example.com/consent", Message: "consent", ElicitationID: "up-1"}})
		if err != nil {
			close(cancelled)
			return pipeline.Result{Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}}
		}
		return pipeline.Result{Result: json.RawMessage(`{"content":[{"type":"text","text":"` + string(res.Action) + ` ` + call.Name + `"}]}`)}
	}
}

func round(t *testing.T, res json.RawMessage) (state, key string, params map[string]any) {
	t.Helper()
	var got struct {
		ResultType    string `json:"resultType"`
		RequestState  string `json:"requestState"`
		InputRequests map[string]struct {
			Method string         `json:"method"`
			Params map[string]any `json:"params"`
		} `json:"inputRequests"`
	}
	if err := json.Unmarshal(res, &got); err != nil || got.ResultType != "input_required" || len(got.InputRequests) != 1 || !strings.HasPrefix(got.RequestState, statePrefix) {
		t.Fatalf("round = %s; want input_required with one request and the hub's state", res)
	}
	for k, r := range got.InputRequests {
		if r.Method != string(mcp.MethodElicitationCreate) {
			t.Fatalf("input request %s: %s", k, r.Method)
		}
		return got.RequestState, k, r.Params
	}
	return "", "", nil
}

func TestRounds(t *testing.T) {
	ctx := context.Background()
	first := &jsonrpc.ToolCall{Name: "consent", Meta: map[string]json.RawMessage{jsonrpc.MetaClientCapabilities: json.RawMessage(`{"elicitation":{}}`)}}
	again := func(state, answers string) *jsonrpc.ToolCall {
		return &jsonrpc.ToolCall{Name: "consent", RequestState: mustJSON(state), InputResponses: json.RawMessage(answers)}
	}

	t.Run("a round answered", func(t *testing.T) {
		r := New(time.Minute, "")
		res, err := r.Serve(ctx, "alice", first, asking(make(chan struct{})))
		if err != nil {
			t.Fatal(err)
		}
		state, key, params := round(t, res)
		if params["mode"] != "url" || params["url"] != "https://example.com/consent" || params["elicitationId"] != nil {
			t.Errorf("the elicitation put to the caller = %v; want mode url and its url, no elicitationId", params)
		}
		if _, err := r.Serve(ctx, "bob", again(state, `{"`+key+`":{"action":"accept"}}`), nil); jsonrpc.AsError(err).Code != jsonrpc.CodeInvalidParams {
			t.Errorf("another caller's round = %v; want -32602", err)
		}
		if _, err := r.Serve(ctx, "alice", again(state, `{"`+key+`":{"action":7}}`), nil); jsonrpc.AsError(err).Code != jsonrpc.CodeInvalidParams {
			t.Errorf("an unreadable answer = %v; want -32602", err)
		}
		res, err = r.Serve(ctx, "alice", again(state, `{"`+key+`":{"action":"accept"}}`), nil)
		if err != nil || !strings.Contains(string(res), "accept consent") {
			t.Fatalf("the answered round = %s %v; want the call's result", res, err)
		}
		if _, err := r.Serve(ctx, "alice", again(state, `{}`), nil); jsonrpc.AsError(err).Code != jsonrpc.CodeInvalidParams {
			t.Errorf("a round of an ended call = %v; want -32602", err)
		}
	})

	t.Run("a call that asks nothing", func(t *testing.T) {
		res, err := New(time.Minute, "").Serve(ctx, "alice", first, func(context.Context, jsonrpc.ToolCall, Ask) pipeline.Result {
			return pipeline.Result{Result: json.RawMessage(`{"content":[]}`)}
		})
		if err != nil || string(res) != `{"content":[]}` {
			t.Fatalf("= %s %v", res, err)
		}
	})

	t.Run("no round within the wait", func(t *testing.T) {
		cancelled := make(chan struct{})
		r := New(50*time.Millisecond, "")
		res, err := r.Serve(ctx, "alice", first, asking(cancelled))
		if err != nil {
			t.Fatal(err)
		}
		state, _, _ := round(t, res)
		select {
		case <-cancelled:
		case <-time.After(5 * time.Second):
			t.Fatal("the call waits on after its wait")
		}
		if _, err := r.Serve(ctx, "alice", again(state, `{}`), nil); jsonrpc.AsError(err).Code != jsonrpc.CodeInvalidParams {
			t.Errorf("a round after the wait = %v; want -32602", err)
		}
	})

	t.Run("the caller goes away", func(t *testing.T) {
		cancelled := make(chan struct{})
		gone, cancel := context.WithCancel(ctx)
		cancel()
		_, err := New(time.Minute, "").Serve(gone, "alice", first, func(ctx context.Context, call jsonrpc.ToolCall, ask Ask) pipeline.Result {
			<-ctx.Done()
			close(cancelled)
			return pipeline.Result{}
		})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("= %v; want the caller's cancellation", err)
		}
		select {
		case <-cancelled:
		case <-time.After(5 * time.Second):
			t.Fatal("the call runs on without its caller")
		}
	})
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// TestElsewhere: a round of a call another replica keeps is told from one
// kept here, and its state names that replica (Maker), so that it is
// passed on to it alone.
func TestElsewhere(t *testing.T) {
	const maker = "ABCDEFGHIJKLMNOPQRSTUVWXYZ" // a peers id
	r := New(time.Minute, maker)
	first := &jsonrpc.ToolCall{Name: "consent", Meta: map[string]json.RawMessage{jsonrpc.MetaClientCapabilities: json.RawMessage(`{"elicitation":{}}`)}}
	res, err := r.Serve(context.Background(), "alice", first, asking(make(chan struct{})))
	if err != nil {
		t.Fatal(err)
	}
	state, _, _ := round(t, res)
	for _, tc := range []struct {
		name string
		call jsonrpc.ToolCall
		want bool
	}{
		{"a first round", *first, false},
		{"a round kept here", jsonrpc.ToolCall{RequestState: mustJSON(state)}, false},
		{"a round kept elsewhere", jsonrpc.ToolCall{RequestState: mustJSON(statePrefix + "other")}, true},
		{"an upstream's round", jsonrpc.ToolCall{RequestState: mustJSON("upstream-state")}, false},
	} {
		if got := r.Elsewhere(&tc.call); got != tc.want {
			t.Errorf("%s: Elsewhere = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := Maker(&jsonrpc.ToolCall{RequestState: mustJSON(state)}); got != maker {
		t.Errorf("the maker of a round kept here: %q, want %q", got, maker)
	}
	if got := Maker(&jsonrpc.ToolCall{RequestState: mustJSON(statePrefix + "other")}); got != "" {
		t.Errorf("the maker of a state that names none: %q", got)
	}
}

func TestClose(t *testing.T) {
	r := New(time.Hour, "")
	cancelled := make(chan struct{})
	first := &jsonrpc.ToolCall{Name: "consent", Meta: map[string]json.RawMessage{jsonrpc.MetaClientCapabilities: json.RawMessage(`{"elicitation":{}}`)}}
	res, err := r.Serve(context.Background(), "alice", first, asking(cancelled))
	if err != nil {
		t.Fatal(err)
	}
	state, _, _ := round(t, res)
	r.Close()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("a kept call runs on after Close")
	}
	if _, err := r.Serve(context.Background(), "alice", &jsonrpc.ToolCall{Name: "consent", RequestState: mustJSON(state), InputResponses: json.RawMessage(`{}`)}, nil); jsonrpc.AsError(err).Code != jsonrpc.CodeInvalidParams {
		t.Errorf("a round after Close = %v; want -32602", err)
	}
}
