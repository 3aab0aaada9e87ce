package kubeclient

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The structs below are the parts of the core/v1 and authentication/v1
// kinds the hub reads and writes, under the JSON names of k8s.io/api's.
// That module's core/v1 package registers its ~80 types with protobuf when
// the binary starts, which keeps every one of them, with their codecs,
// in the hub (some 3 MB) for the six it uses. A kind the hub updates
// (ConfigMap) has all of its fields, so an update keeps what others wrote.

// ConfigMap is a core/v1 ConfigMap, whole.
type ConfigMap struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Immutable  *bool             `json:"immutable,omitempty"`
	Data       map[string]string `json:"data,omitempty"`
	BinaryData map[string][]byte `json:"binaryData,omitempty"`
}

// Secret is what the hub reads of a core/v1 Secret.
type Secret struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Data map[string][]byte `json:"data,omitempty"`
	Type string            `json:"type,omitempty"`
}

// Pod is what the hub reads of a core/v1 Pod.
type Pod struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PodSpec `json:"spec,omitempty"`
}

// PodSpec is what the hub reads of a Pod's spec.
type PodSpec struct {
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// ObjectReference is a core/v1 ObjectReference: the object an Event is on.
type ObjectReference struct {
	Kind       string    `json:"kind,omitempty"`
	Namespace  string    `json:"namespace,omitempty"`
	Name       string    `json:"name,omitempty"`
	UID        types.UID `json:"uid,omitempty"`
	APIVersion string    `json:"apiVersion,omitempty"`
}

// Event types.
const (
	EventTypeNormal  = "Normal"
	EventTypeWarning = "Warning"
)

// Event is what the hub writes of a core/v1 Event.
type Event struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	InvolvedObject      ObjectReference `json:"involvedObject"`
	Reason              string          `json:"reason,omitempty"`
	Message             string          `json:"message,omitempty"`
	Source              EventSource     `json:"source,omitempty"`
	FirstTimestamp      metav1.Time     `json:"firstTimestamp,omitempty"`
	LastTimestamp       metav1.Time     `json:"lastTimestamp,omitempty"`
	Count               int32           `json:"count,omitempty"`
	Type                string          `json:"type,omitempty"`
	ReportingController string          `json:"reportingComponent"`
	ReportingInstance   string          `json:"reportingInstance"`
}

// EventSource is who wrote an Event.
type EventSource struct {
	Component string `json:"component,omitempty"`
	Host      string `json:"host,omitempty"`
}

// TokenReview is an authentication/v1 TokenReview.
type TokenReview struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TokenReviewSpec   `json:"spec"`
	Status TokenReviewStatus `json:"status,omitempty"`
}

// TokenReviewSpec is the token to review and the audiences it must be for.
type TokenReviewSpec struct {
	Token     string   `json:"token,omitempty"`
	Audiences []string `json:"audiences,omitempty"`
}

// TokenReviewStatus is the API server's answer.
type TokenReviewStatus struct {
	Authenticated bool     `json:"authenticated,omitempty"`
	User          UserInfo `json:"user,omitempty"`
	Audiences     []string `json:"audiences,omitempty"`
	Error         string   `json:"error,omitempty"`
}

// UserInfo is who a reviewed token belongs to.
type UserInfo struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// Lease is a coordination.k8s.io/v1 Lease, whole (it is updated): the lock
// of the replicas' leader election.
type Lease struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec LeaseSpec `json:"spec,omitempty"`
}

// LeaseSpec is a Lease's spec, under the JSON names of k8s.io/api's.
type LeaseSpec struct {
	HolderIdentity       *string           `json:"holderIdentity,omitempty"`
	LeaseDurationSeconds *int32            `json:"leaseDurationSeconds,omitempty"`
	AcquireTime          *metav1.MicroTime `json:"acquireTime,omitempty"`
	RenewTime            *metav1.MicroTime `json:"renewTime,omitempty"`
	LeaseTransitions     *int32            `json:"leaseTransitions,omitempty"`
	Strategy             *string           `json:"strategy,omitempty"`
	PreferredHolder      *string           `json:"preferredHolder,omitempty"`
}
