package adminapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/discovery"
	"github.com/purko-io/mcp-hub/internal/registrations"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// store is a registrations.Writer that answers with err and records what
// it was asked to write.
type store struct {
	err     error
	written []string
}

func (s *store) Upsert(_ context.Context, e registrations.Entry) error {
	s.written = append(s.written, "upsert "+e.Name)
	return s.err
}

func (s *store) Delete(_ context.Context, name string) error {
	s.written = append(s.written, "delete "+name)
	return s.err
}

func (s *store) Owns(string, *config.Origin) bool { return true }
func (s *store) Where() string                    { return "test store" }

// apiFor serves the API over an empty catalog with store (nil: none); its
// guard takes the caller from the X-Test-Caller header ("admin" is one).
// The registry runs over sources (none: it ends start-up at once, which
// writes wait for).
func apiFor(t *testing.T, w registrations.Writer, log *bytes.Buffer, sources ...discovery.Source) http.Handler {
	t.Helper()
	reg := registry.New(registry.Options{RouteCacheSize: 8}, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); reg.Run(ctx, sources...) }()
	t.Cleanup(func() { cancel(); <-ran })
	o := Options{
		Registry: reg,
		Auth:     callers.AnonymousOnly(0),
		Visible:  func(callers.Caller, registry.Tool) bool { return true },
		Log:      zerolog.New(log),
	}
	if w != nil {
		o.Registrations = w
	}
	mux := http.NewServeMux()
	New(o).Mount(mux, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			name := r.Header.Get("X-Test-Caller")
			next.ServeHTTP(w, r.WithContext(callers.With(r.Context(), callers.Caller{Name: name, Admin: name == "admin"})))
		})
	})
	return mux
}

// TestWrites: every write needs an admin, and each answer of the store
// becomes its status, with the audit lines an operator reads.
func TestWrites(t *testing.T) {
	const entry = `{"name":"web","url":"http://127.0.0.1:9/mcp"}`
	for _, tc := range []struct {
		name, caller, method, path, body string
		storeErr                         error
		noStore                          bool
		status                           int
		want, audit                      string
		written                          bool
	}{
		{name: "not an admin", caller: "bot", method: "POST", path: "/api/mcp/server", body: entry,
			status: http.StatusForbidden, want: "registering servers needs an admin caller: bot is not one", audit: `"audit":"admin"`},
		{name: "not an admin deletes", caller: "bot", method: "DELETE", path: "/api/mcp/server/web",
			status: http.StatusForbidden, want: "removing servers needs an admin caller", audit: `"decision":"denied"`},
		{name: "not an admin approves", caller: "bot", method: "POST", path: "/api/mcp/pins/approve", body: `{"server":"a"}`,
			status: http.StatusForbidden, want: "approving tool definitions needs an admin caller"},
		{name: "no store", caller: "admin", method: "POST", path: "/api/mcp/server", body: entry, noStore: true,
			status: http.StatusNotImplemented, want: "no store for registrations"},
		{name: "no store deletes", caller: "admin", method: "DELETE", path: "/api/mcp/server/web", noStore: true,
			status: http.StatusNotImplemented, want: "no store for registrations"},
		{name: "not an entry", caller: "admin", method: "POST", path: "/api/mcp/server", body: `{"nom":"web"}`,
			status: http.StatusBadRequest, want: "body: not a server entry"},
		{name: "registered", caller: "admin", method: "POST", path: "/api/mcp/server", body: entry,
			status: http.StatusOK, want: `"connected"`, audit: `"store":"test store"`, written: true},
		{name: "image", caller: "admin", method: "POST", path: "/api/mcp/server", body: `{"name":"img","image":"ghcr.io/x/y:1","port":9000}`,
			status: http.StatusOK, want: `"created"`, written: true},
		{name: "other kind", caller: "admin", method: "POST", path: "/api/mcp/server", body: entry, storeErr: registrations.ErrOtherKind,
			status: http.StatusConflict, written: true},
		{name: "credential refused", caller: "admin", method: "POST", path: "/api/mcp/server", body: entry,
			storeErr: fmt.Errorf("secretRef: %w", registrations.ErrRefused),
			status:   http.StatusBadRequest, want: "credential reference refused", audit: `"decision":"refused"`, written: true},
		{name: "needs a cluster", caller: "admin", method: "POST", path: "/api/mcp/server", body: entry, storeErr: registrations.ErrNeedsCluster,
			status: http.StatusBadRequest, written: true},
		{name: "store failed", caller: "admin", method: "POST", path: "/api/mcp/server", body: entry, storeErr: errors.New("disk full"),
			status: http.StatusInternalServerError, want: "register web: disk full", written: true},
		{name: "deleted", caller: "admin", method: "DELETE", path: "/api/mcp/server/web",
			status: http.StatusOK, want: `"deleted"`, audit: "server unregistered", written: true},
		{name: "delete unknown", caller: "admin", method: "DELETE", path: "/api/mcp/server/web", storeErr: registrations.ErrNotFound,
			status: http.StatusNotFound, want: `server \"web\" not found`, written: true},
		{name: "approve, bad body", caller: "admin", method: "POST", path: "/api/mcp/pins/approve", body: `{}`,
			status: http.StatusBadRequest, want: `the body must be`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			st := &store{err: tc.storeErr}
			var w registrations.Writer = st
			if tc.noStore {
				w = nil
			}
			r := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			r.Header.Set("X-Test-Caller", tc.caller)
			rec := httptest.NewRecorder()
			apiFor(t, w, &log).ServeHTTP(rec, r)
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.want) {
				t.Errorf("%s %s: %d %s, want %d with %q", tc.method, tc.path, rec.Code, rec.Body, tc.status, tc.want)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if !strings.Contains(log.String(), tc.audit) {
				t.Errorf("audit %s, want %s", log.String(), tc.audit)
			}
			if (len(st.written) > 0) != tc.written {
				t.Errorf("the store was asked %v, want a write: %v", st.written, tc.written)
			}
		})
	}
}

// TestListings: the listings are open to every caller, and a bad query
// is the caller's error.
func TestListings(t *testing.T) {
	h := apiFor(t, nil, &bytes.Buffer{})
	for path, want := range map[string]int{
		"/api/mcp/tools":                     http.StatusOK,
		"/api/mcp/tools?format=names":        http.StatusOK,
		"/api/mcp/tools?autonomy=bold":       http.StatusBadRequest,
		"/api/mcp/tools?autonomy=supervised": http.StatusOK,
		"/api/mcp/servers":                   http.StatusOK,
		"/api/mcp/pins":                      http.StatusOK,
		"/api/openapi.json":                  http.StatusOK,
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != want {
			t.Errorf("GET %s: %d %s, want %d", path, rec.Code, rec.Body, want)
		}
	}
}

// lateFile is a config file source whose first snapshot (one server,
// "declared") comes after a while, as a file read at start-up may.
type lateFile struct{ after time.Duration }

func (lateFile) Name() string { return "file" }

func (l lateFile) Run(ctx context.Context, out chan<- discovery.Snapshot) {
	select {
	case <-time.After(l.after):
	case <-ctx.Done():
		return
	}
	spec := config.ServerSpec{Name: "declared", URL: "http://127.0.0.1:1/mcp", Transport: config.TransportStreamableHTTP, Source: "file"}
	select {
	case out <- discovery.Snapshot{Source: "file", Servers: []config.ServerSpec{spec}}:
	case <-ctx.Done():
		return
	}
	<-ctx.Done()
}

// TestWritesWaitForStartUp: a write that comes before the config file's
// servers are in the catalog waits for them, and is refused for a name
// the file declares, rather than stored (the hub's first moments).
func TestWritesWaitForStartUp(t *testing.T) {
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/api/mcp/server", `{"name":"declared","url":"http://127.0.0.1:9/mcp"}`},
		{"DELETE", "/api/mcp/server/declared", ""},
	} {
		t.Run(tc.method, func(t *testing.T) {
			var log bytes.Buffer
			w := &store{err: registrations.ErrNotFound}
			h := apiFor(t, w, &log, lateFile{after: 200 * time.Millisecond})
			r := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("X-Test-Caller", "admin")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "edit the file") {
				t.Fatalf("%s %s: %d %s, want 409 with \"edit the file\"", tc.method, tc.path, rec.Code, rec.Body.String())
			}
			if tc.method == "POST" && len(w.written) > 0 {
				t.Errorf("stored: %v", w.written)
			}
		})
	}
}
