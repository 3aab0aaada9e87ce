package secrets

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// maxRedirects is how many redirects a hub client follows, as Go's default.
const maxRedirects = 10

// SameOrigin reports whether a and b have the same origin: scheme, host and
// port (a missing port is the scheme's default). Go's http.Client drops the
// Authorization header only when the host changes, not the port, and never
// drops a custom header such as X-API-Key; the hub decides by origin.
func SameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "ws":
		return "80"
	case "https", "wss":
		return "443"
	}
	return ""
}

// harmless are the headers a redirect to another origin keeps: they say
// what is sent and what is accepted, and carry nothing of the caller's or
// the hub's.
var harmless = map[string]bool{
	"Accept": true, "Accept-Encoding": true, "Accept-Language": true,
	"Content-Type": true, "Content-Encoding": true, "Content-Language": true,
	"User-Agent": true,
}

// StripCredentials is a CheckRedirect policy for a client shared by code
// that attaches credentials in many ways (Authorization, an api key header,
// a static header from a spec, a session id, a Referer with a key in its
// query). A redirect within the first request's origin keeps every header.
// A redirect to another origin is followed with only the harmless headers:
// a public document that moved (an OpenAPI file on a CDN) still loads, and
// no credential travels with it. At most 10 redirects are followed.
func StripCredentials(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if !SameOrigin(via[0].URL, req.URL) {
		for k := range req.Header {
			if !harmless[http.CanonicalHeaderKey(k)] {
				delete(req.Header, k)
			}
		}
	}
	return nil
}

// ErrCrossOrigin is the cause of a redirect RefuseCrossOrigin did not follow.
var ErrCrossOrigin = errors.New("redirect to another origin refused: mcp-hub sends credentials only to the origin they were configured for")

// RefuseCrossOrigin is a CheckRedirect policy for a client bound to one
// configured server: it follows redirects within the first request's origin
// (at most 10) and refuses one to another origin with an error naming it.
// Following without the credentials would only turn the redirect into an
// authentication failure at a server nobody configured; the error tells the
// operator which URL to configure instead.
func RefuseCrossOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if !SameOrigin(via[0].URL, req.URL) {
		return fmt.Errorf("%w (from %s to %s)", ErrCrossOrigin, origin(via[0].URL), origin(req.URL))
	}
	return nil
}

// origin is how an origin is written in messages: no path, no query.
func origin(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + u.Host
}

// WithPolicy returns a copy of client (a new client when nil) whose
// redirects follow policy. The copy shares client's Transport, so its
// connection pool; client itself is not changed.
func WithPolicy(client *http.Client, policy func(req *http.Request, via []*http.Request) error) *http.Client {
	var c http.Client
	if client != nil {
		c = *client
	}
	c.CheckRedirect = policy
	return &c
}

// URLForMessage is raw as an error or a log line may show it: without user
// info, and with the query (which may hold an API key) replaced by "…".
func URLForMessage(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "…"
	}
	return u.String()
}
