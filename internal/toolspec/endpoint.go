// Package toolspec holds what the hub's configuration declares about tools
// and callers, as plain data with its validation: api tool endpoints
// (EndpointSpec), the autonomy level names a caller's ceiling may use and
// the tool-name patterns of a tool policy.
//
// It is a leaf: it imports nothing of this module. That lets config and the
// discovery sources validate what they read without depending on the
// packages that run tools (apitools) or enforce levels (autonomy), so the
// import arrows keep pointing one way. apitools builds tools from these
// types; autonomy keeps its own level parser, and a test in autonomy checks
// that the two accept exactly the same names.
package toolspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Defaults and bounds of an EndpointSpec.
const (
	DefaultMethod           = http.MethodPost
	DefaultTimeoutSeconds   = 30
	MaxTimeoutSeconds       = 600
	DefaultMaxResponseChars = 100000
	MaxMaxResponseChars     = 5000000
	// DefaultAuthHeader is the header carrying the credential for the
	// Bearer, Token and Basic schemes.
	DefaultAuthHeader = "Authorization"
	// DefaultAPIKeyHeader is the header carrying the raw credential for the
	// ApiKey scheme when AuthHeader is empty.
	DefaultAPIKeyHeader = "X-API-Key"
)

// Auth schemes.
const (
	AuthBearer = "Bearer"
	AuthToken  = "Token"
	AuthBasic  = "Basic"
	AuthAPIKey = "ApiKey"
)

// Binding sources: the trusted per-call values the hub knows.
const (
	FromCaller   = "caller"
	FromAgent    = "agent"
	FromWorkflow = "workflow"
	FromStep     = "step"
)

// The accepted values are functions, not package variables, so no caller
// can change what validation accepts.
func methods() []string {
	return []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch}
}

func authSchemes() []string { return []string{AuthBearer, AuthToken, AuthBasic, AuthAPIKey} }

func bindFroms() []string { return []string{FromCaller, FromAgent, FromWorkflow, FromStep} }

var (
	nameRE        = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	placeholderRE = regexp.MustCompile(`\{([^{}/?#]+)\}`)
	headerTokenRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// SecretKeyRef names a key of a Kubernetes Secret. It is resolved by the
// caller (which has the Kubernetes client), never by this package.
type SecretKeyRef struct {
	Name      string `json:"name" yaml:"name"`
	Key       string `json:"key" yaml:"key"`
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
}

// CredentialRef says where the secret comes from. At most one source may be
// set. The caller resolves it and passes the value to apitools.New.
type CredentialRef struct {
	Env       string        `json:"env,omitempty" yaml:"env,omitempty"`
	File      string        `json:"file,omitempty" yaml:"file,omitempty"`
	SecretRef *SecretKeyRef `json:"secretRef,omitempty" yaml:"secretRef,omitempty"`
}

// IsZero reports whether no source is set.
func (c CredentialRef) IsZero() bool { return c.Env == "" && c.File == "" && c.SecretRef == nil }

// Binding fills one header or argument from a trusted per-call value. Bound
// names are not in the model-facing schema, and a model argument of the same
// name is dropped.
type Binding struct {
	// From is one of caller, agent, workflow, step.
	From string `json:"from" yaml:"from"`
	// Header sets a request header. Exactly one of Header and Field.
	Header string `json:"header,omitempty" yaml:"header,omitempty"`
	// Field sets an argument: a body field (POST/PUT/PATCH), a query
	// parameter (GET/DELETE or listed in Query) or a {placeholder} in the URL.
	Field string `json:"field,omitempty" yaml:"field,omitempty"`
}

// EndpointSpec describes one api tool.
type EndpointSpec struct {
	Name        string `json:"name" yaml:"name"`
	Description string `json:"description,omitempty" yaml:"description,omitempty"`
	// URL is absolute http(s); "{arg}" placeholders in its path are filled
	// from arguments.
	URL string `json:"url" yaml:"url"`
	// Method is GET, POST, PUT, DELETE or PATCH (case-insensitive); default POST.
	Method string `json:"method,omitempty" yaml:"method,omitempty"`
	// Headers are static request headers.
	Headers        map[string]string `json:"headers,omitempty" yaml:"headers,omitempty"`
	TimeoutSeconds int               `json:"timeoutSeconds,omitempty" yaml:"timeoutSeconds,omitempty"`
	// AuthScheme is Bearer, Token, Basic or ApiKey; empty means no auth.
	AuthScheme string `json:"authScheme,omitempty" yaml:"authScheme,omitempty"`
	// AuthHeader defaults to Authorization (X-API-Key for ApiKey).
	AuthHeader  string          `json:"authHeader,omitempty" yaml:"authHeader,omitempty"`
	Credential  CredentialRef   `json:"credentials,omitempty" yaml:"credentials,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty" yaml:"inputSchema,omitempty"`
	Bindings    []Binding       `json:"bindings,omitempty" yaml:"bindings,omitempty"`
	// Query lists arguments always sent as query parameters, whatever the
	// method (used by the OpenAPI import for query parameters of POST etc.).
	Query            []string `json:"query,omitempty" yaml:"query,omitempty"`
	MaxResponseChars int      `json:"maxResponseChars,omitempty" yaml:"maxResponseChars,omitempty"`
}

// EffectiveMethod is the upper-cased method, POST when empty.
func (s EndpointSpec) EffectiveMethod() string {
	m := strings.ToUpper(strings.TrimSpace(s.Method))
	if m == "" {
		return DefaultMethod
	}
	return m
}

// EffectiveAuthScheme is AuthScheme as one of the Auth constants (matched
// case-insensitively), "" without auth, and the value itself when unknown
// (which Validate rejects).
func (s EndpointSpec) EffectiveAuthScheme() string {
	scheme := strings.TrimSpace(s.AuthScheme)
	for _, k := range authSchemes() {
		if strings.EqualFold(k, scheme) {
			return k
		}
	}
	return scheme
}

// EffectiveAuthHeader is the header the credential goes in ("" without auth).
func (s EndpointSpec) EffectiveAuthHeader() string {
	scheme := s.EffectiveAuthScheme()
	switch {
	case scheme == "":
		return ""
	case s.AuthHeader != "":
		return http.CanonicalHeaderKey(s.AuthHeader)
	case scheme == AuthAPIKey:
		return DefaultAPIKeyHeader
	default:
		return DefaultAuthHeader
	}
}

// BoundFields is the set of argument names filled by bindings: the model
// neither sees nor sets them.
func (s EndpointSpec) BoundFields() map[string]bool {
	out := map[string]bool{}
	for _, b := range s.Bindings {
		if b.Field != "" {
			out[b.Field] = true
		}
	}
	return out
}

// Placeholders lists the {name} placeholders of a URL in order.
func Placeholders(rawURL string) []string {
	var out []string
	for _, m := range placeholderRE.FindAllStringSubmatch(rawURL, -1) {
		out = append(out, m[1])
	}
	return out
}

// FillPlaceholders replaces each {name} of rawURL by fill(name); where fill
// reports false the placeholder stays as written. It is the one place that
// knows what a placeholder looks like, so validation and the request agree.
func FillPlaceholders(rawURL string, fill func(name string) (string, bool)) string {
	return placeholderRE.ReplaceAllStringFunc(rawURL, func(m string) string {
		if v, ok := fill(m[1 : len(m)-1]); ok {
			return v
		}
		return m
	})
}

// Validate checks the spec; each error names the offending field.
func (s EndpointSpec) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	if !nameRE.MatchString(s.Name) {
		add("name: %q must match [a-zA-Z0-9_-]{1,64}", s.Name)
	}
	if err := validateURL(s.URL); err != nil {
		add("url: %v", err)
	}
	if m := s.EffectiveMethod(); !slices.Contains(methods(), m) {
		add("method: %q is not one of %s", s.Method, strings.Join(methods(), ", "))
	}
	if s.TimeoutSeconds < 0 || s.TimeoutSeconds > MaxTimeoutSeconds {
		add("timeoutSeconds: %d is not within 0..%d", s.TimeoutSeconds, MaxTimeoutSeconds)
	}
	if s.MaxResponseChars < 0 || s.MaxResponseChars > MaxMaxResponseChars {
		add("maxResponseChars: %d is not within 0..%d", s.MaxResponseChars, MaxMaxResponseChars)
	}
	scheme := s.EffectiveAuthScheme()
	if scheme != "" && !slices.Contains(authSchemes(), scheme) {
		add("authScheme: %q is not one of %s", s.AuthScheme, strings.Join(authSchemes(), ", "))
	}
	if s.AuthHeader != "" {
		if !headerTokenRE.MatchString(s.AuthHeader) {
			add("authHeader: %q is not a valid header name", s.AuthHeader)
		} else if scheme == "" {
			add("authHeader: set but authScheme is empty")
		}
	}
	n := 0
	if s.Credential.Env != "" {
		n++
	}
	if s.Credential.File != "" {
		n++
	}
	if r := s.Credential.SecretRef; r != nil {
		n++
		if r.Name == "" || r.Key == "" {
			add("credentials.secretRef: name and key are required")
		}
	}
	switch {
	case n > 1:
		add("credentials: set only one of env, file, secretRef")
	case n == 1 && scheme == "":
		add("credentials: set but authScheme is empty, the credential would never be sent")
	case n == 0 && scheme != "":
		add("credentials: authScheme %q needs one of env, file, secretRef", s.AuthScheme)
	}
	for k := range s.Headers {
		if !headerTokenRE.MatchString(k) {
			add("headers: %q is not a valid header name", k)
		} else if strings.ContainsAny(s.Headers[k], "\r\n") {
			add("headers: value of %q contains a line break", k)
		} else if h := s.EffectiveAuthHeader(); h != "" && http.CanonicalHeaderKey(k) == http.CanonicalHeaderKey(h) {
			add("headers: %q is the auth header; the hub sets it from credentials", k)
		}
	}
	seen := map[string]bool{}
	for i, b := range s.Bindings {
		where := fmt.Sprintf("bindings[%d]", i)
		if !slices.Contains(bindFroms(), b.From) {
			add("%s.from: %q is not one of %s", where, b.From, strings.Join(bindFroms(), ", "))
		}
		switch {
		case (b.Header == "") == (b.Field == ""):
			add("%s: set exactly one of header, field", where)
		case b.Header != "":
			if !headerTokenRE.MatchString(b.Header) {
				add("%s.header: %q is not a valid header name", where, b.Header)
			} else if h := s.EffectiveAuthHeader(); h != "" && http.CanonicalHeaderKey(b.Header) == http.CanonicalHeaderKey(h) {
				add("%s.header: %q is the auth header", where, b.Header)
			}
			key := "header:" + http.CanonicalHeaderKey(b.Header)
			if seen[key] {
				add("%s.header: %q is bound twice", where, b.Header)
			}
			seen[key] = true
		default:
			key := "field:" + b.Field
			if seen[key] {
				add("%s.field: %q is bound twice", where, b.Field)
			}
			seen[key] = true
		}
	}
	if len(s.InputSchema) > 0 {
		if _, err := s.PublishedSchema(); err != nil {
			add("inputSchema: %v", err)
		}
	}
	return errors.Join(errs...)
}

func validateURL(raw string) error {
	if strings.TrimSpace(raw) == "" {
		return errors.New("is required")
	}
	filled := placeholderRE.ReplaceAllString(raw, "x")
	u, err := url.Parse(filled)
	if err != nil {
		return fmt.Errorf("%q does not parse", raw)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q is not an absolute http(s) URL", raw)
	}
	if u.Host == "" {
		return fmt.Errorf("%q has no host", raw)
	}
	if u.User != nil {
		return errors.New("must not carry user info; use authScheme and credentials")
	}
	if u.Fragment != "" {
		return errors.New("must not have a fragment")
	}
	// Placeholders are only allowed in the path.
	if i := strings.Index(raw, "://"); i >= 0 {
		rest := raw[i+3:]
		host := rest
		if j := strings.IndexAny(rest, "/?#"); j >= 0 {
			host = rest[:j]
		}
		if strings.ContainsAny(host, "{}") {
			return fmt.Errorf("%q has a placeholder in the host", raw)
		}
		if j := strings.IndexAny(rest, "?#"); j >= 0 && strings.ContainsAny(rest[j:], "{}") {
			return fmt.Errorf("%q has a placeholder outside the path", raw)
		}
	}
	if err := ValidatePort(u.Port()); err != nil {
		return fmt.Errorf("%q: %w", raw, err)
	}
	return nil
}

// ValidatePort checks the port of a URL or host:port ("" means the
// scheme's default and is fine). url.Parse accepts any run of digits, so
// without this check "http://h:99999" would only fail at the first dial,
// long after the config that holds it was accepted.
func ValidatePort(port string) error {
	if port == "" {
		return nil
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q is not within 1..65535", port)
	}
	return nil
}

// PublishedSchema returns the model-facing input schema: the spec's schema
// (or an open object) without bound fields, with URL placeholders added as
// required string properties when the spec has no schema.
func (s EndpointSpec) PublishedSchema() (map[string]any, error) {
	bound := s.BoundFields()
	var schema map[string]any
	if len(s.InputSchema) == 0 {
		schema = map[string]any{"type": "object", "additionalProperties": true}
		var props map[string]any
		var req []any
		for _, p := range Placeholders(s.URL) {
			if bound[p] {
				continue
			}
			if props == nil {
				props = map[string]any{}
			}
			if _, dup := props[p]; !dup {
				props[p] = map[string]any{"type": "string", "description": "URL path parameter."}
				req = append(req, p)
			}
		}
		if props != nil {
			schema["properties"] = props
			schema["required"] = req
		}
		return schema, nil
	}
	if err := json.Unmarshal(s.InputSchema, &schema); err != nil || schema == nil {
		return nil, errors.New("must be a JSON object")
	}
	if t, ok := schema["type"]; ok && t != "object" {
		return nil, fmt.Errorf("type must be \"object\", got %v", t)
	}
	schema["type"] = "object"
	if props, ok := schema["properties"].(map[string]any); ok {
		for f := range bound {
			delete(props, f)
		}
	}
	if req, ok := schema["required"].([]any); ok {
		kept := make([]any, 0, len(req))
		for _, r := range req {
			if name, _ := r.(string); !bound[name] {
				kept = append(kept, r)
			}
		}
		if len(kept) == 0 {
			delete(schema, "required")
		} else {
			schema["required"] = kept
		}
	}
	if _, err := CompileSchema(schema); err != nil {
		return nil, err
	}
	return schema, nil
}

// CompileSchema compiles a JSON Schema document. Remote and file $refs are
// refused: only references inside the document resolve, so a schema in a
// config cannot make the hub fetch anything.
func CompileSchema(doc map[string]any) (*jsonschema.Schema, error) {
	// Round-trip through the library's decoder so numbers have the types it
	// expects.
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	const loc = "mem:///inputSchema.json"
	if err := c.AddResource(loc, v); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}

type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("external schema reference %q is not allowed", u)
}
