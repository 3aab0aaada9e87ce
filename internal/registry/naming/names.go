// Package naming is the catalog's naming: the name every upstream tool,
// prompt, resource URI and URI template is published under (the naming
// policy: kept, prefixed with its server, hidden, or shortened with a
// hash), and the claims that keep a published tool name reaching the same
// tool across restarts, replicas and servers that are down (Claims). It is
// a package of its own because naming is a job a newcomer looks for by
// that name, with its own rules (what model APIs accept, what a URI scheme
// may hold) and its own state (the claim store's protocol), and the
// catalog only ever asks it what the names are.
package naming

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"

	"github.com/purko-io/mcp-hub/internal/config"
)

// maxToolNameLen is the longest published tool name: Claude, Cursor and the
// OpenAI API refuse longer ones.
const maxToolNameLen = config.MaxToolNameLen

// hashLen is the number of hex digits that keep a shortened name unique.
const hashLen = 8

// Key identifies one upstream tool, prompt, resource or template: its
// server and its name (or URI) there.
type Key struct {
	Server   string
	Original string
}

// publish assigns every upstream tool its published name under the
// naming policy. The result is deterministic for the same input, whatever
// the order: names must not change between replicas or restarts. Tools that
// the policy cannot publish (policy never, name taken by an earlier server)
// are returned in hidden with the server that keeps the name.
//
// reserved are names the hub's own tools hold: an upstream tool never gets
// one (it is prefixed, hidden or hashed as if another server offered it).
func publish(keys []Key, naming config.Naming, reserved ...string) (names map[Key]string, hidden map[Key]string) {
	names, hidden, _ = assignNames(keys, naming, Sanitize, nil, reserved...)
	return names, hidden
}

// publishClaimed is publish for prefix on-conflict with claims: the
// names published before (name -> tool), also of tools not offered now (a
// server that is down). A tool with a claim keeps its name, and nobody
// else gets it, so a name keeps reaching the tool it was first given to
// whichever servers are up: a conflict that appears later prefixes the
// newcomer only. fresh are the names given to tools without a claim, to be
// claimed. The other policies ignore claims (their names depend on the
// tool alone, or, for never, the hidden tool has no name to keep).
func publishClaimed(keys []Key, naming config.Naming, claims map[string]Key, reserved ...string) (names, hidden, fresh map[Key]string) {
	return assignNames(keys, naming, Sanitize, claims, reserved...)
}

// Prompts names prompts under the naming policy as tools are named, but
// keeping their characters: only tool names must fit model APIs.
func Prompts(keys []Key, naming config.Naming) map[Key]string {
	names, _, _ := assignNames(keys, naming, func(s string) string { return s }, nil)
	return names
}

// assignNames is publishClaimed with clean as the rule for what a name may
// hold (prompt names are kept as they are).
func assignNames(keys []Key, naming config.Naming, clean func(string) string, claims map[string]Key, reserved ...string) (names, hidden, fresh map[Key]string) {
	sorted := append([]Key(nil), keys...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Server != sorted[j].Server {
			return sorted[i].Server < sorted[j].Server
		}
		return sorted[i].Original < sorted[j].Original
	})
	if naming.Prefix != config.PrefixOnConflict {
		claims = nil
	}
	isReserved := make(map[string]bool, len(reserved))
	for _, r := range reserved {
		isReserved[r] = true
	}

	// The claims in force: one name per tool and one tool per name (a
	// store keeps them so; the smallest name wins if one did not), never
	// a hub tool's name (the hub's own tools keep theirs; the claim comes
	// back into force when the hub tool is gone).
	claimed := make(map[Key]string, len(claims))
	blocked := make(map[string]bool, len(claims))
	claimNames := make([]string, 0, len(claims))
	for n := range claims {
		claimNames = append(claimNames, n)
	}
	sort.Strings(claimNames)
	hasClaim := make(map[Key]bool, len(claims))
	for _, n := range claimNames {
		k := claims[n]
		hasClaim[k] = true
		if _, dup := claimed[k]; dup || isReserved[n] || !publishable(n) {
			continue
		}
		claimed[k] = n
		blocked[n] = true
	}

	// How many distinct servers offer each bare name.
	offered := make(map[string]map[string]bool, len(sorted))
	offer := func(name, server string) {
		if offered[name] == nil {
			offered[name] = map[string]bool{}
		}
		offered[name][server] = true
	}
	for _, k := range sorted {
		offer(clean(k.Original), k.Server)
	}
	// The hub's own tools count as one more server offering their names;
	// a claimed name counts as offered by its owner, so that a newcomer
	// offering it is prefixed rather than hashed.
	const hub = "\x00hub"
	for _, r := range reserved {
		offer(r, hub)
	}
	for n := range blocked {
		offer(n, claims[n].Server)
	}

	names = make(map[Key]string, len(sorted))
	hidden = map[Key]string{}
	pending := map[Key]string{}
	owner := make(map[string]Key, len(sorted)+len(reserved))
	for _, r := range reserved {
		owner[r] = Key{Server: "hub", Original: r}
	}
	for _, k := range sorted {
		if n, ok := claimed[k]; ok {
			names[k] = n
			continue
		}
		bare := clean(k.Original)
		var name string
		switch {
		case naming.Prefix == config.PrefixAlways,
			naming.Prefix == config.PrefixOnConflict && len(offered[bare]) > 1:
			name = Sanitize(k.Server) + naming.Separator + bare
		default:
			name = bare
		}
		if naming.Prefix == config.PrefixNever {
			if prev, taken := owner[name]; taken && prev.Server != k.Server {
				hidden[k] = prev.Server
				continue
			}
		}
		if len(name) > maxToolNameLen {
			name = withHash(name, k)
		}
		owner[name] = k
		pending[k] = name
	}

	// Names can still meet: sanitizing maps "a.b" and "a_b" together, and
	// a prefix can equal another server's bare name or a claimed name.
	// Every new name taken more than once becomes a hashed name of its
	// own; claimed names stay as they are.
	count := make(map[string]int, len(pending)+len(reserved)+len(blocked))
	for _, n := range pending {
		count[n]++
	}
	for _, r := range reserved {
		count[r]++
	}
	for n := range blocked {
		count[n]++
	}
	fresh = make(map[Key]string, len(pending))
	for k, n := range pending {
		if count[n] > 1 {
			n = withHash(n, k)
		}
		names[k] = n
		if claims != nil && !hasClaim[k] {
			fresh[k] = n
		}
	}
	return names, hidden, fresh
}

// publishable says whether name may be published: a claim read from a store
// that does not is ignored.
func publishable(name string) bool {
	if name == "" || len(name) > maxToolNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !validByte(name[i]) {
			return false
		}
	}
	return true
}

// Sanitize keeps only the characters model APIs accept in tool names; the
// catalog names agents' tools with it too.
func Sanitize(s string) string {
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

func validByte(c byte) bool { return config.ToolNameByte(c) }

// withHash makes a name unique and at most maxToolNameLen long: it keeps the
// start (the readable part) and appends a hash of the tool's full identity
// (the unique part).
func withHash(name string, k Key) string {
	sum := sha256.Sum256([]byte(k.Server + "\x00" + k.Original))
	h := hex.EncodeToString(sum[:])[:hashLen]
	keep := min(len(name), maxToolNameLen-hashLen-1)
	return name[:keep] + "_" + h
}
