package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"time"

	"github.com/purko-io/mcp-hub/internal/kubeclient/leaderelection"
)

// Election says how the replicas pick the one that writes MCPServer
// status and Events: a coordination.k8s.io Lease, held by one at a time.
// The others keep watching and serving; only writing waits for the lease.
type Election struct {
	// Namespace and LeaseName name the Lease.
	Namespace, LeaseName string
	// Identity is this process in the Lease's holderIdentity (Identity()).
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's: the
	// others take over LeaseDuration after the leader's last renewal; the
	// leader stops writing when it could not renew for RenewDeadline.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Identity names this process among the candidates: the pod's name
// (POD_NAME, else the host name) and a random suffix, so that two
// processes on one host, or a restarted container of the same pod, are
// never taken for the holder before them.
func Identity() string {
	name := os.Getenv("POD_NAME")
	if name == "" {
		name, _ = os.Hostname()
	}
	if name == "" {
		name = "mcp-hub"
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return name + "_" + hex.EncodeToString(b)
}

// elect stands for the Lease until ctx ends: while this process holds it
// the writer writes (lead), and it stops the moment the lease is lost
// (follow). A lost lease is stood for again. On ctx's end the lease is
// released, so another replica takes over at once rather than after
// LeaseDuration.
//
// The term handed to the writer ends RenewDeadline after the leader's last
// renewal (monotonic clock), checked before every request made under it,
// so a leader that cannot reach the API server stops writing status and
// Events before the lease can expire for the others (LeaseDuration after
// that renewal), however late its renew loop runs.
func (w *statusWriter) elect(ctx context.Context, e Election) {
	lock := leaderelection.NewLeaseLock(w.dyn, e.Namespace, e.LeaseName, e.Identity)
	log := w.log.With().Str("lease", e.Namespace+"/"+e.LeaseName).Str("identity", e.Identity).Logger()
	for ctx.Err() == nil {
		var term context.Context // the current term; both callbacks run in le.Run's goroutine
		var since time.Time
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, Name: e.LeaseName, ReleaseOnCancel: true,
			LeaseDuration: e.LeaseDuration, RenewDeadline: e.RenewDeadline, RetryPeriod: e.RetryPeriod,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(t context.Context) {
					term, since = t, time.Now()
					log.Info().Msg("leading: this replica writes MCPServer status and Events")
					w.lead(t)
				},
				OnStoppedLeading: func() {
					if !w.follow() {
						return
					}
					ev := log.Info()
					if term != nil && errors.Is(context.Cause(term), leaderelection.ErrNotRenewed) {
						// Said loudly: the API server did not answer within
						// the renew deadline, and status waits for a leader.
						ev = log.Warn().Dur("renewDeadline", e.RenewDeadline)
					}
					ev.Dur("led", time.Since(since)).AnErr("cause", causeOf(term)).
						Msg("no longer leading: this replica stopped writing MCPServer status and Events")
				},
			},
		})
		if err != nil {
			// The config's validation refuses what the elector would.
			log.Error().Err(err).Msg("cannot stand for the lease; this replica never writes status")
			return
		}
		log.Debug().Msg("standing for the lease")
		le.Run(ctx)
	}
}

// causeOf says why a term ended (nil before one began).
func causeOf(term context.Context) error {
	if term == nil {
		return nil
	}
	return context.Cause(term)
}
