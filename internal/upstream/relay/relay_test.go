package relay

import "testing"

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
