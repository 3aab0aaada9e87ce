package edge

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
)

func TestSessionIDs(t *testing.T) {
	anonymous := callers.AnonymousOnly(autonomy.Full)
	as := func(remote, token string, f SessionFlags) server.SessionIdManager {
		r := &http.Request{RemoteAddr: remote, Header: http.Header{}}
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		auth := anonymous
		if token != "" {
			auth = callers.NewAuth([]callers.TokenCaller{{Name: "ci", Token: "tok-ci", Ceiling: autonomy.Full}}, nil, nil)
		}
		c, err := auth.Authenticate(r)
		if err != nil {
			t.Fatal(err.Msg)
		}
		return SessionIDs{}.ResolveSessionIdManager(r.WithContext(WithInitFlags(callers.With(context.Background(), c), f)))
	}
	relayed := as("10.0.0.7:1", "", SessionFlags{Relayed: true})
	plain := as("10.0.0.7:2", "", SessionFlags{})
	other := as("10.0.0.8:1", "", SessionFlags{})
	ci := as("10.0.0.7:1", "tok-ci", SessionFlags{})
	r1, r2, p, o, c := relayed.Generate(), relayed.Generate(), plain.Generate(), other.Generate(), ci.Generate()
	if r1 == r2 || !strings.HasPrefix(r1, "mh2-r-") || !strings.HasPrefix(p, "mh2-p-") || len(r1) != sessionIDLen {
		t.Fatalf("ids %q %q %q", r1, r2, p)
	}
	// The binding is the caller's: the same for one address (any port),
	// another for another address or a token caller.
	_, b1, _ := splitSessionID(r1)
	_, bp, _ := splitSessionID(p)
	_, bo, _ := splitSessionID(o)
	_, bc, _ := splitSessionID(c)
	if b1 != bp || b1 == bo || b1 == bc {
		t.Fatalf("bindings: 10.0.0.7 %q and %q, 10.0.0.8 %q, ci %q", b1, bp, bo, bc)
	}
	hexOf := func(n int) string { return strings.Repeat("a", n) }
	for _, tc := range []struct {
		id      string
		valid   bool
		relayed bool
	}{
		{r1, true, true},
		{p, true, false},
		{"mh2-p-" + hexOf(16) + "-" + hexOf(32), true, false}, // well formed: any replica serves it
		// Ids without a binding (hubs before this one, mcp-go's own) are
		// unknown: their clients initialize again.
		{"mh1-p-" + hexOf(32), false, false},
		{"mcp-session-6f1d4c9e-1f0e-4c44-9a55-b3a5e0a7f001", false, false},
		{"mh2-x-" + hexOf(16) + "-" + hexOf(32), false, false},
		{"mh2-r-" + hexOf(16) + "-" + strings.Repeat("z", 32), false, false},
		{"mh2-r-" + strings.Repeat("Z", 16) + "-" + hexOf(32), false, false},
		{"mh2-r-" + hexOf(16) + "_" + hexOf(32), false, false},
		{"mh2-r-" + hexOf(16) + "-" + hexOf(31), false, false},
		{"mh2-r-abc", false, false},
		{"", false, false},
		{"garbage", false, false},
	} {
		// Any replica validates any well-formed id, whoever minted it.
		_, err := SessionIDs{}.ResolveSessionIdManager(nil).Validate(tc.id)
		if (err == nil) != tc.valid {
			t.Errorf("Validate(%q) = %v, want valid %v", tc.id, err, tc.valid)
		}
		f, _ := ParseSessionID(tc.id)
		if f.Relayed != tc.relayed {
			t.Errorf("ParseSessionID(%q).Relayed = %v, want %v", tc.id, f.Relayed, tc.relayed)
		}
	}
}

// TestOwnsSession: an id is its creator's only, and checking it allocates
// nothing (it runs on the fast path).
func TestOwnsSession(t *testing.T) {
	mint := func(c callers.Caller) string {
		r := (&http.Request{}).WithContext(callers.With(context.Background(), c))
		return SessionIDs{}.ResolveSessionIdManager(r).Generate()
	}
	a := callers.Anonymous("10.0.0.7:1234", autonomy.Manual)
	aOtherPort := callers.Anonymous("10.0.0.7:999", autonomy.Manual)
	b := callers.Anonymous("10.0.0.8:1234", autonomy.Manual)
	v6 := callers.Anonymous("[2001:db8:1:2::5]:80", autonomy.Manual)
	v6Same64 := callers.Anonymous("[2001:db8:1:2::9]:81", autonomy.Manual)
	ops := callers.Caller{Name: "ops", Admin: true}
	bot := callers.Caller{Name: "bot"}
	for _, tc := range []struct {
		name      string
		owner, by callers.Caller
		want      bool
	}{
		{"same address", a, aOtherPort, true},
		{"another address", a, b, false},
		{"same /64", v6, v6Same64, true},
		{"token caller", ops, ops, true},
		{"another token caller", ops, bot, false},
		{"anonymous with a token caller's id", ops, a, false},
		{"token caller with an anonymous id", a, ops, false},
	} {
		if got := OwnsSession(tc.by, mint(tc.owner)); got != tc.want {
			t.Errorf("%s: OwnsSession = %v, want %v", tc.name, got, tc.want)
		}
	}
	id := mint(a)
	for _, c := range []callers.Caller{a, ops} {
		if n := testing.AllocsPerRun(100, func() { OwnsSession(c, id) }); n != 0 {
			t.Errorf("OwnsSession(%s) allocates %v times", c.Name, n)
		}
	}
}

// BenchmarkOwnsSession is what checking a request's session id against its
// caller costs every request that carries one (the fast path's included).
func BenchmarkOwnsSession(b *testing.B) {
	for _, c := range []callers.Caller{{Name: "ci"}, callers.Anonymous("10.0.0.7:1234", autonomy.Manual), callers.Anonymous("[2001:db8:1:2::5]:80", autonomy.Manual)} {
		r := (&http.Request{}).WithContext(callers.With(context.Background(), c))
		id := SessionIDs{}.ResolveSessionIdManager(r).Generate()
		b.Run(c.Key(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !OwnsSession(c, id) {
					b.Fatal("not the owner")
				}
			}
		})
	}
}
