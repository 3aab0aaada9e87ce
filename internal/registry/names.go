package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"

	"github.com/purko-io/mcp-hub/internal/config"
)

// MaxToolNameLen is the longest published tool name: Claude, Cursor and the
// OpenAI API refuse longer ones.
const MaxToolNameLen = 64

// hashLen is the number of hex digits that keep a shortened name unique.
const hashLen = 8

// toolKey identifies one upstream tool.
type toolKey struct {
	Server   string
	Original string
}

// publishNames assigns every upstream tool its published name under the
// naming policy. The result is deterministic for the same input, whatever
// the order: names must not change between replicas or restarts. Tools that
// the policy cannot publish (policy never, name taken by an earlier server)
// are returned in hidden with the server that keeps the name.
//
// reserved are names the hub's own tools hold: an upstream tool never gets
// one (it is prefixed, hidden or hashed as if another server offered it).
func publishNames(keys []toolKey, naming config.Naming, reserved ...string) (names map[toolKey]string, hidden map[toolKey]string) {
	return assignNames(keys, naming, sanitize, reserved...)
}

// assignNames is publishNames with clean as the rule for what a name may
// hold (prompt names are kept as they are).
func assignNames(keys []toolKey, naming config.Naming, clean func(string) string, reserved ...string) (names map[toolKey]string, hidden map[toolKey]string) {
	sorted := append([]toolKey(nil), keys...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Server != sorted[j].Server {
			return sorted[i].Server < sorted[j].Server
		}
		return sorted[i].Original < sorted[j].Original
	})

	// How many distinct servers offer each bare name.
	offered := make(map[string]map[string]bool, len(sorted))
	for _, k := range sorted {
		bare := clean(k.Original)
		if offered[bare] == nil {
			offered[bare] = map[string]bool{}
		}
		offered[bare][k.Server] = true
	}

	// The hub's own tools count as one more server offering their names.
	const hub = "\x00hub"
	for _, r := range reserved {
		if offered[r] == nil {
			offered[r] = map[string]bool{}
		}
		offered[r][hub] = true
	}

	names = make(map[toolKey]string, len(sorted))
	hidden = map[toolKey]string{}
	owner := make(map[string]toolKey, len(sorted)+len(reserved))
	for _, r := range reserved {
		owner[r] = toolKey{Server: "hub", Original: r}
	}
	for _, k := range sorted {
		bare := clean(k.Original)
		var name string
		switch {
		case naming.Prefix == config.PrefixAlways,
			naming.Prefix == config.PrefixOnConflict && len(offered[bare]) > 1:
			name = sanitize(k.Server) + naming.Separator + bare
		default:
			name = bare
		}
		if naming.Prefix == config.PrefixNever {
			if prev, taken := owner[name]; taken && prev.Server != k.Server {
				hidden[k] = prev.Server
				continue
			}
		}
		if len(name) > MaxToolNameLen {
			name = withHash(name, k)
		}
		owner[name] = k
		names[k] = name
	}

	// Names can still meet: sanitizing maps "a.b" and "a_b" together, and
	// a prefix can equal another server's bare name. Every name taken more
	// than once becomes a hashed name of its own.
	count := make(map[string]int, len(names)+len(reserved))
	for _, n := range names {
		count[n]++
	}
	for _, r := range reserved {
		count[r]++
	}
	for k, n := range names {
		if count[n] > 1 {
			names[k] = withHash(n, k)
		}
	}
	return names, hidden
}

// sanitize keeps only the characters model APIs accept in tool names.
func sanitize(s string) string {
	ok := true
	for i := 0; i < len(s); i++ {
		if !validByte(s[i]) {
			ok = false
			break
		}
	}
	if ok && s != "" {
		return s
	}
	b := []byte(s)
	for i := range b {
		if !validByte(b[i]) {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}

func validByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// withHash makes a name unique and at most MaxToolNameLen long: it keeps the
// start (the readable part) and appends a hash of the tool's full identity
// (the unique part).
func withHash(name string, k toolKey) string {
	sum := sha256.Sum256([]byte(k.Server + "\x00" + k.Original))
	h := hex.EncodeToString(sum[:])[:hashLen]
	keep := min(len(name), MaxToolNameLen-hashLen-1)
	return name[:keep] + "_" + h
}
