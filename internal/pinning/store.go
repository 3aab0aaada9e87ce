package pinning

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
)

// Store keeps the pins. Reads are from memory (the catalog is rebuilt
// often); writes persist before they return, so a pin survives a restart
// and, for a shared store, every replica sees it.
type Store interface {
	// Get returns the pin of key.
	Get(key Key) (Pin, bool)
	// List returns every pin, sorted by server and tool.
	List() []Pin
	// PinFirst records each candidate whose key is not pinned yet, in one
	// write, and returns the pins in force in the candidates' order: the
	// first writer wins, so replicas that saw different first definitions
	// still agree on one.
	PinFirst(ctx context.Context, candidates []Pin) ([]Pin, error)
	// Replace makes each of pins the pin of its key: an approval.
	Replace(ctx context.Context, pins ...Pin) error
	// Upgrade makes each of pins (Pin.Upgraded) the pin of its key if the
	// pin there is still the one it upgrades: one another replica
	// replaced meanwhile (an approval) is left as it is.
	Upgrade(ctx context.Context, pins ...Pin) error
	// Forget drops every pin of the servers: they were removed from the
	// hub's sources, and a server of that name added later is a new one.
	Forget(ctx context.Context, servers ...string) error
	// Changed receives a value (coalesced) when another writer changed the
	// pins; nil when nobody else writes.
	Changed() <-chan struct{}
}

// pinSet is the persisted form of a set of pins, in the file and in the
// ConfigMap.
type pinSet struct {
	Version int   `json:"version"`
	Pins    []Pin `json:"pins"`
}

const formatVersion = 1

func encodePins(pins map[Key]Pin) ([]byte, error) {
	set := pinSet{Version: formatVersion, Pins: sortedPins(pins)}
	return json.MarshalIndent(set, "", " ")
}

func decodePins(data []byte) (map[Key]Pin, error) {
	var set pinSet
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, err
	}
	if set.Version != formatVersion {
		return nil, fmt.Errorf("format version %d is not %d", set.Version, formatVersion)
	}
	out := make(map[Key]Pin, len(set.Pins))
	for i, p := range set.Pins {
		if p.Server == "" || p.Tool == "" && p.Kind != KindInstructions || p.SHA256 == "" {
			return nil, fmt.Errorf("pins[%d]: server, tool and sha256 are required", i)
		}
		out[p.Key] = p
	}
	return out, nil
}

func sortedPins(pins map[Key]Pin) []Pin {
	out := make([]Pin, 0, len(pins))
	for _, p := range pins {
		out = append(out, p)
	}
	sortPins(out)
	return out
}

// sortPins sorts pins by server, kind (tools first) and tool.
func sortPins(pins []Pin) {
	sort.Slice(pins, func(i, j int) bool {
		a, b := pins[i].Key, pins[j].Key
		if a.Server != b.Server {
			return a.Server < b.Server
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Tool < b.Tool
	})
}

// FileStore keeps pins in one JSON file, rewritten whole on every change
// through a temporary file and a rename, so a crash leaves the old file or
// the new one, never half of one. One hub process owns the file.
type FileStore struct {
	path string
	// maxBytes bounds the file (MaxStateFileBytes).
	maxBytes int
	// inMemory: the file is read, never written (OpenFileInMemory).
	inMemory bool
	held
}

// MaxStateFileBytes bounds a state file of the hub (pins, name claims): a
// write that would make it larger fails with an error that says so, and
// the pins it would have saved are compared in memory (Pinner), as with
// any store that fails. Each server's share is bounded by its list bounds
// (upstream.maxTools, upstream.maxListBytes), and the pins and claims of a
// server removed from every source are deleted, so only a hub of very
// many large servers reaches it.
const MaxStateFileBytes = 64 << 20

// held are the pins a store holds in memory, guarded by mu.
type held struct {
	mu   sync.Mutex
	pins map[Key]Pin
}

// Get implements Store.
func (h *held) Get(key Key) (Pin, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.pins[key]
	return p, ok
}

// List implements Store.
func (h *held) List() []Pin {
	h.mu.Lock()
	defer h.mu.Unlock()
	return sortedPins(h.pins)
}

// OpenFile reads the pins at path; a missing file is no pins. A file that
// cannot be read as pins is an error naming it: resetting it would forget
// every pin, which is what an attacker would want.
func OpenFile(path string) (*FileStore, error) {
	pins, err := readStateFile(path, "pins", "forgets every pin", decodePins)
	if err != nil {
		return nil, err
	}
	if pins == nil {
		pins = map[Key]Pin{}
	}
	return &FileStore{path: path, maxBytes: MaxStateFileBytes, held: held{pins: pins}}, nil
}

// OpenFileInMemory reads the pins at path as OpenFile does and never
// writes the file: the pins it adds, approves or forgets are kept in
// memory. For a hub whose state directory another hub holds (statedir):
// it enforces the pins saved there without rewriting the other's file.
func OpenFileInMemory(path string) (*FileStore, error) {
	s, err := OpenFile(path)
	if err != nil {
		return nil, err
	}
	s.inMemory = true
	return s, nil
}

// readStateFile reads one of the hub's state files (pins, name claims)
// with decode; a missing file is the zero T. A file that cannot be read
// or decoded is an error naming it and what removing it would cost
// (removing): starting without it is not the hub's call to make.
func readStateFile[T any](path, kind, removing string, decode func([]byte) (T, error)) (T, error) {
	var zero T
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return zero, nil
	case err != nil:
		return zero, fmt.Errorf("read %s file %s: %w", kind, path, err)
	}
	v, err := decode(data)
	if err != nil {
		return zero, fmt.Errorf("%s file %s is corrupt (fix or remove it; removing %s): %w", kind, path, removing, err)
	}
	return v, nil
}

// Path is the file the store writes.
func (s *FileStore) Path() string { return s.path }

// PinFirst implements Store.
func (s *FileStore) PinFirst(_ context.Context, candidates []Pin) ([]Pin, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out, added := pinFirst(s.pins, candidates)
	if len(added) == 0 {
		return out, nil
	}
	if err := s.write(); err != nil {
		for _, k := range added {
			delete(s.pins, k)
		}
		return nil, err
	}
	return out, nil
}

// pinFirst adds to pins each candidate whose key it lacks, and returns
// the pins in force and the keys added.
func pinFirst(pins map[Key]Pin, candidates []Pin) (inForce []Pin, added []Key) {
	inForce = make([]Pin, len(candidates))
	for i, c := range candidates {
		if old, ok := pins[c.Key]; ok {
			inForce[i] = old
			continue
		}
		pins[c.Key] = c
		inForce[i] = c
		added = append(added, c.Key)
	}
	return inForce, added
}

// Replace implements Store.
func (s *FileStore) Replace(_ context.Context, pins ...Pin) error {
	return s.modify(func(m map[Key]Pin) bool {
		for _, p := range pins {
			m[p.Key] = p
		}
		return true
	})
}

// Upgrade implements Store.
func (s *FileStore) Upgrade(_ context.Context, pins ...Pin) error {
	return s.modify(func(m map[Key]Pin) bool { return upgrade(m, pins) })
}

// upgrade puts each of ups in pins where it upgrades the pin there, and
// reports whether one did.
func upgrade(pins map[Key]Pin, ups []Pin) bool {
	changed := false
	for _, up := range ups {
		if stored, ok := pins[up.Key]; ok && upgrades(stored, up) {
			pins[up.Key] = up
			changed = true
		}
	}
	return changed
}

// Forget implements Store.
func (s *FileStore) Forget(_ context.Context, servers ...string) error {
	return s.modify(func(m map[Key]Pin) bool { return forget(m, servers) })
}

// modify applies change to a copy of the pins and, if it changed them,
// writes the copy and keeps it; a failed write keeps the pins as they
// were.
func (s *FileStore) modify(change func(map[Key]Pin) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := maps.Clone(s.pins)
	if !change(next) {
		return nil
	}
	old := s.pins
	s.pins = next
	if err := s.write(); err != nil {
		s.pins = old
		return err
	}
	return nil
}

// forget drops the pins of servers and reports whether there were any.
func forget(pins map[Key]Pin, servers []string) bool {
	dropped := false
	for k := range pins {
		if slices.Contains(servers, k.Server) {
			delete(pins, k)
			dropped = true
		}
	}
	return dropped
}

// Changed implements Store: nobody else writes the file.
func (s *FileStore) Changed() <-chan struct{} { return nil }

// write persists s.pins atomically; s.mu is held.
func (s *FileStore) write() error {
	if s.inMemory {
		return nil
	}
	data, err := encodePins(s.pins)
	if err != nil {
		return fmt.Errorf("encode pins: %w", err)
	}
	if err := writeAtomic(s.path, data, s.maxBytes); err != nil {
		return fmt.Errorf("write pins file: %w", err)
	}
	return nil
}

// writeAtomic replaces the file at path with data through a temporary file
// in the same directory and a rename, so a crash leaves the old file or the
// new one, never half of one. Data over limit bytes is refused.
func writeAtomic(path string, data []byte, limit int) error {
	if len(data) > limit {
		return fmt.Errorf("refusing to write %s: %d bytes is more than the %d bytes a state file may hold", path, len(data), limit)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create directory %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // gone after the rename; cleans up after a failure
	if _, err := tmp.Write(data); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
