package edge

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"

	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/callers"
)

// Session ids make a Streamable HTTP session valid on every replica, with
// no session store, and bind it to the caller that created it: an id is
// "mh2-<flags>-<binding>-<random>", and what a replica needs to serve a
// session it did not initialize is in it.
//
// The binding is the first 64 bits of SHA-256 of the caller's identity key
// (callers.Caller.Key: a token's, ServiceAccount's or OAuth caller's name; an
// anonymous caller's address). Every request that presents an id is
// checked against its own caller before anything else (OwnsSession); an id
// presented by anyone else is unknown to the hub (404, as for an id it
// never issued), so an id that leaks (a log line, a proxy, a shared
// machine) reads no one's notifications and ends no one's session. The
// binding needs no key: an id whose binding is changed is another id, of
// another caller (useless to the one who changed it) or of a session of
// its own; the random part is what no one can guess.
//
// Flags: "r" marks a session whose client declared sampling, elicitation or
// roots, so its calls go through the relay on whichever replica gets them.
//
// Nothing in an id grants anything: who the caller is and what it may do
// is decided on every request from its credentials. Ids without a binding
// ("mh1-..." and mcp-go's "mcp-session-<uuid>", from hubs before this one)
// are unknown: their clients get 404 and initialize again, as the MCP
// specification tells them to (accepting them would let anyone who learns
// one use it).

const sessionIDPrefix = "mh2-"

const (
	bindingHex = 16 // 64 bits
	randomHex  = 32 // 128 bits
	// sessionIDLen is the length of every id: prefix, flag, binding, random.
	sessionIDLen = len(sessionIDPrefix) + 1 + 1 + bindingHex + 1 + randomHex
)

// SessionFlags is what an id carries.
type SessionFlags struct {
	// Relayed: the client declared sampling, elicitation or roots, so its
	// calls go through the relay.
	Relayed bool
	// URLElicitation: the client declared URL-mode elicitation, so a
	// sign-in link reaches it as one (-32042); it implies Relayed.
	URLElicitation bool
}

func (f SessionFlags) String() string {
	switch {
	case f.URLElicitation:
		return "u"
	case f.Relayed:
		return "r"
	}
	return "p"
}

type initFlagsKey struct{}

// WithInitFlags attaches the flags an initialize request's session gets.
func WithInitFlags(ctx context.Context, f SessionFlags) context.Context {
	return context.WithValue(ctx, initFlagsKey{}, f)
}

// sessionBinding is the binding part of the ids of one caller.
type sessionBinding [bindingHex]byte

// bindingOf is the binding of caller's session ids. It allocates nothing:
// it runs on every request that carries an id.
func bindingOf(c callers.Caller) sessionBinding {
	var buf [128]byte
	sum := sha256.Sum256(c.AppendKey(buf[:0]))
	var b sessionBinding
	hex.Encode(b[:], sum[:bindingHex/2])
	return b
}

// OwnsSession reports whether id is one of the hub's ids bound to caller.
func OwnsSession(caller callers.Caller, id string) bool {
	_, binding, ok := splitSessionID(id)
	if !ok {
		return false
	}
	want := bindingOf(caller)
	return binding == string(want[:])
}

// SessionIDs resolves the id manager of a request: its caller's binding,
// and for an initialize request the flags of its session.
type SessionIDs struct{}

var _ server.SessionIdManagerResolver = SessionIDs{}

func (SessionIDs) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	if r == nil { // mcp-go asks without a request when closing sessions
		return idManager{}
	}
	f, _ := r.Context().Value(initFlagsKey{}).(SessionFlags)
	return idManager{flags: f, ctx: r.Context()}
}

// idManager mints the ids of the caller of ctx. mcp-go asks it to validate
// only ids that the face checked against their caller already
// (OwnsSession).
type idManager struct {
	flags SessionFlags
	ctx   context.Context // of the request; nil for mcp-go's sweeper
}

func (m idManager) Generate() string {
	if m.ctx == nil {
		// Never asked for: mcp-go mints ids only for requests. An id
		// bound to no caller is an id no caller can use.
		m.ctx = context.Background()
	}
	binding := bindingOf(callers.From(m.ctx))
	var random [randomHex / 2]byte
	_, _ = rand.Read(random[:]) // never fails (crypto/rand)
	id := make([]byte, 0, sessionIDLen)
	id = append(id, sessionIDPrefix...)
	id = append(id, m.flags.String()...)
	id = append(id, '-')
	id = append(id, binding[:]...)
	id = append(id, '-')
	id = hex.AppendEncode(id, random[:])
	return string(id)
}

var errSessionID = errors.New("invalid session id")

// Validate accepts any well-formed id: a session is valid on every replica.
// Whose it is was checked before mcp-go saw the request (OwnsSession).
func (idManager) Validate(id string) (isTerminated bool, err error) {
	if _, ok := ParseSessionID(id); ok {
		return false, nil
	}
	return false, errSessionID
}

// Terminate ends nothing: there is no session state to drop.
func (idManager) Terminate(string) (isNotAllowed bool, err error) { return false, nil }

// ParseSessionID reads the flags of one of the hub's ids.
func ParseSessionID(id string) (SessionFlags, bool) {
	f, _, ok := splitSessionID(id)
	return f, ok
}

// splitSessionID reads the flags and the binding of one of the hub's ids,
// without allocating.
func splitSessionID(id string) (f SessionFlags, binding string, ok bool) {
	if len(id) != sessionIDLen || id[:len(sessionIDPrefix)] != sessionIDPrefix {
		return SessionFlags{}, "", false
	}
	rest := id[len(sessionIDPrefix):]
	flag := rest[0]
	if (flag != 'r' && flag != 'p' && flag != 'u') || rest[1] != '-' || rest[2+bindingHex] != '-' {
		return SessionFlags{}, "", false
	}
	binding = rest[2 : 2+bindingHex]
	if !isLowerHex(binding) || !isLowerHex(rest[3+bindingHex:]) {
		return SessionFlags{}, "", false
	}
	return SessionFlags{Relayed: flag != 'p', URLElicitation: flag == 'u'}, binding, true
}

func isLowerHex(s string) bool {
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
