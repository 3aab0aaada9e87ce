package naming

import (
	"context"
	"sort"
	"time"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/pinning"
)

// Stable names (prefix on-conflict). Every name published is claimed for
// its tool in a claim store (persisted, shared by replicas); a rebuild
// publishes claimed names first and names only the newcomers, then claims
// those. A claim outlives its server being down or the tool missing from
// a list: it ends only when the server is removed from every source, once
// all sources have reported (before that a missing server may just be in a
// source that has not spoken yet).
//
// New names are claimed only once the hub has settled: every source has
// reported and every server has answered or failed its first connection.
// Before that, names are published from what is known without claiming
// them: two servers up at start that offer the same tool are both
// prefixed, as before, instead of the first to answer winning the bare
// name by a race.

// claimRetry is how long a failing claim store is left alone: names are
// still published, and claimed in memory until a write succeeds.
const claimRetry = 30 * time.Second

// storeTimeout bounds one write of the claim store (a ConfigMap update)
// during a rebuild.
const storeTimeout = 10 * time.Second

// claimAttempts bounds the rounds of proposing names another replica may
// have claimed meanwhile; each lost round adopts the winner's claims.
const claimAttempts = 3

// Claims are the catalog's side of the stable names: the claim store, the
// claims not saved yet and whether the store is failing. It is a type of
// its own because it is a protocol with the store (propose, adopt another
// replica's claims, release, back off a failing store) that the rebuild
// only asks one question of: what are the names now (Names). Only the
// rebuild goroutine uses it; Changed may be read by any.
type Claims struct {
	store  pinning.ClaimStore
	naming config.Naming
	log    zerolog.Logger
	// unsaved are the claims not saved yet, by name (held in memory
	// while the store fails).
	unsaved map[string]Key
	// failedAt is when the store last failed a write.
	failedAt time.Time
}

// NewClaims returns the claims kept in store (in memory when nil, stable
// while the process runs), naming tools under the policy naming.
func NewClaims(store pinning.ClaimStore, naming config.Naming, log zerolog.Logger) *Claims {
	if store == nil {
		store = pinning.NewMemoryClaims()
	}
	return &Claims{store: store, naming: naming, log: log, unsaved: map[string]Key{}}
}

// Changed fires when another replica claimed or released names: the next
// Names adopts them.
func (cl *Claims) Changed() <-chan struct{} { return cl.store.ClaimsChanged() }

// Names names the tools of the servers (every server in the sources, up
// or not) under the naming policy and the claims; reserved are the names
// the hub's own tools hold; ready says every source has reported, settled
// that new names may be claimed. The tools in hidden are not published;
// each maps to the server that keeps its name.
func (cl *Claims) Names(ctx context.Context, keys []Key, servers []string, reserved []string, ready, settled bool) (names, hidden map[Key]string) {
	if cl.naming.Prefix != config.PrefixOnConflict {
		return publish(keys, cl.naming, reserved...)
	}
	present := make(map[string]bool, len(servers))
	for _, s := range servers {
		present[s] = true
	}
	if ready {
		cl.release(ctx, present)
	}
	for attempt := 0; ; attempt++ {
		held := cl.inForce(present, ready)
		var fresh map[Key]string
		names, hidden, fresh = publishClaimed(keys, cl.naming, held, reserved...)
		if !settled {
			return names, hidden
		}
		for k, n := range fresh {
			cl.unsaved[n] = k
		}
		if len(cl.unsaved) == 0 || attempt == claimAttempts || cl.failing() {
			return names, hidden
		}
		candidates := make([]pinning.Claim, 0, len(cl.unsaved))
		for n, k := range cl.unsaved {
			candidates = append(candidates, pinning.Claim{Name: n, Key: pinning.Key{Server: k.Server, Tool: k.Original}})
		}
		sort.Slice(candidates, func(i, j int) bool { return candidates[i].Name < candidates[j].Name })
		wctx, cancel := context.WithTimeout(ctx, storeTimeout)
		inForce, err := cl.store.ClaimFirst(wctx, candidates)
		cancel()
		if err != nil {
			cl.failedAt = time.Now()
			cl.log.Error().Err(err).Int("names", len(candidates)).Msg("stable names: could not save name claims; held in memory until saved")
			return names, hidden
		}
		cl.failedAt = time.Time{}
		won := true
		got := make(map[string]pinning.Key, len(inForce))
		for _, c := range inForce {
			got[c.Name] = c.Key
		}
		for _, c := range candidates {
			if got[c.Name] != c.Key {
				won = false
			}
		}
		clear(cl.unsaved)
		if won {
			return names, hidden
		}
		// Another replica claimed some of these names (or named some of
		// these tools) first: publish under its claims instead.
		cl.log.Debug().Msg("stable names: another writer claimed names first; adopting its claims")
	}
}

// inForce are the store's claims, and the ones not saved yet that
// do not contradict them. Once every source has reported, the claims of
// servers no source holds are not in force (release drops them).
func (cl *Claims) inForce(present map[string]bool, ready bool) map[string]Key {
	stored := cl.store.Claims()
	held := make(map[string]Key, len(stored)+len(cl.unsaved))
	keyed := make(map[Key]bool, len(stored))
	for _, c := range stored {
		k := Key{Server: c.Server, Original: c.Tool}
		keyed[k] = true
		if ready && !present[c.Server] {
			continue
		}
		held[c.Name] = k
	}
	for n, k := range cl.unsaved {
		_, taken := held[n]
		if taken || keyed[k] || ready && !present[k.Server] {
			delete(cl.unsaved, n)
			continue
		}
		held[n] = k
	}
	return held
}

// release drops the claims of servers that no source holds.
func (cl *Claims) release(ctx context.Context, present map[string]bool) {
	var gone []string
	seen := map[string]bool{}
	for _, c := range cl.store.Claims() {
		if !present[c.Server] && !seen[c.Server] {
			seen[c.Server] = true
			gone = append(gone, c.Server)
		}
	}
	if len(gone) == 0 || cl.failing() {
		return
	}
	sort.Strings(gone)
	wctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if err := cl.store.Release(wctx, gone...); err != nil {
		cl.failedAt = time.Now()
		cl.log.Error().Err(err).Strs("servers", gone).Msg("stable names: could not release the names of removed servers")
		return
	}
	cl.log.Info().Strs("servers", gone).Msg("stable names: names of removed servers released")
}

// failing says the claim store failed less than claimRetry ago: a
// rebuild does not wait on a dead store again and again.
func (cl *Claims) failing() bool {
	return !cl.failedAt.IsZero() && time.Since(cl.failedAt) < claimRetry
}
