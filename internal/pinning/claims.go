package pinning

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
)

// Name claims keep published tool names stable. A name, once published for
// an upstream tool, is claimed for that tool: callers (and the models they
// prompt) hold on to it, so it must keep reaching the same tool while the
// hub runs, after a restart and on every replica, whichever upstreams
// happen to be up. Claims live beside the pins (the same state directory,
// the same ConfigMap under another key) because they need the same three
// things: persisted before use, shared by replicas, first writer wins. They
// are independent of the pinning mode.

// Claim says that the published name Name belongs to one upstream tool.
type Claim struct {
	Name string `json:"name"`
	Key
}

// ClaimStore keeps the name claims. Reads are from memory; writes persist
// before they return.
type ClaimStore interface {
	// Claims returns every claim, sorted by name.
	Claims() []Claim
	// ClaimFirst records each candidate whose name and tool are both
	// unclaimed, in one write, and returns every claim in force after it:
	// the first writer wins, so replicas that proposed different names
	// adopt the winner's.
	ClaimFirst(ctx context.Context, candidates []Claim) ([]Claim, error)
	// Release drops every claim of the servers: they were removed from
	// the hub's sources, and their names are free again.
	Release(ctx context.Context, servers ...string) error
	// ClaimsChanged receives a value (coalesced) when another writer
	// changed the claims; nil when nobody else writes.
	ClaimsChanged() <-chan struct{}
}

// claimSet is the persisted form of the claims, in the file and in the
// ConfigMap.
type claimSet struct {
	Version int     `json:"version"`
	Claims  []Claim `json:"claims"`
}

func encodeClaims(claims map[string]Claim) ([]byte, error) {
	return json.MarshalIndent(claimSet{Version: formatVersion, Claims: sortedClaims(claims)}, "", " ")
}

func decodeClaims(data []byte) (map[string]Claim, error) {
	var set claimSet
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, err
	}
	if set.Version != formatVersion {
		return nil, fmt.Errorf("format version %d is not %d", set.Version, formatVersion)
	}
	out := make(map[string]Claim, len(set.Claims))
	for i, c := range set.Claims {
		if c.Name == "" || c.Server == "" || c.Tool == "" {
			return nil, fmt.Errorf("claims[%d]: name, server and tool are required", i)
		}
		out[c.Name] = c
	}
	return out, nil
}

func sortedClaims(claims map[string]Claim) []Claim {
	out := make([]Claim, 0, len(claims))
	for _, c := range claims {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// claimFirst adds to claims each candidate whose name and tool are both
// unclaimed, and reports whether it added any.
func claimFirst(claims map[string]Claim, candidates []Claim) bool {
	byKey := make(map[Key]bool, len(claims))
	for _, c := range claims {
		byKey[c.Key] = true
	}
	added := false
	for _, c := range candidates {
		if _, taken := claims[c.Name]; taken || byKey[c.Key] || c.Name == "" {
			continue
		}
		claims[c.Name] = c
		byKey[c.Key] = true
		added = true
	}
	return added
}

// release drops the claims of servers and reports whether there were any.
func release(claims map[string]Claim, servers []string) bool {
	gone := make(map[string]bool, len(servers))
	for _, s := range servers {
		gone[s] = true
	}
	dropped := false
	for name, c := range claims {
		if gone[c.Server] {
			delete(claims, name)
			dropped = true
		}
	}
	return dropped
}

func copyClaims(claims map[string]Claim) map[string]Claim {
	out := make(map[string]Claim, len(claims))
	for k, v := range claims {
		out[k] = v
	}
	return out
}

// heldClaims are the claims a store holds in memory, guarded by mu.
type heldClaims struct {
	cmu    sync.Mutex
	claims map[string]Claim
}

// Claims implements ClaimStore.
func (h *heldClaims) Claims() []Claim {
	h.cmu.Lock()
	defer h.cmu.Unlock()
	return sortedClaims(h.claims)
}

// MemoryClaims keeps claims in this process only: names are stable while
// it runs. It is what a registry uses when it is given no store.
type MemoryClaims struct{ heldClaims }

// NewMemoryClaims returns an empty in-memory claim store.
func NewMemoryClaims() *MemoryClaims {
	return &MemoryClaims{heldClaims{claims: map[string]Claim{}}}
}

// ClaimFirst implements ClaimStore.
func (m *MemoryClaims) ClaimFirst(_ context.Context, candidates []Claim) ([]Claim, error) {
	m.cmu.Lock()
	defer m.cmu.Unlock()
	claimFirst(m.claims, candidates)
	return sortedClaims(m.claims), nil
}

// Release implements ClaimStore.
func (m *MemoryClaims) Release(_ context.Context, servers ...string) error {
	m.cmu.Lock()
	defer m.cmu.Unlock()
	release(m.claims, servers)
	return nil
}

// ClaimsChanged implements ClaimStore: nobody else writes.
func (m *MemoryClaims) ClaimsChanged() <-chan struct{} { return nil }

// NamesFileFor is where the claims of a hub whose pins are in pinsFile
// live: names.json in the same directory, so one state directory holds
// everything a restart must remember.
func NamesFileFor(pinsFile string) string {
	return filepath.Join(filepath.Dir(pinsFile), "names.json")
}

// FileClaims keeps claims in one JSON file, rewritten whole and atomically
// on every change, like FileStore. One hub process owns the file.
type FileClaims struct {
	path string
	// maxBytes bounds the file (MaxStateFileBytes).
	maxBytes int
	// inMemory: the file is read, never written (OpenClaimsFileInMemory).
	inMemory bool
	heldClaims
}

// OpenClaimsFile reads the claims at path; a missing file is no claims. A
// file that cannot be read is an error naming it: starting without the
// claims would rename tools under callers that use them.
func OpenClaimsFile(path string) (*FileClaims, error) {
	claims, err := readStateFile(path, "names", "lets published names change", decodeClaims)
	if err != nil {
		return nil, err
	}
	if claims == nil {
		claims = map[string]Claim{}
	}
	return &FileClaims{path: path, maxBytes: MaxStateFileBytes, heldClaims: heldClaims{claims: claims}}, nil
}

// OpenClaimsFileInMemory reads the claims at path as OpenClaimsFile does
// and never writes the file: new claims are kept in memory, like
// OpenFileInMemory's pins.
func OpenClaimsFileInMemory(path string) (*FileClaims, error) {
	s, err := OpenClaimsFile(path)
	if err != nil {
		return nil, err
	}
	s.inMemory = true
	return s, nil
}

// Path is the file the store writes.
func (s *FileClaims) Path() string { return s.path }

// ClaimFirst implements ClaimStore.
func (s *FileClaims) ClaimFirst(_ context.Context, candidates []Claim) ([]Claim, error) {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	next := copyClaims(s.claims)
	if !claimFirst(next, candidates) {
		return sortedClaims(s.claims), nil
	}
	if err := s.write(next); err != nil {
		return nil, err
	}
	s.claims = next
	return sortedClaims(next), nil
}

// Release implements ClaimStore.
func (s *FileClaims) Release(_ context.Context, servers ...string) error {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	next := copyClaims(s.claims)
	if !release(next, servers) {
		return nil
	}
	if err := s.write(next); err != nil {
		return err
	}
	s.claims = next
	return nil
}

// ClaimsChanged implements ClaimStore: nobody else writes the file.
func (s *FileClaims) ClaimsChanged() <-chan struct{} { return nil }

func (s *FileClaims) write(claims map[string]Claim) error {
	if s.inMemory {
		return nil
	}
	data, err := encodeClaims(claims)
	if err != nil {
		return fmt.Errorf("encode name claims: %w", err)
	}
	if err := writeAtomic(s.path, data, s.maxBytes); err != nil {
		return fmt.Errorf("write names file: %w", err)
	}
	return nil
}
