package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
)

var (
	bot   = callers.Caller{Name: "bot", Level: autonomy.Supervised}
	admin = callers.Caller{Name: "ops", Admin: true, Level: autonomy.Full}
	alice = callers.Caller{Name: "alice", Level: autonomy.Full}
)

// held starts Hold of req in the background and returns the Pending it
// registered and a channel of its decision.
func holdAsync(t *testing.T, g *Gate, req Request) (Pending, <-chan Decision) {
	t.Helper()
	before := len(g.List(admin))
	out := make(chan Decision, 1)
	go func() { out <- g.Hold(context.Background(), req) }()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if l := g.List(admin); len(l) > before {
			for _, p := range l {
				if p.Caller == req.Caller.Name && p.Tool == req.Tool {
					return p, out
				}
			}
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%s's call of %s was not held", req.Caller.Name, req.Tool)
	return Pending{}, nil
}

func decision(t *testing.T, c <-chan Decision) Decision {
	t.Helper()
	select {
	case d := <-c:
		return d
	case <-time.After(5 * time.Second):
		t.Fatal("the held call got no decision within 5s")
		return Decision{}
	}
}

// TestApprovalIsBoundToOneCall: the call waits until an approver
// approves; its caller, a caller that is not an approver and an approver
// shown other arguments are refused, each with its own error; the approval
// releases this one call, once: deciding again is refused, and another
// call of the same tool waits anew.
func TestApprovalIsBoundToOneCall(t *testing.T) {
	g := New(Options{})
	req := Request{Caller: bot, Tool: "merge_pull_request", Server: "github", Arguments: json.RawMessage(`{"pr": 7, "repo":"a/b"}`)}
	p, done := holdAsync(t, g, req)
	want, _ := ArgumentsDigest(json.RawMessage(`{"repo":"a/b","pr":7}`))
	if p.ArgumentsSHA256 != want || p.Approvers != "the hub's admins" || !p.Expires.After(p.Created) {
		t.Fatalf("pending %+v", p)
	}
	for _, tc := range []struct {
		name string
		who  callers.Caller
		sha  string
		want error
	}{
		{"its own caller, no approver", bot, "", ErrNotApprover},
		{"its own caller, made admin", callers.Caller{Name: "bot", Admin: true}, "", ErrOwnCall},
		{"not an approver", alice, "", ErrNotApprover},
		{"other arguments", admin, strings.Repeat("0", 64), ErrChanged},
		{"no such call", admin, "", ErrUnknown},
	} {
		id := p.ID
		if tc.want == ErrUnknown {
			// Another first character: "X" was p.ID's own in 1 run of 32.
			id = "X" + p.ID[1:]
			if p.ID[0] == 'X' {
				id = "Y" + p.ID[1:]
			}
		}
		if _, err := g.Decide(tc.who, id, true, "", tc.sha); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	select {
	case d := <-done:
		t.Fatalf("the call was released by a refused decision: %+v", d)
	case <-time.After(20 * time.Millisecond):
	}
	if _, err := g.Decide(admin, p.ID, true, "", p.ArgumentsSHA256); err != nil {
		t.Fatal(err)
	}
	d := decision(t, done)
	if d.Verdict != Approved || d.By != "ops" || d.ID != p.ID {
		t.Fatalf("decision %+v", d)
	}
	if !strings.HasPrefix(d.Summary(), "approved by ops after ") {
		t.Errorf("summary %q", d.Summary())
	}
	if _, err := g.Decide(admin, p.ID, true, "", ""); !errors.Is(err, ErrDecided) {
		t.Errorf("a replayed approval: %v, want %v", err, ErrDecided)
	}
	if l := g.List(admin); len(l) != 0 {
		t.Fatalf("still listed: %+v", l)
	}
	p2, done2 := holdAsync(t, g, req)
	if p2.ID == p.ID {
		t.Fatal("a second call of the same tool got the first one's approval id")
	}
	if _, err := g.Decide(admin, p2.ID, false, "not on Fridays", ""); err != nil {
		t.Fatal(err)
	}
	if d := decision(t, done2); d.Verdict != Denied || d.Reason != "not on Fridays" || d.By != "ops" {
		t.Fatalf("denial %+v", d)
	}
}

// TestHeldCallEnds: a call nobody decides expires (and an approval after
// that is refused as expired), one whose caller goes away is canceled, and
// Close ends every wait and refuses new ones.
func TestHeldCallEnds(t *testing.T) {
	g := New(Options{Timeout: 50 * time.Millisecond})
	p, done := holdAsync(t, g, Request{Caller: bot, Tool: "delete_file", Server: "fs"})
	if d := decision(t, done); d.Verdict != Expired || !strings.Contains(d.Reason, "no decision within 50ms") {
		t.Fatalf("expiry %+v", d)
	}
	if _, err := g.Decide(admin, p.ID, true, "", ""); !errors.Is(err, ErrExpired) {
		t.Errorf("approval after expiry: %v", err)
	}

	g = New(Options{})
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan Decision, 1)
	go func() { out <- g.Hold(ctx, Request{Caller: bot, Tool: "delete_file", Server: "fs"}) }()
	for len(g.List(admin)) == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if d := decision(t, out); d.Verdict != Canceled {
		t.Fatalf("caller gone: %+v", d)
	}

	_, done = holdAsync(t, g, Request{Caller: bot, Tool: "delete_file", Server: "fs"})
	g.Close()
	if d := decision(t, done); d.Verdict != Canceled || !strings.Contains(d.Reason, "shutting down") {
		t.Fatalf("close %+v", d)
	}
	if d := g.Hold(context.Background(), Request{Caller: bot, Tool: "x"}); d.Verdict != Canceled {
		t.Fatalf("hold after close %+v", d)
	}
}

// TestOneCallerCannotBuryTheApprovers: a caller holds at most
// maxPendingPerCaller calls; the next is refused at once, and another
// caller's call is still held.
func TestOneCallerCannotBuryTheApprovers(t *testing.T) {
	g := New(Options{})
	defer g.Close()
	for i := range maxPendingPerCaller {
		holdAsync(t, g, Request{Caller: bot, Tool: fmt.Sprintf("write_%d", i), Server: "s"})
	}
	d := g.Hold(context.Background(), Request{Caller: bot, Tool: "one_more", Server: "s"})
	if d.Verdict != Denied || d.By != "" || !strings.Contains(d.Reason, "already wait for approval") {
		t.Fatalf("over the limit: %+v", d)
	}
	holdAsync(t, g, Request{Caller: alice, Tool: "write_x", Server: "s"})
}

func TestArgumentsDigest(t *testing.T) {
	d := func(s string) string {
		t.Helper()
		v, err := ArgumentsDigest(json.RawMessage(s))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if d(`{"a":1,"b":[1,2]}`) != d(` { "b" : [1, 2], "a": 1 } `) {
		t.Error("spacing or member order changed the digest")
	}
	if d(``) != d(`{}`) || d(`null`) != d(`{}`) {
		t.Error("no arguments and {} differ")
	}
	for _, other := range []string{`{"a":2,"b":[1,2]}`, `{"a":1,"b":[2,1]}`, `{"a":"1","b":[1,2]}`, `{"a":1.0,"b":[1,2]}`} {
		if d(other) == d(`{"a":1,"b":[1,2]}`) {
			t.Errorf("%s has the digest of another call's arguments", other)
		}
	}
	if d(`{"n":12345678901234567890123}`) == d(`{"n":12345678901234567890124}`) {
		t.Error("large numbers were rounded into one digest")
	}
	if _, err := ArgumentsDigest(json.RawMessage(`{"a":`)); err == nil {
		t.Error("broken arguments got a digest")
	}
}

func TestMayApprove(t *testing.T) {
	anon := callers.Anonymous("10.0.0.1:5000", autonomy.Full)
	for _, tc := range []struct {
		name      string
		approvers []string
		who       callers.Caller
		want      bool
	}{
		{"admin by default", nil, admin, true},
		{"others not by default", nil, alice, false},
		{"named", []string{"alice"}, alice, true},
		{"glob", []string{"corp/*@example.com"}, callers.Caller{Name: "corp/alice@example.com"}, true},
		{"an admin not named", []string{"alice"}, admin, false},
		{"an OAuth grant's approver", []string{"alice"}, callers.Caller{Name: "corp/bob", Approver: true}, true},
		{"anonymous never by glob", []string{"*"}, anon, false},
		{"an Agent's pods", []string{"agent ops/release-captain (pod */*)"}, callers.Caller{Name: "agent ops/release-captain (pod ops/captain-7f9c)"}, true},
		{"another Agent", []string{"agent ops/release-captain (pod */*)"}, callers.Caller{Name: "agent ops/deployer (pod ops/deployer-1)"}, false},
	} {
		if got := New(Options{Approvers: tc.approvers}).MayApprove(tc.who); got != tc.want {
			t.Errorf("%s: %v", tc.name, got)
		}
	}
}

// TestWaitingCallerHearsProgress: a caller that gave a progress token
// hears at once that its call waits, and again while it does.
func TestWaitingCallerHearsProgress(t *testing.T) {
	g := New(Options{})
	g.every = 10 * time.Millisecond
	var heard atomic.Int32
	var first atomic.Value
	p, done := holdAsync(t, g, Request{Caller: bot, Tool: "delete_file", Server: "fs", Progress: func(waited time.Duration, p Pending) {
		if heard.Add(1) == 1 {
			first.Store(p.ID)
		}
	}})
	for heard.Load() < 3 {
		time.Sleep(5 * time.Millisecond)
	}
	if first.Load() != p.ID {
		t.Errorf("progress named %v, the call is %s", first.Load(), p.ID)
	}
	if _, err := g.Decide(admin, p.ID, true, "", ""); err != nil {
		t.Fatal(err)
	}
	decision(t, done)
}

// TestAskedInBand: a caller asked through its own client decides its own
// call; a client that cannot be asked leaves it to the approvers.
func TestAskedInBand(t *testing.T) {
	g := New(Options{})
	yes := func(context.Context, Pending) (bool, string, error) { return true, "", nil }
	d := g.Hold(context.Background(), Request{Caller: bot, Tool: "delete_file", Server: "fs", Ask: yes})
	if d.Verdict != Approved || !d.InBand || d.By != "bot" {
		t.Fatalf("in band: %+v", d)
	}
	no := func(context.Context, Pending) (bool, string, error) { return false, "wrong branch", nil }
	if d := g.Hold(context.Background(), Request{Caller: bot, Tool: "delete_file", Server: "fs", Ask: no}); d.Verdict != Denied || d.Reason != "wrong branch" {
		t.Fatalf("declined in band: %+v", d)
	}
	cannot := func(context.Context, Pending) (bool, string, error) {
		return false, "", errors.New("client has no elicitation")
	}
	p, done := holdAsync(t, g, Request{Caller: bot, Tool: "delete_file", Server: "fs", Ask: cannot})
	select {
	case d := <-done:
		t.Fatalf("a client that could not be asked decided: %+v", d)
	case <-time.After(20 * time.Millisecond):
	}
	if _, err := g.Decide(admin, p.ID, true, "", ""); err != nil {
		t.Fatal(err)
	}
	if d := decision(t, done); d.Verdict != Approved || d.InBand || d.By != "ops" {
		t.Fatalf("out of band after all: %+v", d)
	}
}
