// Package loopcheck refuses an upstream that leads back to the hub.
//
// A registration may lead back to the hub: its own URL, another replica's,
// or a hub that has this one as an upstream. Connected, such a loop lists
// its own tools again on every round, without end. Every answer of an
// upstream is checked for the hub's own id in the chain header it carries
// (package hubchain); an answer that has it fails its request with a
// *LoopError (Watch.Check; every HTTP answer through Watch.Wrap), so the
// connect fails and nothing of the server is published. The chain of the
// answers that pass is what this upstream adds to the hub's own header.
package loopcheck

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/purko-io/mcp-hub/internal/hubchain"
	"github.com/purko-io/mcp-hub/internal/secrets"
)

// LoopError is an answer of an upstream that leads back to this hub.
type LoopError struct {
	// URL is the upstream's, without credentials.
	URL string
	// Instance names this hub.
	Instance string
	// Direct: the upstream is this hub (or a replica of it), not a hub
	// that reaches it.
	Direct bool
}

func (e *LoopError) Error() string {
	if e.Direct {
		return fmt.Sprintf("registration loop: %s answers as this hub (instance %s) or a replica of it; a hub is never its own upstream", e.URL, e.Instance)
	}
	return fmt.Sprintf("registration loop: %s is a hub that reaches this hub (instance %s) through its upstreams; a hub is never its own upstream", e.URL, e.Instance)
}

// Watch checks the answers of one upstream; nil checks nothing.
type Watch struct {
	chain *hubchain.Chain
	link  *hubchain.Link
	url   string
	// last is the header value of the last answer that passed: the same
	// value again (every answer, usually) costs a string comparison.
	last atomic.Pointer[string]
}

// New returns the Watch of the upstream at url (kept without credentials,
// for messages), nil without a chain.
func New(chain *hubchain.Chain, url string) *Watch {
	if chain == nil {
		return nil
	}
	return &Watch{chain: chain, link: chain.Link(), url: secrets.URLForMessage(url)}
}

// Check reads the chain header of an answer; a loop is a *LoopError.
func (w *Watch) Check(h http.Header) error {
	if w == nil {
		return nil
	}
	values := h[hubchain.Header]
	var raw string
	switch len(values) {
	case 0:
	case 1:
		raw = values[0]
	default:
		raw = strings.Join(values, ",")
	}
	if last := w.last.Load(); last != nil && *last == raw {
		return nil
	}
	ids := hubchain.Parse(values)
	if w.chain.Loops(ids) {
		return &LoopError{URL: w.url, Instance: w.chain.Instance(), Direct: ids[0] == w.chain.Own()}
	}
	w.link.Set(ids)
	seen := raw // only this copy escapes: an answer like the last costs nothing
	w.last.Store(&seen)
	return nil
}

// Reset forgets what the upstream answered before it looped: a hub it
// reached then may not be reached now, and keeping it in this hub's header
// would make the other end of the loop refuse this hub too.
func (w *Watch) Reset() {
	if w != nil {
		w.link.Set(nil)
		w.last.Store(nil)
	}
}

// Close drops the upstream's chain from the hub's: the client is stopped.
func (w *Watch) Close() {
	if w != nil {
		w.link.Close()
	}
}

// Wrap returns a copy of hc whose every answer w checks.
func (w *Watch) Wrap(hc *http.Client) *http.Client {
	if w == nil {
		return hc
	}
	var cp http.Client
	if hc != nil {
		cp = *hc
	}
	next := cp.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	cp.Transport = loopTransport{next: next, w: w}
	return &cp
}

type loopTransport struct {
	next http.RoundTripper
	w    *Watch
}

func (t loopTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if err := t.w.Check(resp.Header); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return resp, nil
}

// URL is the upstream's URL as messages show it, without credentials.
func (w *Watch) URL() string { return w.url }
