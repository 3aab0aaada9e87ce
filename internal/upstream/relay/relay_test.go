package relay

import (
	"context"
	"strconv"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// stub is a Relay told apart by its name; these tests never call it.
type stub struct {
	Relay
	name string
}

// A message outside any request's stream goes to the single request in
// flight, and to no one when there are several or when the one in flight
// takes nothing back: it must never reach a caller it may not belong to.
func TestTrackerOnlyRoutesAnUnambiguousMessage(t *testing.T) {
	var rs Tracker
	a, b := stub{name: "a"}, stub{name: "b"}
	if rs.Only() != nil {
		t.Fatal("no request in flight, yet a relay")
	}
	ra := rs.Begin(a)
	if rs.Only() != Relay(a) {
		t.Fatal("one relayed request in flight: want its relay")
	}
	plain := rs.Begin(nil)
	if rs.Only() != nil {
		t.Fatal("two requests in flight (one plain): a message was routed")
	}
	rs.End(ra)
	if rs.Only() != nil {
		t.Fatal("only a plain request in flight: a message was routed")
	}
	rs.End(plain)
	rb := rs.Begin(b)
	if rs.Only() != Relay(b) {
		t.Fatal("after the others ended, b is the only one")
	}
	rs.End(rb)

	hub, done := rs.MapProgress("srv", a, "caller-token")
	r, token, ok := rs.Progress(hub)
	if !ok || token != "caller-token" || r != Relay(a) {
		t.Fatalf("progress token %s not mapped: %v %v", hub, r, token)
	}
	hub2, done2 := rs.MapProgress("srv", b, "caller-token")
	if hub2 == hub {
		t.Fatal("two callers with the same token got the same hub token")
	}
	done()
	done2()
	if _, _, ok := rs.Progress(hub); ok {
		t.Fatal("token mapping outlived the call")
	}
}

// elicitStub answers every elicitation, accepting it.
type elicitStub struct {
	stub
}

func (elicitStub) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept}}, nil
}

// A URL-mode elicitation is remembered with the caller it went to, so that
// its notifications/elicitation/complete reaches that caller alone, once; a
// form is not (it has no completion), and the memory is bounded.
func TestTrackerRoutesElicitationComplete(t *testing.T) {
	a, b := elicitStub{stub{name: "a"}}, elicitStub{stub{name: "b"}}
	for _, tc := range []struct {
		name string
		mode string
		id   string
		want bool // Completed finds the caller
	}{
		{name: "url mode", mode: mcp.ElicitationModeURL, id: "e-1", want: true},
		{name: "form mode", mode: mcp.ElicitationModeForm, id: "e-2", want: false},
		{name: "url mode without id", mode: mcp.ElicitationModeURL, id: "", want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rs Tracker
			h := Handlers{Server: "srv", Tracker: &rs}
			req := mcp.ElicitationRequest{Params: mcp.ElicitationParams{Mode: tc.mode, ElicitationID: tc.id}}
			if _, err := h.Elicit(With(context.Background(), a), req); err != nil {
				t.Fatal(err)
			}
			_, _ = h.Elicit(With(context.Background(), b), mcp.ElicitationRequest{Params: mcp.ElicitationParams{Mode: mcp.ElicitationModeURL, ElicitationID: "of-b"}})
			r, ok := rs.Completed(tc.id)
			if ok != tc.want || (ok && r != Relay(a)) {
				t.Fatalf("Completed(%q) = %v, %v; want a: %v", tc.id, r, ok, tc.want)
			}
			if _, again := rs.Completed(tc.id); again {
				t.Errorf("Completed(%q) found a caller twice", tc.id)
			}
			if r, ok := rs.Completed("of-b"); !ok || r != Relay(b) {
				t.Errorf("Completed(of-b) = %v, %v; want b", r, ok)
			}
		})
	}

	t.Run("bounded", func(t *testing.T) {
		var rs Tracker
		for i := range maxElicited + 1 {
			rs.Elicited(strconv.Itoa(i), a)
		}
		if _, ok := rs.Completed("0"); ok {
			t.Error("the oldest of maxElicited+1 elicitations was not forgotten")
		}
		if _, ok := rs.Completed(strconv.Itoa(maxElicited)); !ok {
			t.Error("the newest elicitation was forgotten")
		}
		if n := rs.elicitations().Len(); n != maxElicited-1 {
			t.Errorf("%d remembered; want %d", n, maxElicited-1)
		}
	})
}
