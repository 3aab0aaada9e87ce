package registry

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/discovery"
	"github.com/purko-io/mcp-hub/internal/identity"
	"github.com/purko-io/mcp-hub/internal/upstream"
)

func catalogOf(gen uint64, servers ...ServerView) *Catalog {
	cat := &Catalog{Gen: gen, Servers: servers}
	for _, sv := range servers {
		if sv.Status.State == StateConnected {
			cat.Tools = append(cat.Tools, sv.Tools...)
		}
	}
	return cat
}

func server(name string, state State, tools ...string) ServerView {
	c := upstream.New(config.ServerSpec{Name: name}, upstream.Options{}, zerolog.Nop(), func() {})
	sv := ServerView{Name: name, Status: Status{State: state, Error: "boom"}}
	for _, t := range tools {
		sv.Tools = append(sv.Tools, Tool{Name: name + "__" + t, Original: t, Server: name, client: c})
	}
	return sv
}

func TestLookup(t *testing.T) {
	r := New(Options{RouteCacheSize: 8}, zerolog.Nop())
	r.catalog.Store(catalogOf(1, server("a", StateConnected, "x", "y"), server("b", StateError, "z")))
	cases := []struct {
		name     string
		original string
		err      string
	}{
		{"a__x", "x", ""},
		{"a__y", "y", ""},
		{"b__z", "", "upstream b is unavailable: error: boom"},
		{"nope", "", `unknown tool "nope": no server in the catalog offers it`},
	}
	for _, tc := range cases {
		rt, err := r.Lookup(tc.name)
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("Lookup(%q) error = %v, want %q", tc.name, err, tc.err)
		case tc.err == "" && (err != nil || rt.Original != tc.original || rt.Server() != "a"):
			t.Errorf("Lookup(%q) = %+v, %v", tc.name, rt, err)
		}
	}
	var unknown *UnknownToolError
	if _, err := r.Lookup("nope"); !errors.As(err, &unknown) {
		t.Errorf("unknown tool error has type %T", err)
	}
}

// An MCP App calls its server's tools by the server's own names: one that
// is not published reaches the one tool of that name on a server with an
// app; on two such servers, or on a server without an app, it is unknown.
func TestLookupAppCallsByOwnName(t *testing.T) {
	r := New(Options{RouteCacheSize: 8}, zerolog.Nop())
	cat := catalogOf(1, server("basic", StateConnected, "get-time", "poll"), server("chart", StateConnected, "poll"),
		server("plain", StateConnected, "x", "get-time-plain"))
	cat.appServers = map[string]bool{"basic": true, "chart": true}
	r.catalog.Store(cat)
	cases := []struct{ name, server, original string }{
		{"get-time", "basic", "get-time"},
		{"basic__get-time", "basic", "get-time"},
		{"poll", "", ""},
		{"x", "", ""},
		{"get-time-plain", "", ""},
	}
	for _, tc := range cases {
		rt, err := r.Lookup(tc.name)
		var unknown *UnknownToolError
		switch {
		case tc.server == "" && !errors.As(err, &unknown):
			t.Errorf("Lookup(%q) = %s %v; want an unknown tool", tc.name, rt.Server(), err)
		case tc.server != "" && (err != nil || rt.Server() != tc.server || rt.Original != tc.original):
			t.Errorf("Lookup(%q) = %s/%s, %v; want %s/%s", tc.name, rt.Server(), rt.Original, err, tc.server, tc.original)
		}
	}
}

func TestLookupHitAllocatesNothing(t *testing.T) {
	r := New(Options{RouteCacheSize: 8}, zerolog.Nop())
	r.catalog.Store(catalogOf(1, server("a", StateConnected, "x")))
	if _, err := r.Lookup("a__x"); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(1000, func() { _, _ = r.Lookup("a__x") }); allocs != 0 {
		t.Fatalf("route lookup allocates %.1f times per call", allocs)
	}
}

func TestLookupNeverServesAStaleRoute(t *testing.T) {
	r := New(Options{RouteCacheSize: 8}, zerolog.Nop())
	r.catalog.Store(catalogOf(1, server("a", StateConnected, "x")))
	first, _ := r.Lookup("a__x")
	// A new catalog moves the tool to another client.
	r.catalog.Store(catalogOf(2, server("a", StateConnected, "x")))
	second, err := r.Lookup("a__x")
	if err != nil || second.Backend == first.Backend {
		t.Fatalf("lookup after a catalog change returned the old route (%v)", err)
	}
	r.catalog.Store(catalogOf(3))
	if _, err := r.Lookup("a__x"); err == nil {
		t.Fatal("lookup of a removed tool succeeded from the cache")
	}
}

type oneShot struct {
	name  string
	specs []config.ServerSpec
}

func (s oneShot) Name() string { return s.name }
func (s oneShot) Run(ctx context.Context, out chan<- discovery.Snapshot) {
	select {
	case out <- discovery.Snapshot{Source: s.name, Servers: s.specs}:
	case <-ctx.Done():
	}
}

func TestFirstSourceWinsANameAndReadiness(t *testing.T) {
	r := New(Options{NotifyDebounce: time.Millisecond, Upstream: upstream.Options{ConnectTimeout: time.Second, BackoffMin: time.Second, BackoffMax: time.Second}}, zerolog.Nop())
	got := make(chan *Catalog, 16)
	r.OnChange(func(c *Catalog) { got <- c })
	spec := func(name, source string, port int) config.ServerSpec {
		return config.ServerSpec{Name: name, URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port), Transport: config.TransportStreamableHTTP, Source: source}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx, oneShot{"file", []config.ServerSpec{spec("dup", "file", 1)}}, oneShot{"env", []config.ServerSpec{spec("dup", "env", 2), spec("solo", "env", 3)}})
	}()
	deadline := time.After(5 * time.Second)
	for !(r.Ready() && len(r.Catalog().Servers) == 2) {
		select {
		case <-got:
		case <-deadline:
			t.Fatalf("not ready with 2 servers: ready=%v servers=%d", r.Ready(), len(r.Catalog().Servers))
		}
	}
	for _, sv := range r.Catalog().Servers {
		if sv.Name == "dup" && (sv.Source != "file" || sv.URL != "http://127.0.0.1:1/mcp") {
			t.Errorf("dup came from %s (%s); the first source must win", sv.Source, sv.URL)
		}
	}
	cancel()
	<-done
}

// With no discovery source (the embedded default config) the hub's own
// tools must still reach the MCP face: the first catalog is announced
// without waiting for a change.
func TestFirstCatalogAnnouncedWithoutSources(t *testing.T) {
	local := LocalTool{Def: mcp.NewTool("static-analysis"), Kind: autonomy.Builtin}
	r := New(Options{NotifyDebounce: time.Hour, Local: []LocalTool{local}}, zerolog.Nop())
	got := make(chan *Catalog, 1)
	r.OnChange(func(c *Catalog) {
		select {
		case got <- c:
		default:
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case c := <-got:
		if _, ok := c.Tool("static-analysis"); !ok {
			t.Fatalf("first announced catalog lacks the builtin: %+v", c.Tools)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no catalog announced with no sources")
	}
}

// TestExchangeOf: a server without token exchange gives its tools no
// Exchange at all, not a nil *Exchanger in the interface, which Decide
// would take for an exchange and call; one with it gives its exchange.
func TestExchangeOf(t *testing.T) {
	plain := upstream.New(config.ServerSpec{Name: "a"}, upstream.Options{}, zerolog.Nop(), func() {})
	if x := exchangeOf(plain); x != nil {
		t.Fatalf("exchangeOf(a server without token exchange) = %#v, want nil", x)
	}
	spec := config.ServerSpec{Name: "n", URL: "https://notes.example/mcp", Transport: "streamable-http",
		TokenExchange: &config.TokenExchange{Issuer: "https://idp.example"}}
	exch := upstream.New(spec, upstream.Options{}, zerolog.Nop(), func() {})
	if x := exchangeOf(exch); x == nil || x.Accepts(identity.Subject{}) == nil {
		t.Fatalf("exchangeOf(a server with token exchange) = %#v: want its exchange, which refuses a caller without a token", x)
	}
}
