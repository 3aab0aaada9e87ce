// Package kubeauth authenticates callers of the hub by the projected
// ServiceAccount token of their pod (Purko executor pods: one Job pod per
// workflow step) and tells who they are and what they may do.
//
// A token is accepted only when all of this holds, else Review fails closed:
//
//   - a TokenReview authenticates it (for Options.Audiences);
//   - it is bound to a pod (TokenRequest with a Pod BoundObjectRef, as kubelet
//     projects them): the review names the pod, and the pod's UID and
//     ServiceAccount match the token's;
//   - the pod exists and carries the label purko.io/agent;
//   - that Agent (purko.io/v1alpha1, same namespace) exists and has
//     spec.autonomyLevel.
//
// Reviews, successful or not, are cached by the SHA-256 of the token (never the
// token itself), so only the first request of a token costs a TokenReview and
// two GETs; failures are cached for a shorter time. Errors never contain the
// token.
package kubeauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/purko-io/mcp-hub/internal/kubeclient"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// Identity is an authenticated caller: a pod running a Purko Agent.
type Identity struct {
	// Caller names the caller for logs and audit, e.g.
	// "agent purko/reviewer (pod purko/run-123-step-2)".
	Caller string
	// Namespace of the pod and the Agent.
	Namespace string
	// Agent is the name of the Agent (the pod's purko.io/agent label).
	Agent string
	// Pod is the name of the pod the token is bound to.
	Pod string
	// PodUID is that pod's UID: the TokenReview's pod-uid extra, or where
	// an API server sends only the pod's name, the UID of the pod read by
	// it. It tells one run of a workflow step from the next even when a
	// pod's name comes back, so the hub counts a caller's calls per pod
	// (guardrails maxIterations) whatever session or trace it sends.
	PodUID string
	// ServiceAccount is the name of the pod's ServiceAccount (in
	// Namespace), which auth.serviceAccounts.admins may name.
	ServiceAccount string
	// Level is the Agent's spec.autonomyLevel, raw (e.g. "supervised" or "ha");
	// never empty.
	Level string
	// Tools are the names in the Agent's spec.tools (string items and the
	// name of object items), in order, without duplicates. Empty means the
	// Agent lists no tools: all tools.
	Tools []string
	// Guardrails are the Agent's spec.guardrails the hub enforces
	// (contentFilters, contentFilterMode, maxIterations), validated; nil
	// when it sets none of them.
	Guardrails *toolspec.Guardrails
}

// Options tune New. The zero value is fine.
type Options struct {
	// Audiences the token must be valid for (TokenReview spec.audiences).
	// Empty means the API server's own audiences.
	Audiences []string
	// CacheTTL is how long a successful review is reused (default 1m; never
	// beyond the token's expiry). A deleted pod's token keeps working for
	// up to this long.
	CacheTTL time.Duration
	// CacheSize bounds the cached successful reviews, and separately the
	// failed ones (default 4096 each).
	CacheSize int
	// FailureTTL is how long a failed review is reused (default 10s, at most
	// CacheTTL), whatever failed: a refused token, or the API server
	// unreachable or refusing the hub. A pod labelled or an Agent created
	// after a refusal is seen after this long.
	FailureTTL time.Duration
}

// Defaults of Options.
const (
	DefaultCacheTTL   = time.Minute
	DefaultCacheSize  = 4096
	DefaultFailureTTL = 10 * time.Second
)

// Kubernetes names the review relies on.
const (
	// AgentLabel on a pod names its Agent.
	AgentLabel = "purko.io/agent"
	// ExtraPodName and ExtraPodUID are the TokenReview user extras of a
	// pod-bound ServiceAccount token.
	ExtraPodName = "authentication.kubernetes.io/pod-name"
	ExtraPodUID  = "authentication.kubernetes.io/pod-uid"

	serviceAccountPrefix = "system:serviceaccount:"
)

// AgentResource is the Agent custom resource.
var AgentResource = schema.GroupVersionResource{Group: "purko.io", Version: "v1alpha1", Resource: "agents"}

// Classes of refusal, for errors.Is. Errors that are neither (the API server
// unreachable, the hub itself not allowed to review tokens or read pods and
// Agents) are the hub's problem, not the caller's.
var (
	// ErrUnauthenticated: the token is invalid, expired, revoked, for another
	// audience, or empty.
	ErrUnauthenticated = errors.New("token not authenticated")
	// ErrNotAgent: the token is valid but does not identify a pod running a
	// Purko Agent (not pod-bound, pod gone, no agent label, no such Agent, or
	// an Agent without a usable spec).
	ErrNotAgent = errors.New("not a Purko agent pod")
)

// reviewTimeout bounds one review (a TokenReview and two GETs). It runs on
// behalf of every concurrent caller of the token, so no single caller's
// context cancels it.
const reviewTimeout = 15 * time.Second

// Reviewer authenticates tokens. It is safe for concurrent use.
type Reviewer struct {
	dyn       dynamic.Interface
	audiences []string
	ttl       time.Duration

	ok     *expirable.LRU[[sha256.Size]byte, okEntry]
	failed *expirable.LRU[[sha256.Size]byte, error]

	mu       sync.Mutex
	inflight map[[sha256.Size]byte]*call

	now func() time.Time
}

type okEntry struct {
	id    Identity
	until time.Time // the token's expiry, when before the cache TTL
}

type result struct {
	id  Identity
	err error
}

// call is a review in progress; concurrent Reviews of one token share it.
type call struct {
	done chan struct{}
	result
}

// New returns a Reviewer that talks to the API server of cfg. It needs to
// create tokenreviews (cluster-wide), and to get pods and agents.purko.io in
// the namespaces of the callers' pods.
func New(cfg *rest.Config, opts Options) (*Reviewer, error) {
	if cfg == nil {
		return nil, errors.New("kubeauth: no Kubernetes config")
	}
	if opts.CacheTTL <= 0 {
		opts.CacheTTL = DefaultCacheTTL
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = DefaultCacheSize
	}
	if opts.FailureTTL <= 0 {
		opts.FailureTTL = DefaultFailureTTL
	}
	opts.FailureTTL = min(opts.FailureTTL, opts.CacheTTL)

	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = "mcp-hub"
	}
	// Each new token costs three requests: client-go's default 5 QPS would
	// queue a burst of new workflow steps behind each other.
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS, cfg.Burst = 50, 100
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeauth: Kubernetes client: %w", err)
	}
	return &Reviewer{
		dyn:       dyn,
		audiences: slices.Clone(opts.Audiences),
		ttl:       opts.CacheTTL,
		ok:        expirable.NewLRU[[sha256.Size]byte, okEntry](opts.CacheSize, nil, opts.CacheTTL),
		failed:    expirable.NewLRU[[sha256.Size]byte, error](opts.CacheSize, nil, opts.FailureTTL),
		inflight:  map[[sha256.Size]byte]*call{},
		now:       time.Now,
	}, nil
}

// Review authenticates token and returns the caller's identity. Only the first
// Review of a token (within the cache TTL) reaches the API server; concurrent
// first Reviews share one review. ctx bounds the wait, not the shared review.
func (r *Reviewer) Review(ctx context.Context, token string) (Identity, error) {
	if token == "" {
		return Identity{}, fmt.Errorf("kubeauth: review token: %w: empty token", ErrUnauthenticated)
	}
	key := sha256.Sum256([]byte(token))
	if res, ok := r.cached(key); ok {
		return res.id, res.err
	}

	r.mu.Lock()
	c := r.inflight[key]
	if c == nil {
		// A review may have finished between the lookup and the lock.
		if res, ok := r.cached(key); ok {
			r.mu.Unlock()
			return res.id, res.err
		}
		c = &call{done: make(chan struct{})}
		r.inflight[key] = c
		go r.run(context.WithoutCancel(ctx), key, token, c)
	}
	r.mu.Unlock()

	select {
	case <-c.done:
		if c.err != nil {
			return Identity{}, c.err
		}
		return cloneIdentity(c.id), nil
	case <-ctx.Done():
		return Identity{}, fmt.Errorf("kubeauth: review token: %w", ctx.Err())
	}
}

// cached returns the cached review of the token with this key, if any.
func (r *Reviewer) cached(key [sha256.Size]byte) (result, bool) {
	if e, ok := r.ok.Get(key); ok {
		if e.until.IsZero() || r.now().Before(e.until) {
			return result{id: cloneIdentity(e.id)}, true
		}
		r.ok.Remove(key) // the token expired before the cache entry
	}
	if err, ok := r.failed.Get(key); ok {
		return result{err: err}, true
	}
	return result{}, false
}

func (r *Reviewer) run(ctx context.Context, key [sha256.Size]byte, token string, c *call) {
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	id, err := r.review(ctx, token)
	if err != nil {
		err = redact(err, token)
		r.failed.Add(key, err)
	} else {
		e := okEntry{id: id}
		if exp, ok := jwtExpiry(token); ok && exp.Before(r.now().Add(r.ttl)) {
			e.until = exp
		}
		r.ok.Add(key, e)
	}
	r.mu.Lock()
	c.id, c.err = id, err
	delete(r.inflight, key)
	r.mu.Unlock()
	close(c.done)
}

// review does the work: TokenReview, pod, Agent.
func (r *Reviewer) review(ctx context.Context, token string) (Identity, error) {
	tr, err := kubeclient.TokenReviews.In(r.dyn, "").Create(ctx, &kubeclient.TokenReview{
		Spec: kubeclient.TokenReviewSpec{Token: token, Audiences: r.audiences},
	})
	if err != nil {
		return Identity{}, fmt.Errorf("kubeauth: create TokenReview: %w", err)
	}
	st := tr.Status
	if !st.Authenticated {
		msg := "refused by the API server"
		if st.Error != "" {
			msg = st.Error
		}
		return Identity{}, fmt.Errorf("kubeauth: review token: %w: %s", ErrUnauthenticated, msg)
	}
	if len(r.audiences) > 0 && !slices.ContainsFunc(st.Audiences, func(a string) bool { return slices.Contains(r.audiences, a) }) {
		return Identity{}, fmt.Errorf("kubeauth: review token: %w: valid for audiences %q, want one of %q", ErrUnauthenticated, st.Audiences, r.audiences)
	}
	user := st.User.Username

	ns, sa, ok := serviceAccount(user)
	if !ok {
		return Identity{}, fmt.Errorf("kubeauth: token of %q: %w: not a ServiceAccount token", user, ErrNotAgent)
	}
	podName, ok := single(st.User.Extra[ExtraPodName])
	if !ok {
		return Identity{}, fmt.Errorf("kubeauth: token of %s: %w: not bound to a pod (no %s in the TokenReview; use a projected token of the pod)",
			user, ErrNotAgent, ExtraPodName)
	}
	podRef := ns + "/" + podName

	pod, err := kubeclient.Pods.In(r.dyn, ns).Get(ctx, podName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return Identity{}, fmt.Errorf("kubeauth: get pod %s (token of %s): %w: %w", podRef, user, ErrNotAgent, err)
		}
		return Identity{}, fmt.Errorf("kubeauth: get pod %s (token of %s): %w", podRef, user, err)
	}
	podUID := string(pod.UID)
	if uid, ok := single(st.User.Extra[ExtraPodUID]); ok && uid != podUID {
		return Identity{}, fmt.Errorf("kubeauth: pod %s: %w: the token is bound to pod UID %s, the pod has UID %s (re-created)",
			podRef, ErrNotAgent, uid, pod.UID)
	}
	if podUID == "" {
		// Every pod the API server returns has one; without it the
		// caller's calls could not be held to one run.
		return Identity{}, fmt.Errorf("kubeauth: pod %s (token of %s): the API server returned it without a UID", podRef, user)
	}
	if podSA := pod.Spec.ServiceAccountName; podSA != sa {
		return Identity{}, fmt.Errorf("kubeauth: pod %s: %w: runs as ServiceAccount %q, the token is of %q", podRef, ErrNotAgent, podSA, sa)
	}
	agent := pod.Labels[AgentLabel]
	if agent == "" {
		return Identity{}, fmt.Errorf("kubeauth: pod %s: %w: no %s label", podRef, ErrNotAgent, AgentLabel)
	}
	agentRef := ns + "/" + agent

	obj, err := r.dyn.Resource(AgentResource).Namespace(ns).Get(ctx, agent, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return Identity{}, fmt.Errorf("kubeauth: get Agent %s (label %s of pod %s): %w: %w", agentRef, AgentLabel, podRef, ErrNotAgent, err)
		}
		return Identity{}, fmt.Errorf("kubeauth: get Agent %s (label %s of pod %s): %w", agentRef, AgentLabel, podRef, err)
	}
	level, tools, err := agentSpec(obj)
	var guardrails *toolspec.Guardrails
	if err == nil {
		guardrails, err = agentGuardrails(obj)
	}
	if err != nil {
		return Identity{}, fmt.Errorf("kubeauth: Agent %s (label %s of pod %s): %w: %w", agentRef, AgentLabel, podRef, ErrNotAgent, err)
	}
	return Identity{
		Caller:    fmt.Sprintf("agent %s (pod %s)", agentRef, podRef),
		Namespace: ns,
		Agent:     agent,
		Pod:       podName,
		PodUID:    podUID,
		Level:     level,
		Tools:     tools,

		Guardrails:     guardrails,
		ServiceAccount: sa,
	}, nil
}

// agentSpec reads spec.autonomyLevel (required) and the tool names of
// spec.tools. A malformed tools list is an error, never "all tools".
func agentSpec(obj *unstructured.Unstructured) (level string, tools []string, err error) {
	spec, _ := obj.Object["spec"].(map[string]any)
	switch v := spec["autonomyLevel"].(type) {
	case nil:
		return "", nil, errors.New("no spec.autonomyLevel")
	case string:
		if strings.TrimSpace(v) == "" {
			return "", nil, errors.New("empty spec.autonomyLevel")
		}
		level = v // raw: the hub parses it
	default:
		return "", nil, fmt.Errorf("spec.autonomyLevel is a %T, not a string", v)
	}
	var items []any
	switch v := spec["tools"].(type) {
	case nil:
	case []any:
		items = v
	default:
		return "", nil, fmt.Errorf("spec.tools is a %T, not a list", v)
	}
	for i, item := range items {
		var name string
		switch v := item.(type) {
		case string:
			name = v
		case map[string]any:
			name, _ = v["name"].(string)
		}
		name = strings.TrimSpace(name)
		if name == "" {
			return "", nil, fmt.Errorf("spec.tools[%d] is neither a tool name nor an object with a name", i)
		}
		if !slices.Contains(tools, name) {
			tools = append(tools, name)
		}
	}
	return level, tools, nil
}

// agentGuardrails reads the keys of spec.guardrails the hub enforces.
// Purko's guardrails are free-form, so other keys (costLimitUSD,
// maxExecutionTime) are left to the executor; a key the hub enforces that
// it cannot read is an error, never "no guardrail": the caller is refused
// rather than served unguarded.
func agentGuardrails(obj *unstructured.Unstructured) (*toolspec.Guardrails, error) {
	spec, _ := obj.Object["spec"].(map[string]any)
	var raw map[string]any
	switch v := spec["guardrails"].(type) {
	case nil:
		return nil, nil
	case map[string]any:
		raw = v
	default:
		return nil, fmt.Errorf("spec.guardrails is a %T, not an object", v)
	}
	g := &toolspec.Guardrails{}
	switch v := raw["contentFilters"].(type) {
	case nil:
	case []any:
		for i, item := range v {
			name, ok := item.(string)
			if !ok {
				return nil, fmt.Errorf("spec.guardrails.contentFilters[%d] is a %T, not a filter name", i, item)
			}
			g.ContentFilters = append(g.ContentFilters, name)
		}
	case string: // CONTENT_FILTERS as the executor reads it: comma-separated
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				g.ContentFilters = append(g.ContentFilters, name)
			}
		}
	default:
		return nil, fmt.Errorf("spec.guardrails.contentFilters is a %T, not a list", v)
	}
	switch v := raw["contentFilterMode"].(type) {
	case nil:
	case string:
		g.ContentFilterMode = v
	default:
		return nil, fmt.Errorf("spec.guardrails.contentFilterMode is a %T, not a string", v)
	}
	switch v := raw["maxIterations"].(type) {
	case nil:
	case int64:
		g.MaxIterations = int(v)
	case float64:
		if v != float64(int(v)) {
			return nil, fmt.Errorf("spec.guardrails.maxIterations: %v is not a whole number", v)
		}
		g.MaxIterations = int(v)
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("spec.guardrails.maxIterations: %q is not a number", v)
		}
		g.MaxIterations = n
	default:
		return nil, fmt.Errorf("spec.guardrails.maxIterations is a %T, not a number", v)
	}
	// Purko's flag for irreversible steps, held per call here. A string
	// "true" is what a kubectl patch without quotes around the YAML value
	// leaves, and is read as meant.
	switch v := raw["humanApprovalRequired"].(type) {
	case nil:
	case bool:
		g.HumanApprovalRequired = v
	case string:
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("spec.guardrails.humanApprovalRequired: %q is not true or false", v)
		}
		g.HumanApprovalRequired = b
	default:
		return nil, fmt.Errorf("spec.guardrails.humanApprovalRequired is a %T, not true or false", v)
	}
	switch v := raw["approvalFor"].(type) {
	case nil:
	case []any:
		for i, item := range v {
			p, ok := item.(string)
			if !ok {
				return nil, fmt.Errorf("spec.guardrails.approvalFor[%d] is a %T, not a tool pattern", i, item)
			}
			g.ApprovalFor = append(g.ApprovalFor, p)
		}
	default:
		return nil, fmt.Errorf("spec.guardrails.approvalFor is a %T, not a list", v)
	}
	// approvalMode is not read from an Agent: its callers are
	// ServiceAccounts, never asked in band (an agent would answer itself).
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("spec.guardrails.%w", err)
	}
	if g.Empty() {
		return nil, nil
	}
	return g, nil
}

// serviceAccount splits system:serviceaccount:<ns>:<name>.
func serviceAccount(user string) (namespace, name string, ok bool) {
	nsName, ok := strings.CutPrefix(user, serviceAccountPrefix)
	if !ok {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(nsName, ":")
	if !ok || namespace == "" || name == "" || strings.Contains(name, ":") {
		return "", "", false
	}
	return namespace, name, true
}

func single(v []string) (string, bool) {
	if len(v) != 1 || v[0] == "" {
		return "", false
	}
	return v[0], true
}

// jwtExpiry reads the exp claim of an already validated JWT.
func jwtExpiry(token string) (time.Time, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *int64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == nil {
		return time.Time{}, false
	}
	return time.Unix(*claims.Exp, 0), true
}

// redactedError stands in for an error whose message contained the token. It
// keeps the refusal class but not the chain, whose messages hold the token.
type redactedError struct {
	msg   string
	class error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.class }

const minRedact = 8

// redact makes sure no error message carries the token (the API server does
// not echo it, but the cached error outlives this call, so do not rely on it).
// Tokens shorter than minRedact are garbage, not secrets, and replacing them
// would mangle the message.
func redact(err error, token string) error {
	if len(token) < minRedact || !strings.Contains(err.Error(), token) {
		return err
	}
	e := &redactedError{msg: strings.ReplaceAll(err.Error(), token, "<token>")}
	for _, class := range []error{ErrUnauthenticated, ErrNotAgent} {
		if errors.Is(err, class) {
			e.class = class
		}
	}
	return e
}

func cloneIdentity(id Identity) Identity {
	id.Tools = slices.Clone(id.Tools)
	return id
}
