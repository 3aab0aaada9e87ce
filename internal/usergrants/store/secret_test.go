package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/purko-io/mcp-hub/internal/kubetest"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

// secretName is the Secret the tests' hub keeps its records in.
const secretName = "mcp-hub-grants"

// hubAccess is what a hub needs for its grants Secret (Secret's doc):
// ServiceAccount hub gets exactly that; reader may only get it; nobody has
// no access at all.
const hubAccess = `
apiVersion: v1
kind: ServiceAccount
metadata: {name: hub, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: hub-grants, namespace: %[1]s}
rules:
- {apiGroups: [""], resources: [secrets], resourceNames: [%[2]s], verbs: [get, update]}
- {apiGroups: [""], resources: [secrets], verbs: [create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: hub-grants, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: hub-grants}
subjects: [{kind: ServiceAccount, name: hub, namespace: %[1]s}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: grants-reader, namespace: %[1]s}
rules:
- {apiGroups: [""], resources: [secrets], resourceNames: [%[2]s], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: grants-reader, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: grants-reader}
subjects: [{kind: ServiceAccount, name: reader, namespace: %[1]s}]
`

// cluster is a namespace of the shared API server set up with hubAccess.
type cluster struct {
	c     *kubetest.Cluster
	ns    string
	admin kubernetes.Interface
}

var namespaceSeq atomic.Int64

func newCluster(t *testing.T, prefix string) *cluster {
	t.Helper()
	c := kubetest.Shared(t)
	ns := fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e6, namespaceSeq.Add(1))
	kubetest.ApplyYAML(t, c.AdminConfig(), []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: "+ns+"}\n"))
	kubetest.ApplyYAML(t, c.AdminConfig(), fmt.Appendf(nil, hubAccess, ns, secretName))
	k := &cluster{c: c, ns: ns, admin: kubernetes.NewForConfigOrDie(c.AdminConfig())}
	// RBAC takes effect through the authorizer's informers: wait until it has.
	for _, sa := range []string{"hub", "reader"} {
		s := k.store(sa)
		kubetest.Eventually(t, 10*time.Second, func() error { _, err := s.Load(context.Background()); return err })
	}
	return k
}

// store is a Store as a replica running as ServiceAccount sa would open it,
// with a client of its own.
func (k *cluster) store(sa string) Store {
	return Secret(dynamic.NewForConfigOrDie(k.c.ServiceAccountConfig(k.ns, sa)), k.ns, secretName)
}

func (k *cluster) secret(t *testing.T) *corev1.Secret {
	t.Helper()
	s, err := k.admin.CoreV1().Secrets(k.ns).Get(context.Background(), secretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// hubSecret is a Store in a Secret of a fresh namespace, opened as the hub.
func hubSecret(t *testing.T, prefix string) Store {
	return newCluster(t, prefix).store("hub")
}

func TestSecretCreatedOnFirstWrite(t *testing.T) {
	ctx := context.Background()
	k := newCluster(t, "grants-create")
	s := k.store("hub")
	if got, want := s.Where(), "Secret "+k.ns+"/"+secretName; got != want {
		t.Errorf("Where = %q, want %q", got, want)
	}
	if records := mustLoad(t, s); records == nil || len(records) != 0 {
		t.Errorf("Load of a missing Secret = %v, want an empty map", records)
	}
	// Nothing to write, or an aborted change: still no Secret.
	errBoom := errors.New("refresh failed")
	if err := s.Update(ctx, func(r map[string][]byte) error { r["a"] = nil; return ErrUnchanged }); !errors.Is(err, ErrUnchanged) {
		t.Errorf("Update with ErrUnchanged = %v", err)
	}
	if err := s.Update(ctx, func(r map[string][]byte) error { r["a"] = nil; return errBoom }); err != errBoom {
		t.Errorf("Update = %v, want change's error itself", err)
	}
	if _, err := k.admin.CoreV1().Secrets(k.ns).Get(ctx, secretName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Secret after Updates that wrote nothing: %v, want NotFound", err)
	}

	want := map[string][]byte{"alice.github": {0, 1, 255}, "bob.linear": []byte("sealed")}
	if err := s.Update(ctx, set(want)); err != nil {
		t.Fatal(err)
	}
	sec := k.secret(t)
	if sec.Type != corev1.SecretTypeOpaque || sec.Labels["app.kubernetes.io/managed-by"] != "mcp-hub" ||
		!strings.Contains(sec.Annotations["mcp-hub.purko.io/holds"], "OAuth grants") {
		t.Errorf("created Secret: type %q, labels %v, annotations %v", sec.Type, sec.Labels, sec.Annotations)
	}
	if !equalRecords(sec.Data, want) {
		t.Errorf("Secret data %q, want one data key per record %q", sec.Data, want)
	}
	if got := mustLoad(t, k.store("hub")); !equalRecords(got, want) {
		t.Errorf("another replica's Load = %q, want %q", got, want)
	}

	// ErrUnchanged and errors write nothing to an existing Secret either.
	rv := sec.ResourceVersion
	if err := s.Update(ctx, func(r map[string][]byte) error { delete(r, "alice.github"); return ErrUnchanged }); !errors.Is(err, ErrUnchanged) {
		t.Error(err)
	}
	if err := s.Update(ctx, set(map[string][]byte{"bad/key": nil})); err == nil || !strings.Contains(err.Error(), "invalid record key") {
		t.Errorf("Update with an invalid key = %v", err)
	}
	if got := k.secret(t).ResourceVersion; got != rv {
		t.Errorf("resourceVersion %s -> %s: an Update that should write nothing wrote", rv, got)
	}

	// Load hands out copies.
	got := mustLoad(t, s)
	got["bob.linear"][0] = 'X'
	if again := mustLoad(t, s); !equalRecords(again, want) {
		t.Errorf("changing Load's map changed the store: %q", again)
	}
}

func TestSecretDeleteKey(t *testing.T) {
	ctx := context.Background()
	k := newCluster(t, "grants-delete")
	s := k.store("hub")
	if err := s.Update(ctx, set(map[string][]byte{"a": []byte("1"), "b": []byte("2"), "c": []byte("3")})); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, func(r map[string][]byte) error {
		delete(r, "a")
		delete(r, "c")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"b": []byte("2")}
	if got := k.secret(t).Data; !equalRecords(got, want) {
		t.Errorf("Secret data %q, want %q", got, want)
	}
	if got := mustLoad(t, k.store("hub")); !equalRecords(got, want) {
		t.Errorf("Load = %q, want %q", got, want)
	}
	// Deleting the last record leaves an empty Secret, an empty store.
	if err := s.Update(ctx, func(r map[string][]byte) error { clear(r); return nil }); err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, s); len(got) != 0 {
		t.Errorf("Load = %q, want nothing", got)
	}
}

// TestSecretReplicasRace has two replicas, each with 20 goroutines, add one
// to the same counter: only compare-and-swap with retries ends at 40. The
// Secret does not exist at first, so the first writes race to create it.
func TestSecretReplicasRace(t *testing.T) {
	k := newCluster(t, "grants-race")
	replicas := []Store{k.store("hub"), k.store("hub")}
	const perReplica = 20
	var calls atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(replicas)*perReplica)
	for r, s := range replicas {
		for i := range perReplica {
			wg.Go(func() {
				errs <- s.Update(context.Background(), func(records map[string][]byte) error {
					calls.Add(1)
					n, _ := strconv.Atoi(string(records["counter"])) // none yet: 0
					records["counter"] = strconv.AppendInt(nil, int64(n+1), 10)
					records[fmt.Sprintf("r%d-g%02d", r, i)] = []byte("x")
					return nil
				})
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	total := len(replicas) * perReplica
	records := mustLoad(t, replicas[0])
	if got := string(records["counter"]); got != strconv.Itoa(total) {
		t.Errorf("counter = %s, want %d: an increment was lost", got, total)
	}
	if len(records) != total+1 {
		t.Errorf("%d records, want %d", len(records), total+1)
	}
	t.Logf("%d Updates called change %d times (%d retries after another replica wrote)", total, calls.Load(), calls.Load()-int64(total))
}

// TestSecretConflictRetries makes the conflict happen for certain: while
// replica a's change runs, replica b writes; a's write must then fail on
// the resourceVersion (or on AlreadyExists), and a must read again and
// apply its change to b's records.
func TestSecretConflictRetries(t *testing.T) {
	for _, tc := range []struct {
		name   string
		exists bool
	}{
		{"creation race", false},
		{"update race", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			k := newCluster(t, "grants-conflict")
			a, b := k.store("hub"), k.store("hub")
			if tc.exists {
				if err := a.Update(ctx, set(map[string][]byte{"seed": nil})); err != nil {
					t.Fatal(err)
				}
			}
			calls := 0
			err := a.Update(ctx, func(r map[string][]byte) error {
				calls++
				if calls == 1 {
					if err := b.Update(ctx, set(map[string][]byte{"from-b": []byte("b")})); err != nil {
						return err
					}
				}
				r["from-a"] = fmt.Appendf(nil, "a saw from-b=%s", r["from-b"])
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if calls != 2 {
				t.Errorf("change called %d times, want 2 (once more after b's write)", calls)
			}
			got := mustLoad(t, b)
			if string(got["from-b"]) != "b" || string(got["from-a"]) != "a saw from-b=b" {
				t.Errorf("records %q: want b's write kept and a's change applied on it", got)
			}
		})
	}
}

func TestSecretForbidden(t *testing.T) {
	ctx := context.Background()
	k := newCluster(t, "grants-rbac")
	for _, tc := range []struct {
		name, sa string
		exists   bool
		update   bool // Update, else Load
		verb     string
	}{
		{"load without get", "nobody", false, false, "get"},
		{"update without get", "nobody", false, true, "get"},
		{"first write without create", "reader", false, true, "create"},
		{"write without update", "reader", true, true, "update"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.exists {
				if err := k.store("hub").Update(ctx, set(map[string][]byte{"a": []byte("1")})); err != nil {
					t.Fatal(err)
				}
			}
			s := k.store(tc.sa)
			var err error
			if tc.update {
				err = s.Update(ctx, set(map[string][]byte{"b": []byte("2")}))
			} else {
				_, err = s.Load(ctx)
			}
			if !apierrors.IsForbidden(err) {
				t.Fatalf("err = %v, want Forbidden (wrapped)", err)
			}
			for _, want := range []string{"Secret " + k.ns + "/" + secretName, fmt.Sprintf("grant verb %q on secrets", tc.verb)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

func TestSecretTooLarge(t *testing.T) {
	ctx := context.Background()
	k := newCluster(t, "grants-large")
	s := k.store("hub")
	if err := s.Update(ctx, set(map[string][]byte{"small": []byte("1")})); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{0xa5}, 400<<10)
	err := s.Update(ctx, set(map[string][]byte{"big-1": big, "big-2": big, "big-3": big}))
	if err == nil {
		t.Fatal("a Secret of 1.2 MiB was written")
	}
	t.Logf("error: %v", err)
	for _, want := range []string{"4 records", "1 MiB", "Secret " + k.ns + "/" + secretName} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if got := mustLoad(t, s); len(got) != 1 {
		t.Errorf("%d records after the refused write, want the 1 before it", len(got))
	}
}
