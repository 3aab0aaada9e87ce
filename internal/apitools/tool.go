// Package apitools builds hub-run "api" tools: each call is one HTTP request
// to a configured endpoint, with credentials and trusted identity values
// attached by the hub and never visible to (or overridable by) the model.
// The endpoint description itself (toolspec.EndpointSpec) and its
// validation live in the leaf package toolspec, so the config can check it
// without importing this package.
package apitools

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/purko-io/mcp-hub/internal/secrets"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// excerptChars bounds the response body quoted in a non-2xx error result.
const excerptChars = 300

// maxRedirects bounds same-origin redirects; a redirect to another origin
// (scheme, host or port) is never followed: the credential must not travel
// there, and the caller sees the 3xx answer instead.
const maxRedirects = 5

// Handler is the call function of an api tool. bindings holds the trusted
// per-call values keyed by binding source (caller, agent, workflow, step).
type Handler = func(ctx context.Context, args map[string]any, bindings map[string]string) *mcp.CallToolResult

type endpoint struct {
	spec       toolspec.EndpointSpec
	method     string
	scheme     string
	authHeader string
	authValue  string // full header value, "" when no auth
	missing    bool   // auth configured but no credential: fail closed
	// redactor removes every credential of the endpoint from what goes
	// back to the caller: an api may echo the request in its answer.
	redactor *secrets.Redactor
	host     string
	timeout  time.Duration
	maxChars int
	schema   *jsonschema.Schema
	bound    map[string]bool
	query    map[string]bool
	client   *http.Client
}

// New builds the tool definition and handler for spec. credential is the
// resolved secret ("" when none); surrounding whitespace (a trailing newline
// of a mounted file) is trimmed. For Basic the credential is "user:password"
// and is base64-encoded by the hub. A spec with an AuthScheme and an empty
// credential still builds, but every call fails closed without sending the
// request. client may be nil.
func New(spec toolspec.EndpointSpec, credential string, client *http.Client) (mcp.Tool, Handler, error) {
	if err := spec.Validate(); err != nil {
		return mcp.Tool{}, nil, fmt.Errorf("api tool %q: %w", spec.Name, err)
	}
	ep := &endpoint{
		spec:     spec,
		method:   spec.EffectiveMethod(),
		scheme:   spec.EffectiveAuthScheme(),
		timeout:  time.Duration(spec.TimeoutSeconds) * time.Second,
		maxChars: spec.MaxResponseChars,
		bound:    spec.BoundFields(),
		query:    map[string]bool{},
	}
	if ep.timeout == 0 {
		ep.timeout = toolspec.DefaultTimeoutSeconds * time.Second
	}
	if ep.maxChars == 0 {
		ep.maxChars = toolspec.DefaultMaxResponseChars
	}
	for _, q := range spec.Query {
		ep.query[q] = true
	}
	u, _ := url.Parse(toolspec.FillPlaceholders(spec.URL, func(string) (string, bool) { return "x", true }))
	ep.host = u.Host

	credential = strings.TrimSpace(credential)
	if strings.ContainsAny(credential, "\r\n\x00") {
		return mcp.Tool{}, nil, fmt.Errorf("api tool %q: credential contains a line break or NUL", spec.Name)
	}
	if ep.scheme != "" {
		ep.authHeader = spec.EffectiveAuthHeader()
		if credential == "" {
			ep.missing = true
		} else {
			switch ep.scheme {
			case toolspec.AuthBearer:
				ep.authValue = "Bearer " + credential
			case toolspec.AuthToken:
				ep.authValue = "Token " + credential
			case toolspec.AuthBasic:
				if !strings.Contains(credential, ":") {
					return mcp.Tool{}, nil, fmt.Errorf("api tool %q: Basic credential must be user:password", spec.Name)
				}
				ep.authValue = "Basic " + base64.StdEncoding.EncodeToString([]byte(credential))
			case toolspec.AuthAPIKey:
				ep.authValue = credential
			}
		}
	}
	ep.redactor = secrets.NewRedactor(credentialValues(spec, credential, ep.authValue)...)

	schema, err := spec.PublishedSchema()
	if err != nil {
		return mcp.Tool{}, nil, fmt.Errorf("api tool %q: inputSchema: %w", spec.Name, err)
	}
	if len(spec.InputSchema) > 0 {
		if ep.schema, err = toolspec.CompileSchema(schema); err != nil {
			return mcp.Tool{}, nil, fmt.Errorf("api tool %q: inputSchema: %w", spec.Name, err)
		}
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return mcp.Tool{}, nil, fmt.Errorf("api tool %q: inputSchema: %w", spec.Name, err)
	}

	ep.client = secrets.WithPolicy(client, sameOriginOnly)

	desc := spec.Description
	if desc == "" {
		desc = fmt.Sprintf("%s %s", ep.method, redactURLForDisplay(spec.URL))
	}
	tool := mcp.NewToolWithRawSchema(spec.Name, desc, raw)
	readOnly := ep.method == http.MethodGet
	idempotent := ep.method == http.MethodGet || ep.method == http.MethodPut || ep.method == http.MethodDelete
	tool.Annotations = mcp.ToolAnnotation{
		ReadOnlyHint:    mcp.ToBoolPtr(readOnly),
		DestructiveHint: mcp.ToBoolPtr(!readOnly),
		IdempotentHint:  mcp.ToBoolPtr(idempotent),
		OpenWorldHint:   mcp.ToBoolPtr(true),
	}
	return tool, ep.call, nil
}

// redactURLForDisplay drops the query of a URL shown in a description.
func redactURLForDisplay(raw string) string {
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		return raw[:i]
	}
	return raw
}

// sameOriginOnly follows at most maxRedirects redirects, and only within
// the origin of the first request; otherwise the 3xx answer is the result.
func sameOriginOnly(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects || !secrets.SameOrigin(via[0].URL, req.URL) {
		return http.ErrUseLastResponse
	}
	return nil
}

// credentialValues lists what the endpoint sends that may be a credential:
// the credential and its auth header value, static header values, and the
// URL's userinfo and query values.
func credentialValues(spec toolspec.EndpointSpec, credential, authValue string) []string {
	vals := []string{credential, authValue}
	if _, pw, ok := strings.Cut(credential, ":"); ok {
		vals = append(vals, pw) // Basic user:password
	}
	vals = append(vals, secrets.OfEndpoint(spec.URL, spec.Headers)...)
	return vals
}

var printer = message.NewPrinter(language.English)

// schemaViolations turns a validation error into short lines naming the
// argument concerned.
func schemaViolations(err error) []string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{err.Error()}
	}
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		msg := e.ErrorKind.LocalizedString(printer)
		if len(e.InstanceLocation) == 0 {
			out = append(out, "arguments: "+msg)
		} else {
			out = append(out, fmt.Sprintf("argument %q: %s", strings.Join(e.InstanceLocation, "."), msg))
		}
	}
	walk(ve)
	if len(out) > 10 {
		out = append(out[:10], fmt.Sprintf("... and %d more", len(out)-10))
	}
	return out
}

func (ep *endpoint) scrub(s string) string { return ep.redactor.String(s) }

func (ep *endpoint) fail(format string, a ...any) *mcp.CallToolResult {
	return mcp.NewToolResultError(ep.scrub(fmt.Sprintf("tool %s: ", ep.spec.Name) + fmt.Sprintf(format, a...)))
}

func (ep *endpoint) call(ctx context.Context, args map[string]any, bindings map[string]string) (res *mcp.CallToolResult) {
	defer func() {
		if r := recover(); r != nil {
			res = ep.fail("internal error")
		}
	}()
	if ctx == nil {
		ctx = context.Background()
	}
	if ep.missing {
		return ep.fail("the credential for tool %s is missing (authScheme %s); the request was not sent", ep.spec.Name, ep.scheme)
	}

	// Model arguments minus bound names, in any letter case: a model can
	// never set a bound value, not even for an endpoint whose decoder
	// matches names case-insensitively.
	modelArgs := make(map[string]any, len(args))
	for k, v := range args {
		if !ep.isBound(k) {
			modelArgs[k] = v
		}
	}
	if ep.schema != nil {
		if err := ep.schema.Validate(jsonRoundTrip(modelArgs)); err != nil {
			return ep.fail("invalid arguments; the request was not sent:\n%s", strings.Join(schemaViolations(err), "\n"))
		}
	}

	// Trusted values.
	vals := modelArgs
	headers := http.Header{}
	for _, b := range ep.spec.Bindings {
		v, ok := bindings[b.From]
		if !ok || v == "" {
			return ep.fail("binding %q is not available for this call; the request was not sent", b.From)
		}
		if b.Header != "" {
			if strings.ContainsAny(v, "\r\n\x00") {
				return ep.fail("binding %q has an invalid header value", b.From)
			}
			headers.Set(b.Header, v)
		} else {
			vals[b.Field] = v
		}
	}

	target, err := ep.fillURL(vals)
	if err != nil {
		return ep.fail("%v", err)
	}
	query := target.Query()
	var body io.Reader
	sendQuery := ep.method == http.MethodGet || ep.method == http.MethodDelete
	if !sendQuery {
		bodyVals := map[string]any{}
		for k, v := range vals {
			if ep.query[k] {
				if err := addQuery(query, k, v); err != nil {
					return ep.fail("%v", err)
				}
			} else {
				bodyVals[k] = v
			}
		}
		b, err := json.Marshal(bodyVals)
		if err != nil {
			return ep.fail("arguments are not JSON-encodable: %v", err)
		}
		body = bytes.NewReader(b)
	} else {
		for k, v := range vals {
			if err := addQuery(query, k, v); err != nil {
				return ep.fail("%v", err)
			}
		}
	}
	target.RawQuery = query.Encode()

	cctx, cancel := context.WithTimeout(ctx, ep.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, ep.method, target.String(), body)
	if err != nil {
		return ep.fail("building request to %s: %v", ep.host, err)
	}
	req.Header.Set("Accept", "application/json, text/*;q=0.9, */*;q=0.5")
	req.Header.Set("User-Agent", "mcp-hub")
	for _, k := range sortedKeys(ep.spec.Headers) {
		req.Header.Set(k, ep.spec.Headers[k])
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header[k] = v
	}
	if ep.authValue != "" {
		req.Header.Set(ep.authHeader, ep.authValue)
	}

	resp, err := ep.client.Do(req)
	if err != nil {
		return ep.fail("request to %s failed: %s", ep.host, ep.netReason(ctx, err))
	}
	defer resp.Body.Close()

	// UTF-8 needs at most 4 bytes a character: read enough for maxChars
	// characters plus one byte to detect more.
	limit := int64(ep.maxChars)*4 + 1
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return ep.fail("reading response from %s failed: %s", ep.host, ep.netReason(ctx, err))
	}
	moreBytes := int64(len(data)) == limit

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		extra := ""
		if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
			extra = " (redirect not followed)"
		}
		// Redacted before the excerpt is cut: a cut must not leave the
		// first part of a credential behind.
		return ep.fail("%s answered %s%s: %s", ep.host, resp.Status, extra, excerpt([]byte(ep.scrub(string(data)))))
	}
	text, truncated := ep.renderBody(resp.Header.Get("Content-Type"), data, moreBytes)
	// Redacted before the notice is added: a credential the truncation cut
	// is caught at the end of the text.
	text = ep.scrub(text)
	if truncated {
		text += fmt.Sprintf("\n\n[truncated: the response exceeded %d characters; only the first %d are shown]", ep.maxChars, ep.maxChars)
	}
	return mcp.NewToolResultText(text)
}

// fillURL replaces {name} placeholders (path-escaped) and removes the names
// from vals.
func (ep *endpoint) fillURL(vals map[string]any) (*url.URL, error) {
	var missing, bad []string
	filled := toolspec.FillPlaceholders(ep.spec.URL, func(name string) (string, bool) {
		v, ok := vals[name]
		if !ok || v == nil {
			missing = append(missing, name)
			return "", false
		}
		s, err := scalarString(v)
		if err != nil || s == "" {
			missing = append(missing, name)
			return "", false
		}
		if s == "." || s == ".." {
			bad = append(bad, name)
			return "", false
		}
		return url.PathEscape(s), true
	})
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing URL path argument %q; the request was not sent", strings.Join(missing, `", "`))
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("URL path argument %q must not be \".\" or \"..\"; the request was not sent", strings.Join(bad, `", "`))
	}
	for _, p := range toolspec.Placeholders(ep.spec.URL) {
		delete(vals, p)
	}
	u, err := url.Parse(filled)
	if err != nil {
		return nil, fmt.Errorf("URL does not parse after filling placeholders")
	}
	return u, nil
}

func scalarString(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case json.Number:
		return x.String(), nil
	default:
		return "", fmt.Errorf("not a scalar")
	}
}

// addQuery adds one argument as query parameter(s): scalars as text, arrays
// of scalars as repeated parameters, anything else JSON-encoded.
func addQuery(q url.Values, k string, v any) error {
	if v == nil {
		return nil
	}
	if s, err := scalarString(v); err == nil {
		q.Add(k, s)
		return nil
	}
	if arr, ok := v.([]any); ok {
		all := true
		for _, e := range arr {
			if _, err := scalarString(e); err != nil {
				all = false
				break
			}
		}
		if all {
			for _, e := range arr {
				s, _ := scalarString(e)
				q.Add(k, s)
			}
			return nil
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("argument %q is not JSON-encodable", k)
	}
	q.Add(k, string(b))
	return nil
}

// jsonRoundTrip normalizes arbitrary Go values to what encoding/json decodes
// (the validator expects that shape).
func jsonRoundTrip(v map[string]any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return v
	}
	return out
}

func (ep *endpoint) netReason(parent context.Context, err error) string {
	if parent.Err() != nil {
		return "the call was canceled"
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Sprintf("timed out after %s", ep.timeout)
	}
	// url.Error carries the full URL, query included: keep only the cause.
	var ue *url.Error
	for errors.As(err, &ue) {
		err = ue.Err
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Op + ": " + oe.Err.Error()
	}
	return err.Error()
}

// renderBody returns the body as text, capped at maxChars characters.
func (ep *endpoint) renderBody(contentType string, data []byte, moreBytes bool) (string, bool) {
	mt, _, _ := mime.ParseMediaType(contentType)
	if !utf8.Valid(data) && !moreBytes {
		if !isTextual(mt) {
			return fmt.Sprintf("[non-text response: %d bytes of %s]", len(data), orUnknown(mt)), false
		}
		data = []byte(strings.ToValidUTF8(string(data), "\uFFFD"))
	}
	s := string(data)
	if moreBytes {
		// The cut may have split a character; drop a trailing partial rune.
		for len(s) > 0 {
			r, size := utf8.DecodeLastRuneInString(s)
			if r != utf8.RuneError || size != 1 {
				break
			}
			s = s[:len(s)-1]
		}
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(data) == 0 {
		return "(empty response body)", false
	}
	if utf8.RuneCountInString(s) > ep.maxChars {
		r := []rune(s)
		return string(r[:ep.maxChars]), true
	}
	return s, moreBytes
}

func isTextual(mt string) bool {
	return mt == "" || strings.HasPrefix(mt, "text/") || strings.HasSuffix(mt, "json") || strings.HasSuffix(mt, "xml") ||
		mt == "application/javascript" || mt == "application/x-www-form-urlencoded"
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown type"
	}
	return s
}

func excerpt(data []byte) string {
	s := strings.TrimSpace(strings.ToValidUTF8(string(data), "\uFFFD"))
	if s == "" {
		return "(empty body)"
	}
	if utf8.RuneCountInString(s) <= excerptChars {
		return s
	}
	return string([]rune(s)[:excerptChars]) + "…"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// isBound reports whether an argument name is a bound field's, in any
// letter case.
func (ep *endpoint) isBound(name string) bool {
	for f := range ep.bound {
		if strings.EqualFold(f, name) {
			return true
		}
	}
	return false
}
