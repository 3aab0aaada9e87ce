/*
Copyright 2018 The Kubernetes Authors.

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

// Derived from client-go v0.34.4 tools/leaderelection/resourcelock
// (interface.go, leaselock.go): the record, the lock's interface and the
// Lease lock, over kubeclient's Lease instead of the typed clients.

package leaderelection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/purko-io/mcp-hub/internal/kubeclient"
)

// LeaderElectionRecord is the record of an election, as client-go's
// resourcelock keeps it in a Lease's spec.
type LeaderElectionRecord struct {
	HolderIdentity       string      `json:"holderIdentity"`
	LeaseDurationSeconds int         `json:"leaseDurationSeconds"`
	AcquireTime          metav1.Time `json:"acquireTime"`
	RenewTime            metav1.Time `json:"renewTime"`
	LeaderTransitions    int         `json:"leaderTransitions"`
	Strategy             string      `json:"strategy"`
	PreferredHolder      string      `json:"preferredHolder"`
}

// Lock is where the record is kept (client-go's resourcelock.Interface
// without RecordEvent).
type Lock interface {
	// Get returns the LeaderElectionRecord and its JSON.
	Get(ctx context.Context) (*LeaderElectionRecord, []byte, error)
	// Create attempts to create a LeaderElectionRecord.
	Create(ctx context.Context, ler LeaderElectionRecord) error
	// Update will update an existing LeaderElectionRecord.
	Update(ctx context.Context, ler LeaderElectionRecord) error
	// Identity will return the locks Identity.
	Identity() string
	// Describe is used to convert details on current resource lock
	// into a string.
	Describe() string
}

// LeaseLock is client-go's resourcelock.LeaseLock over the dynamic client.
// It is used by one LeaderElector's goroutine at a time.
type LeaseLock struct {
	leases    kubeclient.Client[kubeclient.Lease]
	namespace string
	name      string
	identity  string
	lease     *kubeclient.Lease
}

// NewLeaseLock returns the lock on the Lease namespace/name, held as
// identity. It needs get, create and update on leases.
func NewLeaseLock(dyn dynamic.Interface, namespace, name, identity string) *LeaseLock {
	return &LeaseLock{leases: kubeclient.Leases.In(dyn, namespace), namespace: namespace, name: name, identity: identity}
}

// Get returns the election record from a Lease spec
func (ll *LeaseLock) Get(ctx context.Context) (*LeaderElectionRecord, []byte, error) {
	lease, err := ll.leases.Get(ctx, ll.name)
	if err != nil {
		return nil, nil, err
	}
	ll.lease = lease
	record := LeaseSpecToLeaderElectionRecord(&ll.lease.Spec)
	recordByte, err := json.Marshal(*record)
	if err != nil {
		return nil, nil, err
	}
	return record, recordByte, nil
}

// Create attempts to create a Lease
func (ll *LeaseLock) Create(ctx context.Context, ler LeaderElectionRecord) error {
	lease := &kubeclient.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: ll.name, Namespace: ll.namespace},
		Spec:       LeaderElectionRecordToLeaseSpec(&ler),
	}
	var err error
	ll.lease, err = ll.leases.Create(ctx, lease)
	return err
}

// Update will update an existing Lease spec.
func (ll *LeaseLock) Update(ctx context.Context, ler LeaderElectionRecord) error {
	if ll.lease == nil {
		return errors.New("lease not initialized, call get or create first")
	}
	ll.lease.Spec = LeaderElectionRecordToLeaseSpec(&ler)
	lease, err := ll.leases.Update(ctx, ll.lease)
	if err != nil {
		return err
	}
	ll.lease = lease
	return nil
}

// Describe is used to convert details on current resource lock
// into a string
func (ll *LeaseLock) Describe() string {
	return fmt.Sprintf("%v/%v", ll.namespace, ll.name)
}

// Identity returns the Identity of the lock
func (ll *LeaseLock) Identity() string {
	return ll.identity
}

// LeaseSpecToLeaderElectionRecord reads the record of a Lease's spec.
func LeaseSpecToLeaderElectionRecord(spec *kubeclient.LeaseSpec) *LeaderElectionRecord {
	var r LeaderElectionRecord
	if spec.HolderIdentity != nil {
		r.HolderIdentity = *spec.HolderIdentity
	}
	if spec.LeaseDurationSeconds != nil {
		r.LeaseDurationSeconds = int(*spec.LeaseDurationSeconds)
	}
	if spec.LeaseTransitions != nil {
		r.LeaderTransitions = int(*spec.LeaseTransitions)
	}
	if spec.AcquireTime != nil {
		r.AcquireTime = metav1.Time{Time: spec.AcquireTime.Time}
	}
	if spec.RenewTime != nil {
		r.RenewTime = metav1.Time{Time: spec.RenewTime.Time}
	}
	if spec.PreferredHolder != nil {
		r.PreferredHolder = *spec.PreferredHolder
	}
	if spec.Strategy != nil {
		r.Strategy = *spec.Strategy
	}
	return &r
}

// LeaderElectionRecordToLeaseSpec writes the record as a Lease's spec.
func LeaderElectionRecordToLeaseSpec(ler *LeaderElectionRecord) kubeclient.LeaseSpec {
	leaseDurationSeconds := int32(ler.LeaseDurationSeconds)
	leaseTransitions := int32(ler.LeaderTransitions)
	spec := kubeclient.LeaseSpec{
		HolderIdentity:       &ler.HolderIdentity,
		LeaseDurationSeconds: &leaseDurationSeconds,
		AcquireTime:          &metav1.MicroTime{Time: ler.AcquireTime.Time},
		RenewTime:            &metav1.MicroTime{Time: ler.RenewTime.Time},
		LeaseTransitions:     &leaseTransitions,
	}
	if ler.PreferredHolder != "" {
		spec.PreferredHolder = &ler.PreferredHolder
	}
	if ler.Strategy != "" {
		spec.Strategy = &ler.Strategy
	}
	return spec
}
