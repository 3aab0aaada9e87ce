package kubeauth_test

// Against a real kube-apiserver + etcd (internal/kubetest): real TokenRequest
// tokens, real TokenReviews, real RBAC.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/purko-io/mcp-hub/internal/kubeauth"
	"github.com/purko-io/mcp-hub/internal/kubetest"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

const crdName = "agents.purko.io"

// env is one test's namespace on the shared cluster, with the Agent CRD.
type env struct {
	c   *kubetest.Cluster
	cs  kubernetes.Interface
	dyn dynamic.Interface
	ns  string
}

var (
	crdOnce sync.Once
	nsSeq   atomic.Int64
)

// newEnv makes a namespace named after base, unique on the shared cluster (go
// test -count=N reruns the tests on it).
func newEnv(t *testing.T, base string) *env {
	t.Helper()
	ns := fmt.Sprintf("%s-%d", base, nsSeq.Add(1))
	c := kubetest.Shared(t)
	admin := c.AdminConfig()
	crdOnce.Do(func() {
		kubetest.ApplyYAML(t, admin, filepath.Join("testdata", crdName+".yaml"))
		c.WaitForCRD(t, crdName)
	})
	e := &env{c: c, cs: kubernetes.NewForConfigOrDie(admin), dyn: dynamic.NewForConfigOrDie(admin), ns: ns}
	e.namespace(t, ns)
	return e
}

func (e *env) namespace(t *testing.T, ns string) {
	t.Helper()
	_, err := e.cs.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
}

// serviceAccount creates ns/name (no controller-manager does it).
func (e *env) serviceAccount(t *testing.T, ns, name string) {
	t.Helper()
	_, err := e.cs.CoreV1().ServiceAccounts(ns).Create(context.Background(),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create ServiceAccount %s/%s: %v", ns, name, err)
	}
}

// pod creates a Pod object running as ServiceAccount sa, labelled
// purko.io/agent=agent unless agent is "". Nothing schedules it; the object is
// all a bound token needs.
func (e *env) pod(t *testing.T, ns, name, sa, agent string) *corev1.Pod {
	t.Helper()
	e.serviceAccount(t, ns, sa)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			ServiceAccountName: sa,
			Containers:         []corev1.Container{{Name: "executor", Image: "ghcr.io/purko-io/executor:test"}},
		},
	}
	if agent != "" {
		p.Labels = map[string]string{kubeauth.AgentLabel: agent}
	}
	p, err := e.cs.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s/%s: %v", ns, name, err)
	}
	return p
}

// agent creates an Agent with spec (nil: no spec).
func (e *env) agent(t *testing.T, ns, name string, spec map[string]any) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "purko.io/v1alpha1",
		"kind":       "Agent",
		"metadata":   map[string]any{"name": name, "namespace": ns},
	}}
	if spec != nil {
		obj.Object["spec"] = spec
	}
	// The first custom resources after a CRD may need a retry.
	kubetest.Eventually(t, 0, func() error {
		_, err := e.dyn.Resource(kubeauth.AgentResource).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// podToken mints a token of the pod's ServiceAccount bound to the pod, like
// the projected token kubelet mounts.
func (e *env) podToken(t *testing.T, p *corev1.Pod, audiences ...string) string {
	t.Helper()
	return e.token(t, p.Namespace, p.Spec.ServiceAccountName, &authnv1.BoundObjectReference{
		Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID,
	}, audiences...)
}

// token mints a token of ns/sa, bound to ref (nil: to nothing).
func (e *env) token(t *testing.T, ns, sa string, ref *authnv1.BoundObjectReference, audiences ...string) string {
	t.Helper()
	tr, err := e.cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), sa, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{Audiences: audiences, BoundObjectRef: ref},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s/%s: %v", ns, sa, err)
	}
	if tr.Status.Token == "" {
		t.Fatalf("TokenRequest for %s/%s: no token", ns, sa)
	}
	return tr.Status.Token
}

// counter counts the requests a Reviewer sends to the API server.
type counter struct {
	n    atomic.Int64
	mu   sync.Mutex
	reqs []string
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// counted returns cfg sending its requests through the counter.
func (c *counter) counted(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			c.n.Add(1)
			c.mu.Lock()
			c.reqs = append(c.reqs, r.Method+" "+r.URL.Path)
			c.mu.Unlock()
			return rt.RoundTrip(r)
		})
	}
	return cfg
}

// take returns the requests since the last take.
func (c *counter) take() (int64, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	reqs := c.reqs
	c.reqs = nil
	return c.n.Swap(0), reqs
}

func newReviewer(t *testing.T, cfg *rest.Config, opts kubeauth.Options) (*kubeauth.Reviewer, *counter) {
	t.Helper()
	var c counter
	r, err := kubeauth.New(c.counted(cfg), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r, &c
}

func review(t *testing.T, r *kubeauth.Reviewer, token string) (kubeauth.Identity, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := r.Review(ctx, token)
	if err != nil && len(token) >= 8 && strings.Contains(err.Error(), token) {
		t.Errorf("error contains the token: %v", err)
	}
	return id, err
}

func TestReview(t *testing.T) {
	e := newEnv(t, "kubeauth-review")
	ns := e.ns
	const sa = "executor"

	e.agent(t, ns, "reviewer", map[string]any{
		"autonomyLevel": "supervised",
		// Both item shapes, and a duplicate.
		"tools": []any{"read_file", map[string]any{"name": "search", "server": "docs"}, "read_file"},
	})
	e.agent(t, ns, "free", map[string]any{"autonomyLevel": "ha"})
	e.agent(t, ns, "no-level", map[string]any{"tools": []any{"read_file"}})
	e.agent(t, ns, "bad-tools", map[string]any{"autonomyLevel": "full", "tools": []any{map[string]any{"server": "docs"}}})

	reviewerPod := e.pod(t, ns, "run-123-step-2", sa, "reviewer")
	freePod := e.pod(t, ns, "run-123-step-3", sa, "free")
	unlabelled := e.pod(t, ns, "unlabelled", sa, "")
	ghost := e.pod(t, ns, "ghost", sa, "missing")
	noLevel := e.pod(t, ns, "no-level", sa, "no-level")
	badTools := e.pod(t, ns, "bad-tools", sa, "bad-tools")

	cases := []struct {
		name  string
		token string
		opts  kubeauth.Options
		want  kubeauth.Identity
		// On refusal: the class (nil: neither class) and words of the message.
		class error
		msg   string
		// API requests of the first Review.
		calls int64
	}{
		{
			name:  "agent with tools of both shapes",
			token: e.podToken(t, reviewerPod),
			want: kubeauth.Identity{
				Caller:    "agent " + ns + "/reviewer (pod " + ns + "/run-123-step-2)",
				Namespace: ns, Agent: "reviewer", Pod: "run-123-step-2", PodUID: string(reviewerPod.UID), ServiceAccount: "executor",
				Level: "supervised", Tools: []string{"read_file", "search"},
			},
			calls: 3,
		},
		{
			name:  "agent without tools: all tools",
			token: e.podToken(t, freePod),
			want: kubeauth.Identity{
				Caller:    "agent " + ns + "/free (pod " + ns + "/run-123-step-3)",
				Namespace: ns, Agent: "free", Pod: "run-123-step-3", PodUID: string(freePod.UID), ServiceAccount: "executor", Level: "ha",
			},
			calls: 3,
		},
		{
			name:  "audience the reviewer asks for",
			token: e.podToken(t, freePod, "mcp-hub"),
			opts:  kubeauth.Options{Audiences: []string{"mcp-hub"}},
			want: kubeauth.Identity{
				Caller:    "agent " + ns + "/free (pod " + ns + "/run-123-step-3)",
				Namespace: ns, Agent: "free", Pod: "run-123-step-3", PodUID: string(freePod.UID), ServiceAccount: "executor", Level: "ha",
			},
			calls: 3,
		},
		{
			name:  "token for another audience",
			token: e.podToken(t, freePod, "someone-else"),
			opts:  kubeauth.Options{Audiences: []string{"mcp-hub"}},
			class: kubeauth.ErrUnauthenticated, msg: "token not authenticated", calls: 1,
		},
		{
			name:  "token not bound to a pod",
			token: e.token(t, ns, sa, nil),
			class: kubeauth.ErrNotAgent, msg: "system:serviceaccount:" + ns + ":executor: not a Purko agent pod: not bound to a pod", calls: 1,
		},
		{
			name:  "not a ServiceAccount token",
			token: e.c.AdminToken,
			class: kubeauth.ErrNotAgent, msg: `token of "admin": not a Purko agent pod: not a ServiceAccount token`, calls: 1,
		},
		{
			name:  "pod without the agent label",
			token: e.podToken(t, unlabelled),
			class: kubeauth.ErrNotAgent, msg: "pod " + ns + "/unlabelled: not a Purko agent pod: no purko.io/agent label", calls: 2,
		},
		{
			name:  "Agent missing",
			token: e.podToken(t, ghost),
			class: kubeauth.ErrNotAgent, msg: `get Agent ` + ns + `/missing (label purko.io/agent of pod ` + ns + `/ghost): not a Purko agent pod: agents.purko.io "missing" not found`, calls: 3,
		},
		{
			name:  "Agent without autonomyLevel",
			token: e.podToken(t, noLevel),
			class: kubeauth.ErrNotAgent, msg: "Agent " + ns + "/no-level (label purko.io/agent of pod " + ns + "/no-level): not a Purko agent pod: no spec.autonomyLevel", calls: 3,
		},
		{
			name:  "tool entry without a name is not all tools",
			token: e.podToken(t, badTools),
			class: kubeauth.ErrNotAgent, msg: "spec.tools[0] is neither a tool name nor an object with a name", calls: 3,
		},
		{
			name:  "garbage token",
			token: "this-is-no-token-but-long-enough-to-be-redacted",
			class: kubeauth.ErrUnauthenticated, msg: "kubeauth: review token: token not authenticated: ", calls: 1,
		},
		{
			name:  "garbage JWT",
			token: "eyJhbGciOiJSUzI1NiJ9.eyJleHAiOjF9.c2lnbmF0dXJl",
			class: kubeauth.ErrUnauthenticated, msg: "token not authenticated", calls: 1,
		},
		{
			name:  "empty token",
			token: "",
			class: kubeauth.ErrUnauthenticated, msg: "empty token", calls: 0,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, calls := newReviewer(t, e.c.AdminConfig(), tc.opts)
			for attempt := 1; attempt <= 2; attempt++ {
				id, err := review(t, r, tc.token)
				n, reqs := calls.take()
				want := tc.calls
				if attempt == 2 {
					want = 0 // cached, success or failure
				}
				if n != want {
					t.Errorf("Review #%d sent %d API requests, want %d: %q", attempt, n, want, reqs)
				}
				if tc.msg == "" {
					if err != nil {
						t.Fatalf("Review #%d: %v", attempt, err)
					}
					if !reflect.DeepEqual(id, tc.want) {
						t.Errorf("Review #%d = %#v\nwant %#v", attempt, id, tc.want)
					}
					continue
				}
				if err == nil {
					t.Fatalf("Review #%d = %+v, want an error with %q", attempt, id, tc.msg)
				}
				if !reflect.DeepEqual(id, kubeauth.Identity{}) {
					t.Errorf("Review #%d refused with a non-zero identity %+v", attempt, id)
				}
				if !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("Review #%d error %q, want it to contain %q", attempt, err, tc.msg)
				}
				for _, class := range []error{kubeauth.ErrUnauthenticated, kubeauth.ErrNotAgent} {
					if got, want := errors.Is(err, class), class == tc.class; got != want {
						t.Errorf("Review #%d errors.Is(err, %q) = %v, want %v (%v)", attempt, class, got, want, err)
					}
				}
				t.Logf("refused: %v", err)
			}
		})
	}
}

// TestReviewPodUID: the API server's TokenReview of a projected pod-bound
// token names the pod's UID (the user extra ExtraPodUID), and the identity
// carries it: every token kubelet mints for the pod (it rotates them)
// gives the same one, which is the caller's run whatever session or trace
// it sends; a pod re-created under the same name is another pod, and the
// old pod's token no longer passes.
func TestReviewPodUID(t *testing.T) {
	e := newEnv(t, "kubeauth-poduid")
	e.agent(t, e.ns, "coder", map[string]any{"autonomyLevel": "supervised"})
	p := e.pod(t, e.ns, "run-5-step-1", "executor", "coder")
	first, rotated := e.podToken(t, p), e.podToken(t, p)
	if first == rotated {
		t.Fatal("two TokenRequests returned one token")
	}
	ctx := context.Background()
	tr, err := e.cs.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: first}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenReview: %v", err)
	}
	if got := tr.Status.User.Extra[kubeauth.ExtraPodUID]; len(got) != 1 || got[0] != string(p.UID) {
		t.Fatalf("the TokenReview's %s is %q, want the pod's UID %s", kubeauth.ExtraPodUID, got, p.UID)
	}
	r, _ := newReviewer(t, e.c.AdminConfig(), kubeauth.Options{})
	for name, token := range map[string]string{"first": first, "rotated": rotated} {
		id, err := review(t, r, token)
		if err != nil {
			t.Fatalf("Review of the %s token: %v", name, err)
		}
		if id.PodUID != string(p.UID) {
			t.Errorf("Review of the %s token: pod UID %q, want %s", name, id.PodUID, p.UID)
		}
	}

	if err := e.cs.CoreV1().Pods(e.ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	kubetest.Eventually(t, 10*time.Second, func() error {
		_, err := e.cs.CoreV1().Pods(e.ns).Get(ctx, p.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("pod %s still there: %v", p.Name, err)
	})
	again := e.pod(t, e.ns, p.Name, "executor", "coder")
	fresh, _ := newReviewer(t, e.c.AdminConfig(), kubeauth.Options{})
	id, err := review(t, fresh, e.podToken(t, again))
	if err != nil {
		t.Fatalf("Review of the re-created pod's token: %v", err)
	}
	if id.PodUID != string(again.UID) || id.PodUID == string(p.UID) {
		t.Errorf("the re-created pod's UID %q, want %s (not the old %s)", id.PodUID, again.UID, p.UID)
	}
	if id, err := review(t, fresh, first); err == nil {
		t.Errorf("the deleted pod's token passed as %+v", id)
	}
}

// The identity handed out is the caller's to keep: changing it does not change
// what the next Review returns.
func TestReviewReturnsCopies(t *testing.T) {
	e := newEnv(t, "kubeauth-copies")
	e.agent(t, e.ns, "coder", map[string]any{"autonomyLevel": "full", "tools": []any{"a", "b"}})
	token := e.podToken(t, e.pod(t, e.ns, "step", "executor", "coder"))
	r, _ := newReviewer(t, e.c.AdminConfig(), kubeauth.Options{})
	id, err := review(t, r, token)
	if err != nil {
		t.Fatal(err)
	}
	id.Tools[0] = "rm_rf"
	again, err := review(t, r, token)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.Tools, []string{"a", "b"}) {
		t.Errorf("tools %q after the caller changed its copy", again.Tools)
	}
}

// Concurrent first requests of a token share one review.
func TestReviewConcurrent(t *testing.T) {
	e := newEnv(t, "kubeauth-concurrent")
	e.agent(t, e.ns, "coder", map[string]any{"autonomyLevel": "restricted", "tools": []any{"read_file"}})
	token := e.podToken(t, e.pod(t, e.ns, "step", "executor", "coder"))
	garbage := "not-a-token-" + strings.Repeat("x", 40)
	r, calls := newReviewer(t, e.c.AdminConfig(), kubeauth.Options{})

	const n = 32
	var wg sync.WaitGroup
	ids := make([]kubeauth.Identity, n)
	errs := make([]error, n)
	garbageErrs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			ids[i], errs[i] = r.Review(context.Background(), token)
			_, garbageErrs[i] = r.Review(context.Background(), garbage)
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || ids[i].Agent != "coder" || ids[i].Level != "restricted" {
			t.Errorf("Review %d = %+v, %v", i, ids[i], errs[i])
		}
		if !errors.Is(garbageErrs[i], kubeauth.ErrUnauthenticated) {
			t.Errorf("Review %d of garbage: %v", i, garbageErrs[i])
		}
	}
	// One TokenReview and two GETs for the token, one TokenReview for the garbage.
	if got, reqs := calls.take(); got != 4 {
		t.Errorf("%d concurrent Reviews of 2 tokens sent %d API requests, want 4: %q", 2*n, got, reqs)
	}
}

// A waiting caller's context ends its wait, not the shared review: the next
// caller gets the result without another round trip.
func TestReviewCallerContext(t *testing.T) {
	e := newEnv(t, "kubeauth-ctx")
	e.agent(t, e.ns, "coder", map[string]any{"autonomyLevel": "shu"})
	token := e.podToken(t, e.pod(t, e.ns, "step", "executor", "coder"))
	r, calls := newReviewer(t, e.c.AdminConfig(), kubeauth.Options{})

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Review(ctx, token); !errors.Is(err, context.Canceled) {
		t.Fatalf("Review with a cancelled context: %v, want context.Canceled", err)
	}
	kubetest.Eventually(t, 10*time.Second, func() error {
		if n := calls.n.Load(); n < 3 {
			return fmt.Errorf("%d requests so far", n)
		}
		return nil
	})
	calls.take()
	id, err := review(t, r, token)
	if err != nil || id.Level != "shu" {
		t.Fatalf("Review after the cancelled one: %+v, %v", id, err)
	}
	if n, reqs := calls.take(); n != 0 {
		t.Errorf("Review after the shared review finished sent %d requests: %q", n, reqs)
	}
}

// Failures are cached for FailureTTL, successes for CacheTTL; afterwards the
// API server decides again.
func TestReviewCacheExpiry(t *testing.T) {
	e := newEnv(t, "kubeauth-expiry")
	e.agent(t, e.ns, "coder", map[string]any{"autonomyLevel": "ri"})
	p := e.pod(t, e.ns, "step", "executor", "")
	token := e.podToken(t, p)
	const failureTTL, cacheTTL = 300 * time.Millisecond, 1500 * time.Millisecond
	r, calls := newReviewer(t, e.c.AdminConfig(), kubeauth.Options{CacheTTL: cacheTTL, FailureTTL: failureTTL})
	ctx := context.Background()

	if _, err := review(t, r, token); !errors.Is(err, kubeauth.ErrNotAgent) {
		t.Fatalf("unlabelled pod: %v, want ErrNotAgent", err)
	}
	labelled := time.Now()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"coder"}}}`, kubeauth.AgentLabel)
	if _, err := e.cs.CoreV1().Pods(e.ns).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := review(t, r, token)
	if time.Since(labelled) < failureTTL && !errors.Is(err, kubeauth.ErrNotAgent) {
		t.Fatalf("within FailureTTL of the refusal: %v, want the cached refusal", err)
	}
	time.Sleep(failureTTL)
	calls.take()
	cachedAt := time.Now() // the entry expires after cachedAt+cacheTTL...
	id, err := review(t, r, token)
	reviewed := time.Now() // ...and before reviewed+cacheTTL
	if err != nil || id.Agent != "coder" {
		t.Fatalf("after FailureTTL, with the label: %+v, %v", id, err)
	}
	if n, _ := calls.take(); n != 3 {
		t.Errorf("review after FailureTTL sent %d requests, want 3", n)
	}

	// A deleted pod's token keeps working from the cache until CacheTTL,
	// then it is refused: by the TokenReview, or (the API server caches
	// successful token authentications for a few seconds itself) because the
	// pod is gone.
	if err := e.cs.CoreV1().Pods(e.ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	if _, err := review(t, r, token); err != nil && time.Since(cachedAt) < cacheTTL {
		t.Errorf("within CacheTTL after deleting the pod: %v, want the cached identity", err)
	}
	time.Sleep(time.Until(reviewed.Add(cacheTTL + 50*time.Millisecond)))
	if _, err := review(t, r, token); !errors.Is(err, kubeauth.ErrUnauthenticated) && !errors.Is(err, kubeauth.ErrNotAgent) {
		t.Errorf("after CacheTTL, pod deleted: %v, want ErrUnauthenticated or ErrNotAgent", err)
	}
}

var (
	helmOnce sync.Once
	helmPath string
	helmErr  error
)

// helm returns $HELM or the binary hack/helm.sh builds and caches.
func helm(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() {
		if helmPath = os.Getenv("HELM"); helmPath != "" {
			return
		}
		var stdout, stderr bytes.Buffer
		cmd := exec.Command("bash", filepath.Join("..", "..", "hack", "helm.sh"))
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			helmErr = fmt.Errorf("hack/helm.sh: %v\n%s", err, stderr.String())
			return
		}
		helmPath = strings.TrimSpace(stdout.String())
	})
	if helmErr != nil {
		t.Fatal(helmErr)
	}
	return helmPath
}

// applyChartRBAC renders the chart into namespace ns with the extra helm
// arguments, applies its ServiceAccount and RBAC objects (nothing else: no
// controller would run the Deployment) and returns the hub's ServiceAccount.
func applyChartRBAC(t *testing.T, e *env, ns string, args ...string) string {
	t.Helper()
	args = append([]string{"template", "hub", filepath.Join("..", "..", "charts", "mcp-hub"), "--namespace", ns}, args...)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helm(t), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	objs, err := kubetest.DecodeYAML(stdout.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	var sa string
	var kinds []string
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount":
			sa = o.GetName()
		case "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding":
		default:
			continue
		}
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
		kinds = append(kinds, o.GetKind()+" "+o.GetName())
	}
	if sa == "" {
		t.Fatalf("the chart rendered no ServiceAccount")
	}
	kubetest.ApplyYAML(t, e.c.AdminConfig(), bytes.Join(docs, []byte("---\n")))
	t.Logf("applied %s", strings.Join(kinds, ", "))
	return sa
}

// The hub running with the chart's RBAC (its ServiceAccount, nothing more)
// can review tokens with auth.serviceAccounts.enabled, and cannot without.
func TestChartRBAC(t *testing.T) {
	cases := []struct {
		name      string
		args      []string
		separate  bool // callers' pods in a namespace of their own
		forbidden string
	}{
		{name: "auth.serviceAccounts.enabled", args: []string{"--set", "auth.serviceAccounts.enabled=true"}},
		{
			name:     "auth.serviceAccounts.enabled, all namespaces",
			args:     []string{"--set", "auth.serviceAccounts.enabled=true", "--set", "watch.allNamespaces=true"},
			separate: true,
		},
		{
			name:      "auth.serviceAccounts.enabled, caller outside the watched namespaces",
			args:      []string{"--set", "auth.serviceAccounts.enabled=true"},
			separate:  true,
			forbidden: "pods", // the TokenReview passes, the pod stays out of reach
		},
		{name: "default values", forbidden: "tokenreviews"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fmt.Sprintf("kubeauth-chart-%d", i))
			hubNS := e.ns
			callerNS := hubNS
			if tc.separate {
				callerNS = hubNS + "-agents"
				e.namespace(t, callerNS)
			}
			sa := applyChartRBAC(t, e, hubNS, tc.args...)

			e.agent(t, callerNS, "reviewer", map[string]any{"autonomyLevel": "supervised", "tools": []any{"search"}})
			pod := e.pod(t, callerNS, "run-7-step-1", "executor", "reviewer")
			token := e.podToken(t, pod)
			hub := e.c.ServiceAccountConfig(hubNS, sa)

			if tc.forbidden != "" {
				r, _ := newReviewer(t, hub, kubeauth.Options{})
				_, err := review(t, r, token)
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.forbidden) {
					t.Fatalf("Review as %s: %v, want Forbidden on %s", sa, err, tc.forbidden)
				}
				if errors.Is(err, kubeauth.ErrUnauthenticated) || errors.Is(err, kubeauth.ErrNotAgent) {
					t.Errorf("the hub's own missing permission blames the caller: %v", err)
				}
				t.Logf("refused: %v", err)
				return
			}
			// RBAC is effective at once in practice; give its cache a moment
			// anyway, with a fresh Reviewer (and cache) per attempt.
			var id kubeauth.Identity
			kubetest.Eventually(t, 10*time.Second, func() error {
				r, _ := newReviewer(t, hub, kubeauth.Options{})
				var err error
				id, err = review(t, r, token)
				return err
			})
			want := kubeauth.Identity{
				Caller:    fmt.Sprintf("agent %s/reviewer (pod %s/run-7-step-1)", callerNS, callerNS),
				Namespace: callerNS, Agent: "reviewer", Pod: "run-7-step-1", PodUID: string(pod.UID), ServiceAccount: "executor",
				Level: "supervised", Tools: []string{"search"},
			}
			if !reflect.DeepEqual(id, want) {
				t.Errorf("Review as %s = %+v, want %+v", sa, id, want)
			}
		})
	}
}
