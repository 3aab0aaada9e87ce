// Package hubchain lets a hub tell that an upstream leads back to itself: a
// registration of its own URL, of another replica's, or of a hub that (at
// some remove) has it as an upstream. Host names cannot tell: a hub has
// many names (localhost, a Service, an Ingress, an IP), and a chain goes
// through other hubs' names. Identity can.
//
// Every hub has an instance id. It presents, on every answer of its MCP
// faces, a header listing its own id and the ids it saw in the answers of
// its own upstreams: the hubs reachable through it. A hub whose own id is in
// an upstream's answer is that upstream's upstream: the connection is a
// loop. The ids on the wire are short hashes, so the header says nothing of
// a deployment's names and every entry has one size.
//
// It is a leaf: it imports nothing of this module.
package hubchain

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Header is the answer header that carries a hub's chain.
const Header = "Mcp-Hub-Chain"

// Bounds of a chain: a hub presents and reads at most MaxIDs ids, its own
// first, and reads at most maxHeaderLen bytes of an upstream's header. A
// loop through more distinct hubs than MaxIDs may go unseen.
const (
	MaxIDs       = 32
	idLen        = 16
	maxHeaderLen = MaxIDs * (idLen + 1)
)

// ID is a hub's instance id as it travels: 16 lower-case hex digits.
type ID string

// IDOf is the wire id of an instance name. An empty name gets a random id:
// the hub that has no configured name is one process.
func IDOf(instance string) ID {
	name := "mcp-hub instance " + instance
	if instance == "" {
		name = "mcp-hub process " + rand.Text()
	}
	sum := sha256.Sum256([]byte(name))
	return ID(hex.EncodeToString(sum[:])[:idLen])
}

// valid reports whether s is an ID as IDOf makes them.
func valid(s string) bool {
	if len(s) != idLen {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Parse reads a chain header's values: comma-separated ids. It reads at
// most maxHeaderLen bytes and MaxIDs ids, skips what is not an id and
// repeats, and returns nil when nothing is left. An upstream writes the
// header, so nothing in it is trusted beyond those bounds.
func Parse(values []string) []ID {
	var out []ID
	budget := maxHeaderLen
	for _, v := range values {
		if len(v) > budget {
			v = v[:budget]
		}
		budget -= len(v)
		for part := range strings.SplitSeq(v, ",") {
			s := strings.TrimSpace(part)
			if !valid(s) || slices.Contains(out, ID(s)) {
				continue
			}
			out = append(out, ID(s))
			if len(out) == MaxIDs {
				return out
			}
		}
		if budget <= 0 {
			break
		}
	}
	return out
}

// Chain is one hub's view: its own id and the chains its upstreams
// answered with. The header value it presents is rebuilt when a link's
// chain changes and read with one atomic load, so answering costs nothing
// more than setting a header.
type Chain struct {
	own      ID
	instance string // the configured name, "" when random

	mu    sync.Mutex
	links map[*Link][]ID

	header atomic.Pointer[[]string] // the header's values, never modified
}

// New returns the chain of the hub named instance ("" for a random id).
func New(instance string) *Chain {
	c := &Chain{own: IDOf(instance), instance: instance, links: map[*Link][]ID{}}
	c.rebuild()
	return c
}

// Own is the hub's own id.
func (c *Chain) Own() ID { return c.own }

// Instance names the hub in messages: the configured name, or its id.
func (c *Chain) Instance() string {
	if c.instance != "" {
		return c.instance
	}
	return string(c.own)
}

// HeaderValues is the value of Header to present, to be assigned to a
// response's header map as is (it is shared and never modified).
func (c *Chain) HeaderValues() []string { return *c.header.Load() }

// Present puts the chain on every answer of next, refusals and the
// WebSocket handshake included, so that a hub that has this one as an
// upstream, at any remove, sees that it would be its own upstream. The
// value is built when an upstream's chain changes; here it is one atomic
// load and a map assignment. A nil chain presents nothing.
func (c *Chain) Present(next http.Handler) http.Handler {
	if c == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()[Header] = c.HeaderValues()
		next.ServeHTTP(w, r)
	})
}

// Loops reports whether ids, an upstream's chain, holds this hub.
func (c *Chain) Loops(ids []ID) bool { return slices.Contains(ids, c.own) }

// Link is what one upstream connection contributes to its hub's chain.
type Link struct {
	c      *Chain
	closed bool // guarded by c.mu
}

// Link returns a new link of c with an empty chain; Close drops it.
func (c *Chain) Link() *Link { return &Link{c: c} }

// Set records the chain the link's upstream last answered with; after
// Close it does nothing (an answer still in flight when the upstream was
// stopped).
func (l *Link) Set(ids []ID) {
	c := l.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if l.closed {
		return
	}
	if old, ok := c.links[l]; ok == (len(ids) > 0) && slices.Equal(old, ids) {
		return
	}
	if len(ids) == 0 {
		delete(c.links, l)
	} else {
		c.links[l] = slices.Clone(ids)
	}
	c.rebuildLocked()
}

// Close drops the link's chain for good: the upstream is gone.
func (l *Link) Close() {
	l.Set(nil)
	l.c.mu.Lock()
	l.closed = true
	l.c.mu.Unlock()
}

func (c *Chain) rebuild() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rebuildLocked()
}

// rebuildLocked presents the own id first, then the union of the links'
// ids in order, so that equal views give equal headers (upstreams compare
// them as strings before parsing).
func (c *Chain) rebuildLocked() {
	var others []ID
	for _, ids := range c.links {
		for _, id := range ids {
			if id != c.own && !slices.Contains(others, id) {
				others = append(others, id)
			}
		}
	}
	slices.Sort(others)
	ids := append([]ID{c.own}, others[:min(len(others), MaxIDs-1)]...)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = string(id)
	}
	v := []string{strings.Join(parts, ",")}
	c.header.Store(&v)
}
