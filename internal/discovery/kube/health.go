package kube

import (
	"context"
	"errors"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/rs/zerolog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"

	"github.com/purko-io/mcp-hub/internal/discovery"
)

// apiState is whether the API server answers the source. The informers'
// watch error handler and the CRD poll report failures; only the poll,
// which asks every crdPoll, can tell the server answers again (a watch
// that works reports nothing). While the server is unreachable the
// informers keep their caches and retry on their own, so the catalog
// stays as it was: apiState only lets the hub say so.
type apiState struct {
	log zerolog.Logger

	mu sync.Mutex
	// since is when the outage began; zero while the server answers.
	since time.Time
	// lastFailure is the latest failure, so that a poll asked before it
	// does not end the outage it saw begin.
	lastFailure time.Time
}

// failed records an error of a watch or of discovery at. Only an error
// that says the API server could not be reached or could not answer
// counts: an answer that refuses (Forbidden, NotFound of a CRD just
// deleted, Gone of an expired watch) is the server speaking.
func (a *apiState) failed(at time.Time, err error) {
	if !unreachable(err) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if at.After(a.lastFailure) {
		a.lastFailure = at
	}
	if a.since.IsZero() {
		a.since = at
		a.log.Warn().Err(err).Msg("the Kubernetes API server is unreachable; serving the last catalog until it answers again")
	}
}

// answered records that a discovery request sent at asked was answered.
// It ends the outage unless a failure came after asked.
func (a *apiState) answered(asked time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.since.IsZero() || a.lastFailure.After(asked) {
		return
	}
	a.log.Info().Time("since", a.since).Dur("for", asked.Sub(a.since).Round(time.Second)).Msg("the Kubernetes API server answers again")
	a.since = time.Time{}
}

// outage is the current outage, if any.
func (a *apiState) outage() (discovery.Outage, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.since.IsZero() {
		return discovery.Outage{}, false
	}
	return discovery.Outage{Source: SourceName, What: "kubernetes API", Since: a.since}, true
}

// watchErrors is the informers' watch error handler: client-go's own
// (which logs), then the failure recorded.
func (a *apiState) watchErrors(ctx context.Context, r *cache.Reflector, err error) {
	cache.DefaultWatchErrorHandler(ctx, r, err)
	a.failed(time.Now(), err)
}

// unreachable reports whether err means the API server did not answer:
// the connection failed (refused, reset, timed out) or the server answered
// 5xx (it is up, but cannot serve: its etcd is gone, say). A watch closed
// (EOF) is not: the reflector lists again, and that says.
func unreachable(err error) bool {
	var status apierrors.APIStatus
	var urlErr *url.Error
	var netErr net.Error
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return false
	case errors.As(err, &status):
		return status.Status().Code >= 500
	case errors.As(err, &urlErr), errors.As(err, &netErr):
		return true
	}
	return false
}
