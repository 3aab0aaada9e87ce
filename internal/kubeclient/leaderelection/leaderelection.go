/*
Copyright 2015 The Kubernetes Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package leaderelection is client-go's leader election
// (k8s.io/client-go/tools/leaderelection, v0.34.4), its LeaderElector
// copied, with the changes listed below, on a Lease read and written over
// the hub's dynamic client (lease.go). client-go's own package cannot be
// linked: its resourcelock imports the typed Clientset, which registers
// every API group of Kubernetes (355 more packages and 14 MB more binary,
// measured on the hub: 959 packages, 40.6 MiB, over the hub's budget of
// 700 and 40 MB). Left out: the coordinated election (alpha), metrics,
// the healthz adaptor, Events on the Lease and the OnNewLeader callback
// (it ran in a goroutine nobody waited for).
//
// A client acts only on timestamps captured locally: it does not trust the
// times in the record (another clock wrote them), only their change, so it
// tolerates clock skew but not a skewed clock rate. It does not guarantee
// that only one client acts as leader (no fencing): a leader that cannot
// renew stops at RenewDeadline, before its LeaseDuration runs out for the
// others.
//
// Where it differs from client-go, so that the leader does stop in time
// (issue 41: a leader that could not renew went on for 21 s):
//   - every Lease request is bounded by RenewDeadline, and a renewal by what
//     is left of the term, so a request to a frozen API server cannot hold
//     the elector past it;
//   - the leader's term (the context OnStartedLeading gets) ends at
//     RenewDeadline after the start of its last successful Lease write, by
//     the monotonic clock, checked on every Done and Err of the context
//     (see term), not only when the renew loop gets round to it;
//   - a leader that could not renew ends its term and calls
//     OnStoppedLeading at once; it does not first try to release the Lease
//     (a release only follows the end of Run's context while the term
//     lasts, and never overwrites a Lease another holds).
package leaderelection

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// JitterFactor spreads the retries of the candidates.
const JitterFactor = 1.2

// NewLeaderElector creates a LeaderElector from a LeaderElectionConfig
func NewLeaderElector(lec LeaderElectionConfig) (*LeaderElector, error) {
	if lec.LeaseDuration <= lec.RenewDeadline {
		return nil, fmt.Errorf("leaseDuration must be greater than renewDeadline")
	}
	if lec.RenewDeadline <= time.Duration(JitterFactor*float64(lec.RetryPeriod)) {
		return nil, fmt.Errorf("renewDeadline must be greater than retryPeriod*JitterFactor")
	}
	if lec.LeaseDuration < 1 {
		return nil, fmt.Errorf("leaseDuration must be greater than zero")
	}
	if lec.RenewDeadline < 1 {
		return nil, fmt.Errorf("renewDeadline must be greater than zero")
	}
	if lec.RetryPeriod < 1 {
		return nil, fmt.Errorf("retryPeriod must be greater than zero")
	}
	if lec.Callbacks.OnStartedLeading == nil {
		return nil, fmt.Errorf("OnStartedLeading callback must not be nil")
	}
	if lec.Callbacks.OnStoppedLeading == nil {
		return nil, fmt.Errorf("OnStoppedLeading callback must not be nil")
	}

	if lec.Lock == nil {
		return nil, fmt.Errorf("lock must not be nil")
	}
	id := lec.Lock.Identity()
	if id == "" {
		return nil, fmt.Errorf("lock identity is empty")
	}

	le := LeaderElector{
		config: lec,
		clock:  clock.RealClock{},
	}
	return &le, nil
}

// LeaderElectionConfig is what an election runs on.
type LeaderElectionConfig struct {
	// Lock is the resource that will be used for locking
	Lock Lock

	// LeaseDuration is the duration that non-leader candidates will
	// wait to force acquire leadership. This is measured against time of
	// last observed ack.
	//
	// A client needs to wait a full LeaseDuration without observing a change to
	// the record before it can attempt to take over. When all clients are
	// shutdown and a new set of clients are started with different names against
	// the same leader record, they must wait the full LeaseDuration before
	// attempting to acquire the lease. Thus LeaseDuration should be as short as
	// possible (within your tolerance for clock skew rate) to avoid a possible
	// long waits in the scenario.
	//
	// Core clients default this value to 15 seconds.
	LeaseDuration time.Duration
	// RenewDeadline is the duration that the acting master will retry
	// refreshing leadership before giving up.
	//
	// Core clients default this value to 10 seconds.
	RenewDeadline time.Duration
	// RetryPeriod is the duration the LeaderElector clients should wait
	// between tries of actions.
	//
	// Core clients default this value to 2 seconds.
	RetryPeriod time.Duration

	// Callbacks are callbacks that are triggered during certain lifecycle
	// events of the LeaderElector
	Callbacks LeaderCallbacks

	// ReleaseOnCancel should be set true if the lock should be released
	// when the run context is cancelled. If you set this to true, you must
	// ensure all code guarded by this lease has successfully completed
	// prior to cancelling the context, or you may have two processes
	// simultaneously acting on the critical path.
	ReleaseOnCancel bool

	// Name is the name of the resource lock for debugging
	Name string
}

// LeaderCallbacks are callbacks that are triggered during certain
// lifecycle events of the LeaderElector. These are invoked asynchronously.
type LeaderCallbacks struct {
	// OnStartedLeading is called when a LeaderElector client starts
	// leading, with a context that ends when it stops. It must return at
	// once: the lease is renewed only after it returns.
	OnStartedLeading func(context.Context)
	// OnStoppedLeading is called when a LeaderElector client stops leading.
	// This callback is always called when the LeaderElector exits, even if it did not start leading.
	// Users should not assume that OnStoppedLeading is only called after OnStartedLeading.
	OnStoppedLeading func()
}

// LeaderElector is a leader election client.
type LeaderElector struct {
	config LeaderElectionConfig
	// internal bookkeeping
	observedRecord    LeaderElectionRecord
	observedRawRecord []byte
	observedTime      time.Time
	// clock is wrapper around time to allow for less flaky testing
	clock clock.Clock

	// used to lock the observedRecord
	observedRecordLock sync.Mutex

	// renewedAt is when the last Lease write that succeeded was sent
	// (monotonic): the others cannot see the lease expire before
	// renewedAt + LeaseDuration, and this client leads only until
	// renewedAt + RenewDeadline. Used by Run's goroutine alone.
	renewedAt time.Time
}

// Run starts the leader election loop. Run will not return
// before leader election loop is stopped by ctx or it has
// stopped holding the leader lease
func (le *LeaderElector) Run(ctx context.Context) {
	defer runtime.HandleCrash()
	defer le.config.Callbacks.OnStoppedLeading()

	if !le.acquire(ctx) {
		return // ctx signalled done
	}
	t := newTerm(ctx, le.renewedAt.Add(le.config.RenewDeadline))
	// Called in this goroutine, unlike client-go's (go ...): no goroutine
	// is left without an owner, and OnStoppedLeading always comes after.
	le.config.Callbacks.OnStartedLeading(t)
	held := le.renew(ctx, t)
	// The term ends before anything else: what the leader writes stops
	// first, then the Lease is released, then OnStoppedLeading (deferred).
	t.stop(context.Canceled)
	if held && le.config.ReleaseOnCancel {
		le.release()
	}
}

// GetLeader returns the identity of the last observed leader or returns the empty string if
// no leader has yet been observed.
// This function is for informational purposes. (e.g. monitoring, logs, etc.)
func (le *LeaderElector) GetLeader() string {
	return le.getObservedRecord().HolderIdentity
}

// IsLeader returns true if the last observed leader was this client else returns false.
func (le *LeaderElector) IsLeader() bool {
	return le.getObservedRecord().HolderIdentity == le.config.Lock.Identity()
}

// acquire loops calling tryAcquireOrRenew and returns true immediately when tryAcquireOrRenew succeeds.
// Returns false if ctx signals done.
func (le *LeaderElector) acquire(ctx context.Context) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	succeeded := false
	desc := le.config.Lock.Describe()
	klog.Infof("attempting to acquire leader lease %v...", desc)
	wait.JitterUntil(func() {
		// Each attempt is bounded: a request to an API server that does
		// not answer must not hold the candidate for ever.
		attempt, cancelAttempt := context.WithTimeout(ctx, le.config.RenewDeadline)
		defer cancelAttempt()
		succeeded = le.tryAcquireOrRenew(attempt)
		if !succeeded {
			klog.V(4).Infof("failed to acquire lease %v", desc)
			return
		}
		klog.Infof("successfully acquired lease %v", desc)
		cancel()
	}, le.config.RetryPeriod, JitterFactor, true, ctx.Done())
	return succeeded
}

// renew renews the lease every RetryPeriod while term lasts. It returns
// when ctx ends, with held true if the term still lasted then, or when a
// renewal did not succeed before the term's end (RenewDeadline after the
// last successful write), with held false: the term is over (ErrNotRenewed).
func (le *LeaderElector) renew(ctx context.Context, t *term) (held bool) {
	desc := le.config.Lock.Describe()
	next := time.NewTimer(le.config.RetryPeriod)
	defer next.Stop()
	for {
		select {
		case <-ctx.Done():
			return t.unexpired()
		case <-t.Done():
			if ctx.Err() != nil {
				return t.unexpired() // ctx ended meanwhile, and the term with it
			}
			klog.Infof("stopped leading %v: %v", desc, context.Cause(t))
			return false
		case <-next.C:
		}
		if err := le.renewOnce(ctx, t); err != nil {
			if ctx.Err() != nil {
				return t.unexpired()
			}
			t.stop(ErrNotRenewed)
			klog.Infof("failed to renew lease %v: %v; stopped leading", desc, err)
			return false
		}
		klog.V(5).Infof("successfully renewed lease %v", desc)
		next.Reset(le.config.RetryPeriod)
	}
}

// renewOnce tries to renew every RetryPeriod until it succeeds or the term
// ends: every request is bounded by what is left of it, so none outlives
// the renew deadline. It extends the term on success.
func (le *LeaderElector) renewOnce(ctx context.Context, t *term) error {
	rctx, cancel := context.WithDeadline(ctx, t.end())
	defer cancel()
	err := wait.PollUntilContextCancel(rctx, le.config.RetryPeriod, true, func(rctx context.Context) (bool, error) {
		return le.tryAcquireOrRenew(rctx), nil
	})
	if err != nil {
		return err
	}
	if !t.extend(le.renewedAt.Add(le.config.RenewDeadline)) {
		return ErrNotRenewed // renewed, but only after the term had ended
	}
	return nil
}

// release attempts to release the leader lease if we have acquired it.
func (le *LeaderElector) release() bool {
	ctx := context.Background()
	timeoutCtx, timeoutCancel := context.WithTimeout(ctx, le.config.RenewDeadline)
	defer timeoutCancel()
	// update the resourceVersion of lease
	oldLeaderElectionRecord, _, err := le.config.Lock.Get(timeoutCtx)
	if err != nil {
		if !errors.IsNotFound(err) {
			klog.Errorf("error retrieving resource lock %v: %v", le.config.Lock.Describe(), err)
			return false
		}
		klog.Infof("lease lock not found: %v", le.config.Lock.Describe())
		return false
	}

	if !le.IsLeader() || oldLeaderElectionRecord.HolderIdentity != le.config.Lock.Identity() {
		return true // another holds it now: never overwrite its lease
	}
	now := metav1.NewTime(le.clock.Now())
	leaderElectionRecord := LeaderElectionRecord{
		LeaderTransitions:    oldLeaderElectionRecord.LeaderTransitions,
		LeaseDurationSeconds: 1,
		RenewTime:            now,
		AcquireTime:          now,
	}
	if err := le.config.Lock.Update(timeoutCtx, leaderElectionRecord); err != nil {
		klog.Errorf("Failed to release lock: %v", err)
		return false
	}

	le.setObservedRecord(&leaderElectionRecord)
	return true
}

// tryAcquireOrRenew tries to acquire a leader lease if it is not already acquired,
// else it tries to renew the lease if it has already been acquired. Returns true
// on success else returns false.
func (le *LeaderElector) tryAcquireOrRenew(ctx context.Context) bool {
	now := metav1.NewTime(le.clock.Now())
	leaderElectionRecord := LeaderElectionRecord{
		HolderIdentity:       le.config.Lock.Identity(),
		LeaseDurationSeconds: int(le.config.LeaseDuration / time.Second),
		RenewTime:            now,
		AcquireTime:          now,
	}

	// 1. fast path for the leader to update optimistically assuming that the record observed
	// last time is the current version.
	if le.IsLeader() && le.isLeaseValid(now.Time) {
		oldObservedRecord := le.getObservedRecord()
		leaderElectionRecord.AcquireTime = oldObservedRecord.AcquireTime
		leaderElectionRecord.LeaderTransitions = oldObservedRecord.LeaderTransitions

		sent := le.clock.Now()
		err := le.config.Lock.Update(ctx, leaderElectionRecord)
		if err == nil {
			le.setObservedRecord(&leaderElectionRecord)
			le.renewedAt = sent
			return true
		}
		klog.Errorf("Failed to update lock optimistically: %v, falling back to slow path", err)
	}

	// 2. obtain or create the ElectionRecord
	oldLeaderElectionRecord, oldLeaderElectionRawRecord, err := le.config.Lock.Get(ctx)
	if err != nil {
		if !errors.IsNotFound(err) {
			klog.Errorf("error retrieving resource lock %v: %v", le.config.Lock.Describe(), err)
			return false
		}
		sent := le.clock.Now()
		if err = le.config.Lock.Create(ctx, leaderElectionRecord); err != nil {
			klog.Errorf("error initially creating leader election record: %v", err)
			return false
		}

		le.setObservedRecord(&leaderElectionRecord)
		le.renewedAt = sent

		return true
	}

	// 3. Record obtained, check the Identity & Time
	if !bytes.Equal(le.observedRawRecord, oldLeaderElectionRawRecord) {
		le.setObservedRecord(oldLeaderElectionRecord)

		le.observedRawRecord = oldLeaderElectionRawRecord
	}
	if len(oldLeaderElectionRecord.HolderIdentity) > 0 && le.isLeaseValid(now.Time) && !le.IsLeader() {
		klog.V(4).Infof("lock is held by %v and has not yet expired", oldLeaderElectionRecord.HolderIdentity)
		return false
	}

	// 4. We're going to try to update. The leaderElectionRecord is set to it's default
	// here. Let's correct it before updating.
	if le.IsLeader() {
		leaderElectionRecord.AcquireTime = oldLeaderElectionRecord.AcquireTime
		leaderElectionRecord.LeaderTransitions = oldLeaderElectionRecord.LeaderTransitions
	} else {
		leaderElectionRecord.LeaderTransitions = oldLeaderElectionRecord.LeaderTransitions + 1
	}

	// update the lock itself
	sent := le.clock.Now()
	if err = le.config.Lock.Update(ctx, leaderElectionRecord); err != nil {
		klog.Errorf("Failed to update lock: %v", err)
		return false
	}

	le.setObservedRecord(&leaderElectionRecord)
	le.renewedAt = sent
	return true
}

func (le *LeaderElector) isLeaseValid(now time.Time) bool {
	return le.observedTime.Add(time.Second * time.Duration(le.getObservedRecord().LeaseDurationSeconds)).After(now)
}

// setObservedRecord will set a new observedRecord and update observedTime to the current time.
// Protect critical sections with lock.
func (le *LeaderElector) setObservedRecord(observedRecord *LeaderElectionRecord) {
	le.observedRecordLock.Lock()
	defer le.observedRecordLock.Unlock()

	le.observedRecord = *observedRecord
	le.observedTime = le.clock.Now()
}

// getObservedRecord returns observersRecord.
// Protect critical sections with lock.
func (le *LeaderElector) getObservedRecord() LeaderElectionRecord {
	le.observedRecordLock.Lock()
	defer le.observedRecordLock.Unlock()

	return le.observedRecord
}
