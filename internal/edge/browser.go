package edge

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// Browser guards: what keeps web pages away from the hub. On the laptop
// default the hub has no credentials and listens on loopback, so anything
// that can reach 127.0.0.1 is a caller; a web page in the user's browser
// can, too. The guards keep such pages out:
//
//   - Host (DNS rebinding): a request that arrived on a loopback address
//     must name a loopback host, on every route. A page on evil.example
//     whose name was rebound to 127.0.0.1 still sends Host: evil.example.
//   - Origin: a browser names the page that makes a request. The MCP faces
//     accept no Origin (non-browser clients), the hub's own origin, and the
//     configured allow-list, nothing else. A page on another loopback port
//     (http://localhost:3000, a dev server, or a rebound name) is a
//     different origin and is refused too: being local says nothing about
//     who wrote the page. Pages that should reach the hub (the MCP
//     Inspector's direct mode, say) are listed in http.allowedOrigins.
//   - Content-Type: a page may POST text/plain or a form anywhere without
//     a CORS preflight; MCP messages are application/json, so nothing else
//     is read.
//
// Same-origin plus the Host check is what stops a rebound page; with the
// hub on a non-loopback address the Host check does not apply, and only
// credentials protect it (as for any other network service).

// CheckHost refuses requests that fail the DNS rebinding check, on every
// route: mcp-go checks /mcp and /sse itself, but /api/mcp/tools, /metrics
// and /ws would otherwise answer a rebound page.
func (e *Edge) CheckHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !HostAllowed(r) {
			jsonrpc.Refuse(w, http.StatusForbidden, jsonrpc.CodeInvalidRequest, nil, fmt.Sprintf(
				"Host %q refused: the request came to the hub's loopback address, so it must name a loopback host (localhost, 127.0.0.1, [::1]); another name is how DNS rebinding reaches a local server", r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// MCPFace guards an MCP face (/mcp, /sse, /messages, /ws): Origin on every
// method (a GET that opens a session is as unwanted from a foreign page as
// a POST), Content-Type on POST. An allow-listed cross-site origin gets the
// CORS headers it needs, a preflight included, so a browser client it
// serves can work. With sse set, mcp-go's "Access-Control-Allow-Origin: *"
// on /sse is replaced by this decision.
func (e *Edge) MCPFace(next http.Handler, sse bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cors, ok := e.origin(r)
		if !ok {
			jsonrpc.Refuse(w, http.StatusForbidden, jsonrpc.CodeInvalidRequest, nil, fmt.Sprintf(
				"Origin %q refused: browser pages may call the hub only from its own origin or from one listed in http.allowedOrigins", r.Header.Get("Origin")))
			return
		}
		if cors != "" {
			h := w.Header()
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Allow-Origin", cors)
			h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
				if asked := r.Header.Get("Access-Control-Request-Headers"); asked != "" {
					h.Set("Access-Control-Allow-Headers", asked)
				}
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		if r.Method == http.MethodPost {
			ct := r.Header.Get("Content-Type")
			if !isJSON(ct) {
				jsonrpc.Refuse(w, http.StatusUnsupportedMediaType, jsonrpc.CodeInvalidRequest, nil, fmt.Sprintf(
					"Content-Type %q refused: MCP messages must be sent as application/json", ct))
				return
			}
		}
		if sse {
			w = &corsHeader{ResponseWriter: w, allow: cors}
		}
		next.ServeHTTP(w, r)
	})
}

// OriginAllowed is the Origin check of the MCP faces, also given to the
// WebSocket upgrader so /ws cannot drift from /mcp.
func (e *Edge) OriginAllowed(r *http.Request) bool {
	_, ok := e.origin(r)
	return ok
}

// origin decides r's Origin: ok when it may call the hub, and cors, when
// not empty, the Access-Control-Allow-Origin a cross-site but allowed
// page needs.
func (e *Edge) origin(r *http.Request) (cors string, ok bool) {
	o := r.Header.Get("Origin")
	switch {
	case o == "":
		return "", true // not a browser, or a same-origin GET
	case sameOrigin(o, r.Host):
		return "", true
	case e.origins[strings.ToLower(o)]:
		return o, true
	}
	return "", false
}

// sameOrigin reports whether origin (scheme://host[:port]) is the origin
// of the host:port a request was sent to. The hub may be behind a TLS
// proxy, so the scheme is not compared, only host and port; a port left
// out on either side is the scheme's default.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.Opaque != "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false // the opaque origin "null" included
	}
	return strings.EqualFold(withPort(u.Host, u.Scheme), withPort(host, u.Scheme))
}

// withPort returns hostport with the scheme's default port when it has none.
func withPort(hostport, scheme string) string {
	if _, _, err := net.SplitHostPort(hostport); err == nil {
		return hostport
	}
	port := "80"
	if scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(strings.Trim(hostport, "[]"), port)
}

// corsHeader sets Access-Control-Allow-Origin to the guard's decision just
// before the response head goes out, whatever the handler put there:
// mcp-go's SSE server sets "*", which would let every page read the
// stream (and so learn the session's message endpoint).
type corsHeader struct {
	http.ResponseWriter
	allow   string
	written bool
}

func (c *corsHeader) fix() {
	if c.written {
		return
	}
	c.written = true
	if c.allow == "" {
		c.Header().Del("Access-Control-Allow-Origin")
	} else {
		c.Header().Set("Access-Control-Allow-Origin", c.allow)
	}
}

func (c *corsHeader) WriteHeader(status int) {
	c.fix()
	c.ResponseWriter.WriteHeader(status)
}

func (c *corsHeader) Write(b []byte) (int, error) {
	c.fix()
	return c.ResponseWriter.Write(b)
}

// Flush keeps the stream a stream: mcp-go's SSE server requires a Flusher.
func (c *corsHeader) Flush() {
	c.fix()
	_ = http.NewResponseController(c.ResponseWriter).Flush() // a gone client shows on the next write
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (c *corsHeader) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// HostAllowed mirrors mcp-go's DNS rebinding protection: a request that
// arrived on a loopback address must name a loopback host.
func HostAllowed(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !localLoopback(local) {
		return true
	}
	return isLoopback(r.Host)
}

// localLoopback reports whether the address a request arrived on is a
// loopback one; a TCP address is read as it is (formatting it allocates,
// and every request passes here).
func localLoopback(a net.Addr) bool {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.IsLoopback()
	}
	return isLoopback(a.String())
}

func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// isJSON reports whether a Content-Type value is application/json (with
// parameters or not). The usual exact value is compared first: parsing
// allocates, and every message a caller sends passes here.
func isJSON(ct string) bool {
	if ct == "application/json" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}
