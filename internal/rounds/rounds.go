// Package rounds brings an upstream's server requests (elicitation, URL
// mode included, sampling, roots) to a 2026-07-28 caller, who takes them
// only as the result of its call: resultType "input_required", with the
// requests in inputRequests and a requestState, and who answers by calling
// again with inputResponses and that requestState (multi round-trip
// requests). A 2026-07-28 upstream does the same itself and its rounds
// pass through the hub as they are; an upstream on a session (2025-11-25
// and older) sends server requests during the call instead. For such a
// call the hub keeps the call running between the caller's rounds: the
// upstream's request waits for the answer of the next round, the call
// goes on, and the caller gets its result, or the next requests. The
// call is one call: decided, limited and recorded once, as any.
//
// A kept call lives on the replica that runs it, for one caller; its
// requestState is a random handle ("mhr1.", the replica's id with peers,
// and 128 bits) that names it. A round that reaches another replica is
// passed on to the one that keeps it (Elsewhere, Maker). A round that does not come within the wait ends the call
// (cancelled: the upstream's request fails), as does a caller who goes
// away during a round.
package rounds

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/peers"
	"github.com/purko-io/mcp-hub/internal/pipeline"
)

// statePrefix starts the requestState of a call the hub keeps; any other
// is an upstream's, passed on to it.
const statePrefix = "mhr1."

// DefaultWait is how long a kept call waits for its caller's next round.
const DefaultWait = 5 * time.Minute

// maxKept bounds the calls kept at once on a replica (a caller that never
// comes back costs one until the wait ends).
const maxKept = 4096

// Rounds keeps the calls that wait for their callers' next round.
type Rounds struct {
	wait time.Duration
	// maker names this replica in each state (peers.Tag): a round that
	// lands on another replica goes to this one alone (Maker).
	maker string
	mu    sync.Mutex
	kept  map[string]*kept
}

// New keeps calls for wait between rounds (DefaultWait when 0). maker is
// this replica's id among its peers ("" without peers: peers.Self).
func New(wait time.Duration, maker string) *Rounds {
	if wait <= 0 {
		wait = DefaultWait
	}
	return &Rounds{wait: wait, maker: maker, kept: map[string]*kept{}}
}

// Maker is the id of the replica that keeps the call a round (call) is
// of, "" when its state names none.
func Maker(call *jsonrpc.ToolCall) string {
	state, ours := stateOf(call)
	if !ours {
		return ""
	}
	return peers.HolderOf(state[len(statePrefix):])
}

// Takes reports whether call is one Serve answers: a 2026-07-28 caller's
// that takes input requests (it declares sampling, elicitation or roots,
// or answers a round), and is not a round of an upstream's own.
func Takes(call *jsonrpc.ToolCall) bool {
	if !call.TakesInput() {
		return false
	}
	_, ours := stateOf(call)
	return call.RequestState == nil || ours
}

// stateOf is call's requestState, and whether it is the hub's.
func stateOf(call *jsonrpc.ToolCall) (string, bool) {
	var state string
	if call.RequestState == nil || json.Unmarshal(call.RequestState, &state) != nil {
		return "", false
	}
	return state, strings.HasPrefix(state, statePrefix)
}

// Ask puts a server request to the caller as an input request of its
// call's next round and returns the caller's answer.
type Ask func(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error)

// Run runs call, whose upstream's server requests go to ask.
type Run func(ctx context.Context, call jsonrpc.ToolCall, ask Ask) pipeline.Result

// Serve answers call (Takes) of the caller of key: a first round starts
// run, a later one (its requestState the hub's) gives the kept call the
// caller's answers; either way the answer is the call's result or its
// error, or the requests its upstream asks now.
func (r *Rounds) Serve(ctx context.Context, key string, call *jsonrpc.ToolCall, run Run) (json.RawMessage, error) {
	var k *kept
	if call.RequestState != nil {
		state, _ := stateOf(call)
		if k = r.take(state, key); k == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
				"tools/call %s: requestState %q names no call of yours waiting for input (it ended, its wait of %s passed, or another replica keeps it)", call.Name, state, r.wait)}
		}
		if err := k.answer(call.InputResponses); err != nil {
			r.put(k) // the call waits on: a round it can read may follow
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("tools/call %s: inputResponses: %v", call.Name, err)}
		}
	} else {
		var err error
		if k, err = r.start(ctx, key, *call, run); err != nil {
			return nil, err
		}
	}
	select {
	case res := <-k.ended:
		return res.Result, resultErr(res)
	case <-k.asked:
		k.collect()
		r.put(k)
		return k.inputRequired()
	case <-ctx.Done():
		k.stop() // the caller went away during the round
		return nil, ctx.Err()
	}
}

func resultErr(res pipeline.Result) error {
	if res.Error != nil {
		return res.Error
	}
	return nil
}

// start runs a first round's call, kept under a new state.
func (r *Rounds) start(first context.Context, key string, call jsonrpc.ToolCall, run Run) (*kept, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	state := base64.RawURLEncoding.EncodeToString(b[:])
	if r.maker != "" {
		state = r.maker + "." + state
	}
	k := &kept{state: statePrefix + state, key: key,
		asked: make(chan struct{}, 1), ended: make(chan pipeline.Result, 1), pending: map[string]*asked{}}
	r.mu.Lock()
	n := len(r.kept)
	r.mu.Unlock()
	if n >= maxKept {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%d calls wait for their callers' input on this replica: try again later", n)}
	}
	// The call outlives the caller's request of each round: the first
	// one's values (who calls, the revision, the trace) with its own end,
	// stop; and its own copy of what the request's buffers hold.
	ctx, cancel := context.WithCancel(context.WithoutCancel(first))
	k.cancel = cancel
	call.Arguments = bytes.Clone(call.Arguments)
	meta := make(map[string]json.RawMessage, len(call.Meta))
	for m, v := range call.Meta {
		meta[m] = bytes.Clone(v)
	}
	call.Meta, call.Task, call.InputResponses, call.RequestState = meta, nil, nil, nil
	go func() { k.ended <- run(ctx, call, k.ask) }() // owned by k: stop ends it
	return k, nil
}

// take removes the kept call of state if it is key's, stopping its wait.
func (r *Rounds) take(state, key string) *kept {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.kept[state]
	if k == nil || k.key != key {
		return nil
	}
	delete(r.kept, state)
	k.timer.Stop()
	return k
}

// put keeps k until its caller's next round, or the wait's end.
func (r *Rounds) put(k *kept) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kept[k.state] = k
	k.timer = time.AfterFunc(r.wait, func() {
		if r.take(k.state, k.key) != nil {
			k.stop()
		}
	})
}

// kept is one call between rounds.
type kept struct {
	state, key string
	cancel     context.CancelFunc
	timer      *time.Timer
	ended      chan pipeline.Result
	asked      chan struct{} // a request was asked since the last round

	mu      sync.Mutex
	next    int
	waiting []*asked          // asked, not yet put to the caller
	pending map[string]*asked // put to the caller, not answered, by key
}

// asked is one server request of the upstream's, waiting for its answer.
type asked struct {
	req    mcp.InputRequest
	answer chan mcp.InputResponse
}

func (k *kept) stop() { k.cancel() }

// ask puts req to the caller at its next round and waits for the answer.
func (k *kept) ask(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	a := &asked{req: req, answer: make(chan mcp.InputResponse, 1)}
	k.mu.Lock()
	k.waiting = append(k.waiting, a)
	k.mu.Unlock()
	select {
	case k.asked <- struct{}{}:
	default: // already signalled
	}
	select {
	case res := <-a.answer:
		return res, nil
	case <-ctx.Done():
		return mcp.InputResponse{}, fmt.Errorf("the 2026-07-28 caller did not answer %s: %w", req.Method, ctx.Err())
	}
}

// collect gives each request asked since the last round its key.
func (k *kept) collect() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, a := range k.waiting {
		k.next++
		k.pending[fmt.Sprintf("r%d", k.next)] = a
	}
	k.waiting = nil
}

// inputRequired is the answer of a round that ends with requests.
func (k *kept) inputRequired() (json.RawMessage, error) {
	k.mu.Lock()
	reqs := make(mcp.InputRequests, len(k.pending))
	for key, a := range k.pending {
		reqs[key] = a.req
	}
	k.mu.Unlock()
	return json.Marshal(mcp.NewInputRequiredResult(reqs, k.state))
}

// answer gives the pending requests the caller's answers (raw
// inputResponses); one it does not answer stays pending.
func (k *kept) answer(raw json.RawMessage) error {
	var answers mcp.InputResponses
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &answers); err != nil {
			return err
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	reqs := make(mcp.InputRequests, len(k.pending))
	for key, a := range k.pending {
		reqs[key] = a.req
	}
	if err := answers.DecodeFor(reqs); err != nil {
		return err
	}
	for key, res := range answers {
		if a := k.pending[key]; a != nil {
			a.answer <- res
			delete(k.pending, key)
		}
	}
	if len(k.pending) > 0 {
		select { // the unanswered are asked again at once
		case k.asked <- struct{}{}:
		default:
		}
	}
	return nil
}

// Elicit puts an elicitation to the caller through ask. A URL-mode
// request goes without its elicitationId: 2026-07-28 has none, and the
// round's answer is this request's.
func Elicit(ctx context.Context, ask Ask, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	p := req.Params
	p.ElicitationID = ""
	res, err := ask(ctx, mcp.NewElicitationInputRequest(p))
	if err != nil || res.Elicitation == nil {
		return nil, orNoAnswer(err, mcp.MethodElicitationCreate)
	}
	return res.Elicitation, nil
}

// Sample puts a sampling request to the caller through ask.
func Sample(ctx context.Context, ask Ask, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	res, err := ask(ctx, mcp.NewSamplingInputRequest(req.CreateMessageParams))
	if err != nil || res.Sampling == nil {
		return nil, orNoAnswer(err, mcp.MethodSamplingCreateMessage)
	}
	return res.Sampling, nil
}

// Roots asks the caller for its roots through ask.
func Roots(ctx context.Context, ask Ask) (*mcp.ListRootsResult, error) {
	res, err := ask(ctx, mcp.NewRootsInputRequest())
	if err != nil || res.Roots == nil {
		return nil, orNoAnswer(err, mcp.MethodListRoots)
	}
	return res.Roots, nil
}

func orNoAnswer(err error, method mcp.MCPMethod) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("the 2026-07-28 caller's answer to %s is not one", method)
}

// Elsewhere reports whether call is a round of a call this replica does
// not keep: another replica's (or none's). A face passes it on to its
// peers, and the one that keeps the call answers it.
func (r *Rounds) Elsewhere(call *jsonrpc.ToolCall) bool {
	state, ours := stateOf(call)
	if !ours {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, kept := r.kept[state]
	return !kept
}

// Close ends every call kept between rounds (the hub stops): the
// upstream's request fails, and its caller's next round is answered
// -32602. Calls in a round end with their callers' requests.
func (r *Rounds) Close() {
	r.mu.Lock()
	all := r.kept
	r.kept = map[string]*kept{}
	r.mu.Unlock()
	for _, k := range all {
		k.timer.Stop()
		k.stop()
	}
}
