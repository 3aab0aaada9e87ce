package callfeed

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
)

func mustf(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Fatalf(format, args...)
	}
}

func TestFeedKeepsTheLastCallsInOrder(t *testing.T) {
	f := New(100)
	if calls, seq, _ := f.since(0); calls != nil || seq != 0 {
		t.Fatalf("empty feed: %v, seq %d", calls, seq)
	}
	for i := range recentCalls + 50 {
		f.Add(Call{Tool: "t" + string(rune('a'+i%26)), Decision: "allowed", Outcome: "ok", Duration: time.Duration(i) * time.Millisecond})
	}
	calls, seq, _ := f.since(0)
	if len(calls) != recentCalls || seq != recentCalls+50 {
		t.Fatalf("got %d calls, seq %d; want the last %d of %d", len(calls), seq, recentCalls, recentCalls+50)
	}
	for i, c := range calls {
		if want := uint64(51 + i); c.Seq != want {
			t.Fatalf("call %d has seq %d, want %d (oldest first)", i, c.Seq, want)
		}
	}
	if last := calls[len(calls)-1]; last.DurationMs != float64(recentCalls+49) {
		t.Fatalf("newest call lasted %v ms, want %d", last.DurationMs, recentCalls+49)
	}
	if tail, _, _ := f.since(seq - 3); len(tail) != 3 || tail[0].Seq != seq-2 {
		t.Fatalf("since(seq-3) = %+v, want the 3 newest", tail)
	}
	if none, _, _ := f.since(seq); none != nil {
		t.Fatalf("since(seq) = %+v, want nothing", none)
	}
	f.Add(Call{Tool: strings.Repeat("x", 1<<20)})
	if tail, _, _ := f.since(seq); len(tail[0].Tool) != maxFeedName {
		t.Fatalf("a 1 MiB tool name is kept as %d bytes, want %d", len(tail[0].Tool), maxFeedName)
	}
}

func TestFeedAddAllocatesNothing(t *testing.T) {
	f := New(100)
	_, release := f.subscribe()
	defer release()
	e := Call{Time: time.Now(), Caller: "c", Level: "full", Tool: "echo", Server: "s", Decision: "allowed", Outcome: "ok"}
	if n := testing.AllocsPerRun(1000, func() { f.Add(e) }); n != 0 {
		t.Fatalf("feed.add allocates %v times per call, want 0", n)
	}
}

// TestEventStreamsAreCapped: a stream over the cap is refused with a
// Retry-After, before it takes anything.
func TestEventStreamsAreCapped(t *testing.T) {
	f := New(100)
	f.streams = maxEventStreams
	r := httptest.NewRequest(http.MethodGet, "/api/events", nil)
	r = r.WithContext(callers.With(r.Context(), callers.Caller{Name: "ops", Admin: true}))
	w := httptest.NewRecorder()
	f.HandleEvents(w, r)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Fatalf("event stream over the cap: %d (Retry-After %q), want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	mustf(t, f.streams == maxEventStreams && len(f.subs) == 0, "a refused stream holds %d streams, %d subscriptions", f.streams, len(f.subs))
}

// TestEventStreamHeartbeats: a quiet stream starts with the catalog's
// generation, then gets a comment every heartbeat, so proxies keep it;
// a recorded call wakes it with the call; it ends with its request.
func TestEventStreamHeartbeats(t *testing.T) {
	f := New(100)
	f.heartbeat = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.HandleEvents(w, r.WithContext(callers.With(ctx, callers.Caller{Name: "bot"})))
	}))
	defer srv.Close()
	defer cancel()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	mustf(t, res.Header.Get("Content-Type") == "text/event-stream", "Content-Type %q", res.Header.Get("Content-Type"))
	lines := make(chan string, 64)
	go func() { // ends with the stream
		defer close(lines)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	waitLine := func(what string, match func(string) bool) bool {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					return false
				}
				if match(l) {
					return true
				}
			case <-timeout:
				t.Fatalf("no %s within 10s", what)
			}
		}
	}
	mustf(t, waitLine("first event", func(l string) bool { return l == "event: catalog" }), "the stream ended before its first event")
	mustf(t, waitLine("heartbeat", func(l string) bool { return l == ": ping" }), "the stream ended before a heartbeat")
	f.Add(Call{Caller: "other", Tool: "not_yours"})
	f.Add(Call{Caller: "bot", Tool: "yours", Decision: "allowed", Outcome: "ok"})
	mustf(t, waitLine("the caller's own call", func(l string) bool {
		mustf(t, !strings.Contains(l, "not_yours"), "another caller's call reached the stream: %s", l)
		return strings.HasPrefix(l, "data: ") && strings.Contains(l, `"tool":"yours"`)
	}), "the stream ended before the call")
	f.ApprovalsChanged()
	mustf(t, waitLine("approvals event", func(l string) bool { return l == "event: approvals" }), "the stream ended before the approvals event")
	mustf(t, waitLine("its data", func(l string) bool { return l == `data: {"gen":1}` }), "the stream ended before the approvals event's data")
	cancel()
	if waitLine("end of the stream", func(string) bool { return false }) {
		t.Fatal("unreachable")
	}
}

// TestEventStreamSlots: one caller (by budget key: an anonymous one's
// network, so a neighbour in its /24 shares its bound) holds at most
// maxEventStreamsPerCaller, callers that are not admins together at most
// maxSharedEventStreams, and the rest is the admins'.
func TestEventStreamSlots(t *testing.T) {
	f := New(100)
	open := func(c callers.Caller) (func(), int) {
		release, err := f.openStream(c)
		if err != nil {
			return nil, err.status
		}
		return release, http.StatusOK
	}
	var releases []func()
	defer func() {
		for _, r := range releases {
			r()
		}
	}()
	take := func(c callers.Caller, n int) {
		t.Helper()
		for i := range n {
			r, status := open(c)
			mustf(t, status == http.StatusOK, "stream %d of %s: %d", i, c.Key(), status)
			releases = append(releases, r)
		}
	}
	anon := func(ip string) callers.Caller { return callers.Anonymous(ip+":1", autonomy.Manual) }
	take(anon("10.0.0.1"), maxEventStreamsPerCaller)
	_, status := open(anon("10.0.0.1"))
	mustf(t, status == http.StatusTooManyRequests, "one address over its bound: %d, want 429", status)
	_, status = open(anon("10.0.0.200"))
	mustf(t, status == http.StatusTooManyRequests, "a neighbour in the /24 of an address at its bound: %d, want 429", status)
	for i := 2; len(releases) < maxSharedEventStreams; i++ {
		take(anon("10.0."+strconv.Itoa(i)+".1"), maxEventStreamsPerCaller)
	}
	_, status = open(anon("10.1.0.1"))
	mustf(t, status == http.StatusServiceUnavailable, "a new address with the non-admins' share taken: %d, want 503", status)
	take(callers.Caller{Name: "ops", Admin: true}, maxEventStreams-maxSharedEventStreams)
	_, status = open(callers.Caller{Name: "ops2", Admin: true})
	mustf(t, status == http.StatusServiceUnavailable, "an admin with every stream taken: %d, want 503", status)
	// Closed streams give their slots back.
	releases[0]()
	releases = releases[1:]
	r, status := open(anon("10.0.0.1"))
	mustf(t, status == http.StatusOK, "the first address after one of its streams closed: %d", status)
	r()
	for _, r := range releases {
		r()
	}
	releases = nil
	mustf(t, f.streams == 0 && f.shared == 0 && len(f.perCaller) == 0, "after every stream closed: %d streams, %d shared, %v", f.streams, f.shared, f.perCaller)
}

// TestEventStreamsAnonymousShare: anonymous callers together hold at most
// their share (http.anonymousShare) of the non-admins' streams, a few
// networks cannot take them, and a caller with a token still gets one.
func TestEventStreamsAnonymousShare(t *testing.T) {
	for _, tc := range []struct {
		share, want int
	}{{25, 12}, {10, 5}, {0, 0}, {100, maxSharedEventStreams}} {
		t.Run(strconv.Itoa(tc.share), func(t *testing.T) {
			f := New(tc.share)
			var releases []func()
			defer func() {
				for _, r := range releases {
					r()
				}
			}()
			got := 0
			for i := 1; i <= maxSharedEventStreams; i++ {
				r, err := f.openStream(callers.Anonymous("10.0."+strconv.Itoa(i)+".1:1", autonomy.Manual))
				if err != nil {
					mustf(t, err.status == http.StatusServiceUnavailable && strings.Contains(err.msg, "http.anonymousShare"),
						"anonymous stream %d refused with %d %q", i, err.status, err.msg)
					break
				}
				releases = append(releases, r)
				got++
			}
			mustf(t, got == tc.want, "share %d%%: anonymous callers opened %d streams, want %d", tc.share, got, tc.want)
			if got < maxSharedEventStreams {
				r, err := f.openStream(callers.Caller{Name: "agent"})
				mustf(t, err == nil, "a caller with a token at the anonymous share: %v", err)
				releases = append(releases, r)
			}
		})
	}
}

// BenchmarkFeedAdd is what recording a call in the console's ring costs
// every call, with one console watching.
func BenchmarkFeedAdd(b *testing.B) {
	f := New(100)
	_, release := f.subscribe()
	defer release()
	e := Call{Time: time.Now(), Caller: "c", Level: "full", Tool: "echo", Server: "s", Decision: "allowed", Outcome: "ok"}
	b.ReportAllocs()
	for b.Loop() {
		f.Add(e)
	}
}

// TestCallsAreScopedByCaller: an admin sees every call; any other caller
// its own, an anonymous one those of its address (an IPv6 one its /64's).
func TestCallsAreScopedByCaller(t *testing.T) {
	f := New(100)
	for _, c := range []Call{
		{Caller: "ops", Tool: "a"},
		{Caller: "bot", Tool: "b"},
		{Caller: "anonymous", Address: "10.0.0.1:1", Tool: "c"},
		{Caller: "anonymous", Address: "10.0.0.2:1", Tool: "d"},
		{Caller: "anonymous", Address: "[2001:db8::1]:1", Tool: "e"},
	} {
		f.Add(c)
	}
	for _, tc := range []struct {
		caller callers.Caller
		want   string
	}{
		{callers.Caller{Name: "ops", Admin: true}, "a,b,c,d,e"},
		{callers.Caller{Name: "bot"}, "b"},
		{callers.Anonymous("10.0.0.1:9", autonomy.Full), "c"},
		{callers.Anonymous("[2001:db8::2]:9", autonomy.Full), "e"},
		{callers.Caller{Name: "nobody"}, ""},
	} {
		r := httptest.NewRequest(http.MethodGet, "/api/mcp/calls", nil)
		w := httptest.NewRecorder()
		f.HandleCalls(w, r.WithContext(callers.With(r.Context(), tc.caller)))
		var out struct {
			Calls []struct{ Tool, Address string }
		}
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out.Calls == nil {
			t.Fatalf("%s: %v %s", tc.caller.Key(), err, w.Body)
		}
		var got []string
		for _, c := range out.Calls {
			got = append(got, c.Tool)
			mustf(t, c.Address == "", "a call shows its caller's address %q", c.Address)
		}
		mustf(t, strings.Join(got, ",") == tc.want, "%s sees %v, want %s", tc.caller.Key(), got, tc.want)
	}
}
