// Package taskhandle turns an upstream's task id into the handle a caller
// of the hub holds, and back. A task (MCP Tasks: a tools/call with `task`,
// then tasks/get, tasks/result, tasks/cancel) lives on one upstream, and
// behind a load balancer without affinity its follow-up requests land on
// any replica. So the handle carries everything a replica needs to route
// them, and nothing is stored: the owning server, the tool the call named
// (its result is capped and filtered as that tool's), the upstream's
// own task id, and the replica whose upstream session holds it, sealed with an HMAC over those and the caller's identity.
//
// A handle is "mht1.<payload>.<mac>", both base64url without padding. A
// caller cannot make one: changing the server, the tool or the task id
// breaks the MAC, and so does presenting it as another caller (the MAC
// covers callers.Caller.AppendKey, the identity that session ids are bound
// to). What a handle reveals (the server, the tool, the upstream's id) is
// what its caller already knew. Every replica must hold the same key
// (config replicas.secret); a hub without one uses a random key of its
// process, so its handles die with it.
package taskhandle

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
)

const (
	prefix = "mht1."
	macLen = 16 // bytes of HMAC-SHA256 kept: 128 bits
	// maxHandle bounds what Open reads; longer is no handle of the hub's.
	maxHandle = 4096
)

// Task is what a handle names.
type Task struct {
	// Replica is the replica whose upstream session made the task: an
	// upstream keeps a task in the session it was made in, and each
	// replica has its own, so the others pass requests of it on to that
	// one (internal/peers). "" for a hub without peers.
	Replica string
	// Server is the owning upstream's name.
	Server string
	// Tool is the published name of the tool the task runs.
	Tool string
	// ID is the upstream's own task id.
	ID string
}

// ErrInvalid is every refusal of Open: a handle that is malformed, forged,
// or another caller's is told apart by no one.
var ErrInvalid = errors.New("unknown task")

// Codec seals and opens handles with one key. It is safe for concurrent
// use.
type Codec struct{ key []byte }

// New returns a Codec with key; an empty key gets a random one (a single
// replica: its handles are valid only in this process).
func New(key []byte) *Codec {
	if len(key) == 0 {
		key = make([]byte, 32)
		_, _ = rand.Read(key) // never fails (crypto/rand)
	}
	return &Codec{key: append([]byte(nil), key...)}
}

// Seal returns the handle of t for the caller whose identity key is caller.
func (c *Codec) Seal(caller []byte, t Task) string {
	payload := encodePayload(t)
	p := base64.RawURLEncoding.EncodeToString(payload)
	m := base64.RawURLEncoding.EncodeToString(c.mac(caller, payload))
	return prefix + p + "." + m
}

// Open returns the task handle names, when it is a handle Seal made for
// caller; else ErrInvalid.
func (c *Codec) Open(caller []byte, handle string) (Task, error) {
	rest, ok := strings.CutPrefix(handle, prefix)
	if !ok || len(handle) > maxHandle {
		return Task{}, ErrInvalid
	}
	p, m, ok := strings.Cut(rest, ".")
	if !ok {
		return Task{}, ErrInvalid
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p)
	mac, err2 := base64.RawURLEncoding.DecodeString(m)
	if err1 != nil || err2 != nil || !hmac.Equal(mac, c.mac(caller, payload)) {
		return Task{}, ErrInvalid
	}
	t, ok := decodePayload(payload)
	if !ok {
		return Task{}, ErrInvalid
	}
	return t, nil
}

// IsHandle reports whether s has a handle's form (sealed or not).
func IsHandle(s string) bool { return strings.HasPrefix(s, prefix) }

// mac is the truncated HMAC over the caller's identity and payload; the
// identity is length-prefixed so no split of the bytes is another one.
func (c *Codec) mac(caller, payload []byte) []byte {
	h := hmac.New(sha256.New, c.key)
	h.Write(appendField(nil, string(caller)))
	h.Write(payload)
	return h.Sum(nil)[:macLen]
}

// encodePayload is the four fields, each a uvarint length and its bytes.
func encodePayload(t Task) []byte {
	b := make([]byte, 0, len(t.Replica)+len(t.Server)+len(t.Tool)+len(t.ID)+8)
	b = appendField(b, t.Replica)
	b = appendField(b, t.Server)
	b = appendField(b, t.Tool)
	return appendField(b, t.ID)
}

func appendField(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func decodePayload(b []byte) (Task, bool) {
	var f [4]string
	for i := range f {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return Task{}, false
		}
		f[i], b = string(b[k:k+int(n)]), b[k+int(n):]
	}
	if len(b) != 0 || f[1] == "" || f[3] == "" {
		return Task{}, false
	}
	return Task{Replica: f[0], Server: f[1], Tool: f[2], ID: f[3]}, true
}
