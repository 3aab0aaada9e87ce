package registry

import (
	"context"
	"sort"
	"time"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/pinning"
)

// Stable names (prefix on-conflict). Every name published is claimed for
// its tool in Options.Names (persisted, shared by replicas); a rebuild
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

// claimAttempts bounds the rounds of proposing names another replica may
// have claimed meanwhile; each lost round adopts the winner's claims.
const claimAttempts = 3

// stableNames names the tools of the servers (every server in the
// sources, up or not) under the naming policy and the claims; settled says
// new names may be claimed. Only the rebuild goroutine calls it.
func (r *Registry) stableNames(ctx context.Context, keys []toolKey, servers []string, reserved []string, settled bool) (names, hidden map[toolKey]string) {
	if r.opts.Naming.Prefix != config.PrefixOnConflict {
		return publishNames(keys, r.opts.Naming, reserved...)
	}
	present := make(map[string]bool, len(servers))
	for _, s := range servers {
		present[s] = true
	}
	ready := r.Ready()
	if ready {
		r.releaseClaims(ctx, present)
	}
	for attempt := 0; ; attempt++ {
		claims := r.claimsInForce(present, ready)
		var fresh map[toolKey]string
		names, hidden, fresh = publishClaimed(keys, r.opts.Naming, claims, reserved...)
		if !settled {
			return names, hidden
		}
		for k, n := range fresh {
			r.unsavedClaims[n] = k
		}
		if len(r.unsavedClaims) == 0 || attempt == claimAttempts || r.claimsFailing() {
			return names, hidden
		}
		candidates := make([]pinning.Claim, 0, len(r.unsavedClaims))
		for n, k := range r.unsavedClaims {
			candidates = append(candidates, pinning.Claim{Name: n, Key: pinning.Key{Server: k.Server, Tool: k.Original}})
		}
		sort.Slice(candidates, func(i, j int) bool { return candidates[i].Name < candidates[j].Name })
		wctx, cancel := context.WithTimeout(ctx, pinCheckTimeout)
		inForce, err := r.names.ClaimFirst(wctx, candidates)
		cancel()
		if err != nil {
			r.claimFailedAt = time.Now()
			r.log.Error().Err(err).Int("names", len(candidates)).Msg("stable names: could not save name claims; held in memory until saved")
			return names, hidden
		}
		r.claimFailedAt = time.Time{}
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
		clear(r.unsavedClaims)
		if won {
			return names, hidden
		}
		// Another replica claimed some of these names (or named some of
		// these tools) first: publish under its claims instead.
		r.log.Debug().Msg("stable names: another writer claimed names first; adopting its claims")
	}
}

// claimsInForce are the store's claims, and the ones not saved yet that
// do not contradict them. Once every source has reported, the claims of
// servers no source holds are not in force (releaseClaims drops them).
func (r *Registry) claimsInForce(present map[string]bool, ready bool) map[string]toolKey {
	stored := r.names.Claims()
	claims := make(map[string]toolKey, len(stored)+len(r.unsavedClaims))
	keyed := make(map[toolKey]bool, len(stored))
	for _, c := range stored {
		k := toolKey{Server: c.Server, Original: c.Tool}
		keyed[k] = true
		if ready && !present[c.Server] {
			continue
		}
		claims[c.Name] = k
	}
	for n, k := range r.unsavedClaims {
		_, taken := claims[n]
		if taken || keyed[k] || ready && !present[k.Server] {
			delete(r.unsavedClaims, n)
			continue
		}
		claims[n] = k
	}
	return claims
}

// releaseClaims drops the claims of servers that no source holds.
func (r *Registry) releaseClaims(ctx context.Context, present map[string]bool) {
	var gone []string
	seen := map[string]bool{}
	for _, c := range r.names.Claims() {
		if !present[c.Server] && !seen[c.Server] {
			seen[c.Server] = true
			gone = append(gone, c.Server)
		}
	}
	if len(gone) == 0 || r.claimsFailing() {
		return
	}
	sort.Strings(gone)
	wctx, cancel := context.WithTimeout(ctx, pinCheckTimeout)
	defer cancel()
	if err := r.names.Release(wctx, gone...); err != nil {
		r.claimFailedAt = time.Now()
		r.log.Error().Err(err).Strs("servers", gone).Msg("stable names: could not release the names of removed servers")
		return
	}
	r.log.Info().Strs("servers", gone).Msg("stable names: names of removed servers released")
}

// claimsFailing says the claim store failed less than claimRetry ago: a
// rebuild does not wait on a dead store again and again.
func (r *Registry) claimsFailing() bool {
	return !r.claimFailedAt.IsZero() && time.Since(r.claimFailedAt) < claimRetry
}
