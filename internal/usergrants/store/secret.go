package store

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/purko-io/mcp-hub/internal/kubeclient"
)

const (
	// managedByLabel marks the Secret as the hub's, as the hub's other objects are.
	managedByLabel = "app.kubernetes.io/managed-by"
	managedBy      = "mcp-hub"
	// holdsAnnotation tells whoever finds the Secret what it is and not to edit it.
	holdsAnnotation = "mcp-hub.purko.io/holds"
	holds           = "per-user OAuth grants of mcp-hub, sealed with AES-256-GCM, one data key per record; " +
		"written by every replica of the hub with compare-and-swap: do not edit"
	// maxSecretBytes is the most data the API server takes in one Secret.
	maxSecretBytes = 1 << 20
	// secretTypeOpaque is the type of Secret the records are kept in.
	secretTypeOpaque = "Opaque"
)

// Secret is a Store in one Kubernetes Secret (type Opaque), created on first write with label
// app.kubernetes.io/managed-by=mcp-hub and an annotation saying what it holds; every record is
// one data key. Writes are Update calls conditioned on the Secret's resourceVersion (a Conflict
// means another replica wrote: reload and retry, as Update says); creation races (AlreadyExists)
// are handled the same way. A missing Secret is an empty store. Errors name the Secret
// (namespace/name) and what failed (e.g. RBAC forbidden: say which verb on secrets is missing).
// A Secret whose data exceeds ~1 MiB is refused by the API server: let that error through with
// a clear message (how many records it held).
//
// The hub needs get, create and update on secrets in namespace (get and update may be limited
// to resourceNames [name]; create cannot be). Concurrent Update calls on one Store value wait
// for each other: a replica never conflicts with itself, only with other replicas.
func Secret(dyn dynamic.Interface, namespace, name string) Store {
	return &secretStore{secrets: kubeclient.Secrets.In(dyn, namespace), namespace: namespace, name: name, gate: newGate()}
}

type secretStore struct {
	secrets         kubeclient.Client[kubeclient.Secret]
	namespace, name string
	gate            gate // held by Update across its attempts
}

func (s *secretStore) Where() string { return "Secret " + s.namespace + "/" + s.name }

func (s *secretStore) Load(ctx context.Context) (map[string][]byte, error) {
	sec, err := s.secrets.Get(ctx, s.name)
	if apierrors.IsNotFound(err) {
		return map[string][]byte{}, nil
	}
	if err != nil {
		return nil, s.failed("load records", "get", err)
	}
	records, err := s.records(sec)
	if err != nil {
		return nil, fmt.Errorf("load records: %w", err)
	}
	return cloneRecords(records), nil
}

func (s *secretStore) Update(ctx context.Context, change func(records map[string][]byte) error) error {
	if err := s.gate.enter(ctx, s.Where()); err != nil {
		return err
	}
	defer s.gate.leave()
	return update(ctx, s.Where(), s.attempt, change)
}

// attempt reads the Secret, applies the change and writes it back on the
// resourceVersion it read (or creates it if there was none).
func (s *secretStore) attempt(ctx context.Context, apply func(map[string][]byte) (map[string][]byte, bool, error)) error {
	sec, err := s.secrets.Get(ctx, s.name)
	create := apierrors.IsNotFound(err)
	if err != nil && !create {
		return s.failed("update records", "get", err)
	}
	var read map[string][]byte
	if create {
		read = map[string][]byte{}
	} else if read, err = s.records(sec); err != nil {
		return fmt.Errorf("update records: %w", err)
	}
	records, write, err := apply(read)
	if err != nil || !write {
		return err
	}
	if create {
		_, err = s.secrets.Create(ctx, &kubeclient.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: s.namespace,
				Labels:      map[string]string{managedByLabel: managedBy},
				Annotations: map[string]string{holdsAnnotation: holds}},
			Type: secretTypeOpaque,
			Data: records,
		})
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%w: create %s: %w", errConflict, s.Where(), err)
		}
		if err != nil {
			return s.writeFailed("create", records, err)
		}
		return nil
	}
	sec.Data = records
	_, err = s.secrets.Update(ctx, sec)
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) { // written or deleted since read
		return fmt.Errorf("%w: update %s: %w", errConflict, s.Where(), err)
	}
	if err != nil {
		return s.writeFailed("update", records, err)
	}
	return nil
}

// records is the data of a Secret that holds records; another type of
// Secret under the name is not one and is never written over.
func (s *secretStore) records(sec *kubeclient.Secret) (map[string][]byte, error) {
	if sec.Type != "" && sec.Type != secretTypeOpaque {
		return nil, fmt.Errorf("%s is of type %s, not %s: it is not a store of sealed records", s.Where(), sec.Type, secretTypeOpaque)
	}
	if sec.Data == nil {
		return map[string][]byte{}, nil
	}
	return sec.Data, nil
}

// failed says which request on the Secret failed, while doing what, and,
// when RBAC refused it, which verb the hub's ServiceAccount lacks.
func (s *secretStore) failed(doing, verb string, err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%s: %s %s: forbidden: the hub may not %s secrets in namespace %s (RBAC: grant verb %q on secrets): %w",
			doing, verb, s.Where(), verb, s.namespace, verb, err)
	}
	return fmt.Errorf("%s: %s %s: %w", doing, verb, s.Where(), err)
}

// writeFailed is failed for a write, with how many records and bytes it
// held, and why a Secret grown past what the API server takes was refused.
func (s *secretStore) writeFailed(verb string, records map[string][]byte, err error) error {
	size := 0
	for k, v := range records {
		size += len(k) + len(v)
	}
	doing := fmt.Sprintf("update records (%d records, %d bytes of data)", len(records), size)
	if size > maxSecretBytes || apierrors.IsRequestEntityTooLargeError(err) {
		return fmt.Errorf("%s: %s %s: refused: a Secret holds at most 1 MiB of data: %w", doing, verb, s.Where(), err)
	}
	return s.failed(doing, verb, err)
}
