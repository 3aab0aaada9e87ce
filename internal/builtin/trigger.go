package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

// TriggerWorkflowToolName is the name under which the hub exposes the
// trigger-workflow builtin.
const TriggerWorkflowToolName = "trigger-workflow"

// Limits of the trigger-workflow tool.
const (
	DefaultTriggerTimeout = 30 * time.Second
	// triggerExcerptChars bounds the dashboard body quoted in an error result.
	triggerExcerptChars = 300
	// triggerMaxResponseBytes bounds how much of the dashboard's answer is read.
	triggerMaxResponseBytes = 1 << 20
)

// TriggerOptions configures the trigger-workflow tool.
type TriggerOptions struct {
	// DashboardURL is the Purko operator dashboard, e.g.
	// http://purko-operator.<ns>.svc:8082. Required: without it every call
	// is an error result.
	DashboardURL string
	// DefaultNamespace is used when the call names no namespace.
	DefaultNamespace string
	// Token, when set, is sent as "Authorization: Bearer <Token>". It never
	// appears in a result.
	Token string
	// HTTPClient defaults to a client with no timeout of its own (Timeout
	// below bounds each call).
	HTTPClient *http.Client
	// Timeout bounds one call; zero means DefaultTriggerTimeout.
	Timeout time.Duration
}

// TriggerWorkflow returns the trigger-workflow tool and its handler. The
// handler POSTs <DashboardURL>/api/trigger/<namespace>/<workflow> with the
// payload as JSON body and returns the dashboard's JSON answer as text. It
// never panics and never returns nil; every failure is an error result.
//
// bindings are accepted for symmetry with the other hub-run tools and are
// not used: the dashboard identifies the trigger source by
// X-Trigger-Source: mcp-hub.
func TriggerWorkflow(opts TriggerOptions) (mcp.Tool, func(ctx context.Context, args map[string]any, bindings map[string]string) *mcp.CallToolResult) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTriggerTimeout
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	nsDesc := "Kubernetes namespace of the workflow."
	if opts.DefaultNamespace != "" {
		nsDesc += fmt.Sprintf(" Defaults to %q.", opts.DefaultNamespace)
	}
	tool := mcp.NewTool(TriggerWorkflowToolName,
		mcp.WithDescription("Start a run of a Purko workflow. Returns the dashboard's answer "+
			"(JSON with the run name and namespace)."),
		mcp.WithString("workflow", mcp.Required(), mcp.Description("Name of the workflow to trigger.")),
		mcp.WithString("namespace", mcp.Description(nsDesc)),
		mcp.WithObject("payload", mcp.Description("Input for the run. An object is sent as is; "+
			"a string is parsed as a JSON object, otherwise sent as {\"task\": <string>}.")),
		mcp.WithDestructiveHintAnnotation(true),
		mcp.WithReadOnlyHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	// payload accepts a string as well as an object.
	tool.InputSchema.Properties["payload"] = map[string]any{
		"type":        []string{"object", "string"},
		"description": "Input for the run. An object is sent as is; a string is parsed as a JSON object, otherwise sent as {\"task\": <string>}.",
	}
	handler := func(ctx context.Context, args map[string]any, _ map[string]string) (res *mcp.CallToolResult) {
		defer func() {
			if r := recover(); r != nil {
				res = mcp.NewToolResultError(fmt.Sprintf("%s: internal error", TriggerWorkflowToolName))
			}
		}()
		return triggerRun(ctx, opts, args)
	}
	return tool, handler
}

func triggerErr(opts TriggerOptions, format string, a ...any) *mcp.CallToolResult {
	return mcp.NewToolResultError(triggerScrub(opts.Token, TriggerWorkflowToolName+": "+fmt.Sprintf(format, a...)))
}

// triggerScrub removes the token from text bound for a result.
func triggerScrub(token, s string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, "[redacted]")
}

func triggerStringArg(args map[string]any, name string) (string, error) {
	v, ok := args[name]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("argument %q must be a string, got %T", name, v)
	}
	return strings.TrimSpace(s), nil
}

// triggerPayload turns the payload argument into the JSON request body.
func triggerPayload(v any) ([]byte, error) {
	switch p := v.(type) {
	case nil:
		return []byte("{}"), nil
	case map[string]any:
		return json.Marshal(p)
	case json.RawMessage:
		var obj map[string]any
		if err := json.Unmarshal(p, &obj); err != nil || obj == nil {
			return nil, errors.New("argument \"payload\" must be a JSON object")
		}
		return json.Marshal(obj)
	case string:
		trimmed := strings.TrimSpace(p)
		if strings.HasPrefix(trimmed, "{") {
			var obj map[string]any
			if err := json.Unmarshal([]byte(trimmed), &obj); err == nil && obj != nil {
				return json.Marshal(obj)
			}
		}
		return json.Marshal(map[string]any{"task": p})
	default:
		return nil, fmt.Errorf("argument \"payload\" must be an object or a string, got %T", v)
	}
}

func triggerRun(ctx context.Context, opts TriggerOptions, args map[string]any) *mcp.CallToolResult {
	if strings.TrimSpace(opts.DashboardURL) == "" {
		return triggerErr(opts, "no dashboard URL is configured")
	}
	base, err := url.Parse(strings.TrimRight(strings.TrimSpace(opts.DashboardURL), "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return triggerErr(opts, "dashboard URL is not an absolute http(s) URL")
	}
	workflow, err := triggerStringArg(args, "workflow")
	if err != nil {
		return triggerErr(opts, "%v", err)
	}
	if workflow == "" {
		return triggerErr(opts, "argument \"workflow\" is required")
	}
	namespace, err := triggerStringArg(args, "namespace")
	if err != nil {
		return triggerErr(opts, "%v", err)
	}
	if namespace == "" {
		namespace = opts.DefaultNamespace
	}
	if namespace == "" {
		return triggerErr(opts, "argument \"namespace\" is required (no default namespace is configured)")
	}
	body, err := triggerPayload(args["payload"])
	if err != nil {
		return triggerErr(opts, "%v", err)
	}

	if namespace == "." || namespace == ".." || workflow == "." || workflow == ".." {
		return triggerErr(opts, "invalid workflow or namespace name")
	}
	// Build the escaped path explicitly: each name is one path segment
	// ("/" becomes %2F), so a name can never climb out of /api/trigger.
	target := *base
	target.RawQuery, target.Fragment = "", ""
	target.Path = strings.TrimRight(base.Path, "/") + "/api/trigger/" + namespace + "/" + workflow
	target.RawPath = strings.TrimRight(base.EscapedPath(), "/") + "/api/trigger/" + url.PathEscape(namespace) + "/" + url.PathEscape(workflow)
	if ctx == nil {
		ctx = context.Background()
	}
	cctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, target.String(), bytes.NewReader(body))
	if err != nil {
		return triggerErr(opts, "building request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Trigger-Source", "mcp-hub")
	if opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+opts.Token)
	}
	resp, err := opts.HTTPClient.Do(req)
	if err != nil {
		return triggerErr(opts, "dashboard %s unreachable: %s", base.Host, triggerNetReason(ctx, err, opts.Timeout))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, triggerMaxResponseBytes))
	if err != nil {
		return triggerErr(opts, "reading dashboard answer: %s", triggerNetReason(ctx, err, opts.Timeout))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return triggerErr(opts, "dashboard answered %s for %s/%s: %s", resp.Status, namespace, workflow, triggerExcerpt(data))
	}
	text := strings.TrimSpace(string(data))
	if text == "" {
		b, _ := json.Marshal(map[string]string{"namespace": namespace, "workflow": workflow, "status": resp.Status})
		text = string(b)
	}
	return mcp.NewToolResultText(triggerScrub(opts.Token, text))
}

// triggerNetReason describes a transport error without the request URL.
func triggerNetReason(parent context.Context, err error, timeout time.Duration) string {
	if parent.Err() != nil {
		return "call canceled"
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Sprintf("timed out after %s", timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// triggerExcerpt returns at most triggerExcerptChars characters of body.
func triggerExcerpt(data []byte) string {
	s := strings.TrimSpace(strings.ToValidUTF8(string(data), "\uFFFD"))
	if s == "" {
		return "(empty body)"
	}
	if utf8.RuneCountInString(s) <= triggerExcerptChars {
		return s
	}
	r := []rune(s)
	return string(r[:triggerExcerptChars]) + "…"
}
