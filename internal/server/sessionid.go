package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/server"
)

// Session ids make a Streamable HTTP session valid on every replica, with
// no session store: an id is "mh1-<flags>-<random>", and what a replica
// needs to serve a session it did not initialize is in the flags. Nothing
// in them grants anything (who the caller is and what it may do is decided
// on every request from its credentials), so they need no signature: a
// client that forges them changes only how its own calls are routed.
//
// Flags: "r" marks a session whose client declared sampling, elicitation or
// roots, so its calls go through the relay on whichever replica gets them.
// Ids of mcp-go's own format ("mcp-session-<uuid>", from hubs before this
// one) stay valid, so a rolling update keeps its sessions.

const sessionIDPrefix = "mh1-"

// sessionFlags is what an id carries.
type sessionFlags struct {
	relayed bool
}

func (f sessionFlags) String() string {
	if f.relayed {
		return "r"
	}
	return "p"
}

type initFlagsKey struct{}

// withInitFlags attaches the flags an initialize request's session gets.
func withInitFlags(ctx context.Context, f sessionFlags) context.Context {
	return context.WithValue(ctx, initFlagsKey{}, f)
}

// sessionIDs resolves the id manager of a request: an initialize request's
// manager mints ids with its flags.
type sessionIDs struct{}

var _ server.SessionIdManagerResolver = sessionIDs{}

func (sessionIDs) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	if r == nil { // mcp-go asks without a request when closing sessions
		return idManager{}
	}
	f, _ := r.Context().Value(initFlagsKey{}).(sessionFlags)
	return idManager{flags: f}
}

type idManager struct{ flags sessionFlags }

func (m idManager) Generate() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return sessionIDPrefix + m.flags.String() + "-" + hex.EncodeToString(b[:])
}

var errSessionID = errors.New("invalid session id")

// Validate accepts any well-formed id: a session is valid on every replica.
func (idManager) Validate(id string) (isTerminated bool, err error) {
	if _, ok := parseSessionID(id); ok {
		return false, nil
	}
	var legacy server.StatelessGeneratingSessionIdManager
	if _, err := legacy.Validate(id); err == nil {
		return false, nil
	}
	return false, errSessionID
}

// Terminate ends nothing: there is no session state to drop.
func (idManager) Terminate(string) (isNotAllowed bool, err error) { return false, nil }

// parseSessionID reads the flags of one of the hub's ids.
func parseSessionID(id string) (sessionFlags, bool) {
	rest, ok := strings.CutPrefix(id, sessionIDPrefix)
	if !ok {
		return sessionFlags{}, false
	}
	flags, random, ok := strings.Cut(rest, "-")
	if !ok || len(random) != 32 || (flags != "r" && flags != "p") {
		return sessionFlags{}, false
	}
	if _, err := hex.DecodeString(random); err != nil {
		return sessionFlags{}, false
	}
	return sessionFlags{relayed: flags == "r"}, true
}
