package kube

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/kubeclient"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

var everything = labels.Everything()

// Object kinds in config.Origin.
const (
	kindMCPServer = "MCPServer"
	kindConfigMap = "ConfigMap"
)

// Annotations on an MCPServer for settings only the hub knows, so Purko's
// stock CRD keeps working unchanged.
const (
	annotationPrefix = "mcp-hub.purko.io/"
	// AnnotationPath is the endpoint path (default /mcp).
	AnnotationPath = annotationPrefix + "path"
	// AnnotationURL replaces the derived URL entirely.
	AnnotationURL = annotationPrefix + "url"
	// AnnotationTransport is streamable-http, sse or websocket.
	AnnotationTransport = annotationPrefix + "transport"
	// AnnotationTimeout is the per-call timeout, e.g. "30s".
	AnnotationTimeout = annotationPrefix + "timeout"
	// AnnotationReadOnlyTools lists tools (comma-separated names or globs)
	// the autonomy rules treat as read-only.
	AnnotationReadOnlyTools = annotationPrefix + "read-only-tools"
	// AnnotationWriteTools lists tools the autonomy rules treat as writes.
	AnnotationWriteTools = annotationPrefix + "write-tools"
	// AnnotationTrustAnnotations "true" lets the server's own readOnlyHint
	// and destructiveHint count when no operator rule decides.
	AnnotationTrustAnnotations = annotationPrefix + "trust-annotations"
	// AnnotationMaxInFlight bounds the calls running at once on the server
	// (replaces limits.perUpstream.maxInFlight).
	AnnotationMaxInFlight = annotationPrefix + "max-in-flight"
	// AnnotationRate is the server's calls per second (replaces
	// limits.perUpstream.rate; the burst is ceil(rate)).
	AnnotationRate = annotationPrefix + "rate"
	// AnnotationMaxResultChars overrides upstream.maxResultChars for the
	// server's tools ("0": no cap).
	AnnotationMaxResultChars = annotationPrefix + "max-result-chars"
	// AnnotationToolsAllow lists the only tools published (comma-separated
	// names or globs): the server's tools.allow.
	AnnotationToolsAllow = annotationPrefix + "tools-allow"
	// AnnotationToolsDeny lists tools never published: tools.deny.
	AnnotationToolsDeny = annotationPrefix + "tools-deny"
	// AnnotationToolOverrides is a YAML or JSON map of tool overrides by
	// the server's tool name (name, description, annotations):
	// tools.overrides.
	AnnotationToolOverrides = annotationPrefix + "tool-overrides"
)

// defaultPort is the MCPServer spec.port default of Purko's CRD.
const defaultPort = 8000

// fromMCPServer turns an MCPServer into a spec. A missing Secret is not an
// error here: the spec carries it as its Problem, so the server is listed
// as error with that reason and everything else keeps working.
func fromMCPServer(u *unstructured.Unstructured, token secretToken) (config.ServerSpec, error) {
	ns, name := u.GetNamespace(), u.GetName()
	spec := config.ServerSpec{
		Name:   name,
		Source: SourceName,
		Origin: &config.Origin{Kind: kindMCPServer, Namespace: ns, Name: name},
	}
	port, found, err := unstructured.NestedInt64(u.Object, "spec", "port")
	if err != nil {
		return spec, fmt.Errorf("spec.port: %w", err)
	}
	if !found || port == 0 {
		port = defaultPort
	}
	if port < 1 || port > 65535 {
		return spec, fmt.Errorf("spec.port: %d is not a port", port)
	}
	hostNetwork, _, _ := unstructured.NestedBool(u.Object, "spec", "hostNetwork")
	auth, _, _ := unstructured.NestedString(u.Object, "spec", "auth")
	secretRef, _, _ := unstructured.NestedString(u.Object, "spec", "secretRef")

	ann := u.GetAnnotations()
	path := ann[AnnotationPath]
	if path == "" {
		path = "/mcp"
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	host := fmt.Sprintf("%s.%s.svc", name, ns)
	if hostNetwork {
		host = "localhost"
	}
	spec.URL = "http://" + host + ":" + strconv.FormatInt(port, 10) + path
	if v := ann[AnnotationURL]; v != "" {
		spec.URL = v
	}
	spec.Transport = config.Transport(ann[AnnotationTransport])
	if v := ann[AnnotationTimeout]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return spec, fmt.Errorf("annotation %s: %q is not a duration", AnnotationTimeout, v)
		}
		spec.Timeout = config.Duration(d)
	}
	readOnly, write := config.SplitList(ann[AnnotationReadOnlyTools]), config.SplitList(ann[AnnotationWriteTools])
	for key, list := range map[string][]string{AnnotationReadOnlyTools: readOnly, AnnotationWriteTools: write} {
		if err := toolspec.ValidatePatterns(list); err != nil {
			return spec, fmt.Errorf("annotation %s: %w", key, err)
		}
	}
	if len(readOnly)+len(write) > 0 {
		spec.ToolPolicy = &config.ToolPolicy{ReadOnly: readOnly, Write: write}
	}
	if v := ann[AnnotationTrustAnnotations]; v != "" {
		trust, err := strconv.ParseBool(v)
		if err != nil {
			return spec, fmt.Errorf("annotation %s: %q is not true or false", AnnotationTrustAnnotations, v)
		}
		spec.TrustAnnotations = trust
	}
	limits, err := limitsOf(ann)
	if err != nil {
		return spec, err
	}
	spec.Limits = limits
	if v := ann[AnnotationMaxResultChars]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || (n != 0 && n < config.MinMaxResultChars) {
			return spec, fmt.Errorf("annotation %s: %q: must be 0 (off) or a number of characters, at least %d", AnnotationMaxResultChars, v, config.MinMaxResultChars)
		}
		spec.MaxResultChars = &n
	}
	spec.Problem = resolveAuth(&spec, ns, auth, secretRef, token)
	oauth, problem, err := oauthOf(ann, ns, auth, secretRef, token)
	if err != nil {
		return spec, err
	}
	spec.OAuth = oauth
	if spec.Problem == "" {
		spec.Problem = problem
	}
	users, problem, err := userOAuthOf(ann, ns, secretRef, token)
	if err != nil {
		return spec, err
	}
	spec.UserOAuth = users
	if spec.Problem == "" {
		spec.Problem = problem
	}
	tools, problem := curationOf(ann)
	spec.Tools = tools
	if spec.Problem == "" {
		spec.Problem = problem
	}
	return spec, nil
}

// curationOf reads the curation annotations; nil when there are none. A
// bad one is the server's problem, not an error: the server is listed as
// error with the reason, publishing none of its tools rather than the ones
// the operator meant to leave out, and the others are not affected.
func curationOf(ann map[string]string) (*config.ToolCuration, string) {
	allow, deny, overrides := ann[AnnotationToolsAllow], ann[AnnotationToolsDeny], ann[AnnotationToolOverrides]
	if allow == "" && deny == "" && overrides == "" {
		return nil, ""
	}
	cur := &config.ToolCuration{Allow: config.SplitList(allow), Deny: config.SplitList(deny)}
	if overrides != "" {
		if err := yaml.UnmarshalStrict([]byte(overrides), &cur.Overrides); err != nil {
			return nil, fmt.Sprintf("annotation %s: %v", AnnotationToolOverrides, err)
		}
	}
	if err := cur.Validate(); err != nil {
		field, _, _ := strings.Cut(err.Error(), ":")
		where := map[string]string{"allow": AnnotationToolsAllow, "deny": AnnotationToolsDeny}[field]
		if where == "" {
			where = AnnotationToolOverrides
		}
		return nil, fmt.Sprintf("annotation %s: %v", where, err)
	}
	return cur, ""
}

// limitsOf reads the limit annotations; nil when there are none.
func limitsOf(ann map[string]string) (*config.Limits, error) {
	rate, inFlight := ann[AnnotationRate], ann[AnnotationMaxInFlight]
	if rate == "" && inFlight == "" {
		return nil, nil
	}
	var l config.Limits
	if rate != "" {
		r, err := strconv.ParseFloat(rate, 64)
		if err != nil {
			return nil, fmt.Errorf("annotation %s: %q is not a number of calls per second", AnnotationRate, rate)
		}
		l.Rate = r
	}
	if inFlight != "" {
		n, err := strconv.Atoi(inFlight)
		if err != nil {
			return nil, fmt.Errorf("annotation %s: %q is not a whole number", AnnotationMaxInFlight, inFlight)
		}
		l.MaxInFlight = n
	}
	if err := l.Normalize(); err != nil {
		return nil, fmt.Errorf("annotations %s, %s: %w", AnnotationRate, AnnotationMaxInFlight, err)
	}
	return &l, nil
}

// resolveAuth fills the bearer token for auth "bearer" and returns the
// problem that keeps the server from working, if any.
func resolveAuth(spec *config.ServerSpec, namespace, auth, secretRef string, token secretToken) string {
	switch strings.ToLower(auth) {
	case "", "none":
		return ""
	case "bearer":
	default:
		return fmt.Sprintf("auth %q is not one of none, bearer", auth)
	}
	if secretRef == "" {
		return "auth is bearer but no secretRef names the Secret with the token"
	}
	tok, err := token(namespace, secretRef, "token")
	if err != nil {
		return "secretRef: " + err.Error()
	}
	spec.BearerToken = tok
	return ""
}

// cmEntry is one element of Purko's "connect by URL" ConfigMap.
type cmEntry struct {
	Name      string           `json:"name"`
	URL       string           `json:"url"`
	Auth      string           `json:"auth"`
	SecretRef string           `json:"secretRef"`
	Icon      string           `json:"icon"`
	Category  string           `json:"category"`
	Transport config.Transport `json:"transport"` // hub extension
}

// fromConfigMap reads the servers key, JSON or YAML (Purko writes both).
// Entries are decoded one by one, so a bad entry is reported by name and the
// others still work.
func fromConfigMap(cm *kubeclient.ConfigMap, token secretToken) ([]config.ServerSpec, []error) {
	raw, ok := cm.Data["servers"]
	if !ok || strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var items []any
	if err := yaml.Unmarshal([]byte(raw), &items); err != nil {
		return nil, []error{fmt.Errorf("key servers: not a JSON or YAML list: %w", err)}
	}
	var specs []config.ServerSpec
	var errs []error
	for i, item := range items {
		b, err := yaml.Marshal(item)
		var e cmEntry
		if err == nil {
			err = yaml.UnmarshalStrict(b, &e)
		}
		label := fmt.Sprintf("servers[%d]", i)
		if m, isMap := item.(map[string]any); isMap {
			if n, isString := m["name"].(string); isString && n != "" {
				label += " (" + n + ")"
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", label, err))
			continue
		}
		spec := config.ServerSpec{
			Name: e.Name, URL: e.URL, Transport: e.Transport, Source: SourceName,
			Origin: &config.Origin{Kind: kindConfigMap, Namespace: cm.Namespace, Name: cm.Name},
		}
		if err := spec.Normalize(); err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", label, err))
			continue
		}
		spec.Problem = resolveAuth(&spec, cm.Namespace, e.Auth, e.SecretRef, token)
		specs = append(specs, spec)
	}
	return specs, errs
}
