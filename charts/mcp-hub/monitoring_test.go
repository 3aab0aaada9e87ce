package chart_test

// Tests of the monitoring the chart ships: the Grafana dashboard
// (dashboards/mcp-hub.json, in a ConfigMap the Grafana sidecar loads) and the
// alerting rules (a PrometheusRule, and the same rules as a plain rules
// file). A dashboard or a rule that names a series the hub does not export
// fails silently in production, as an empty panel or an alert that never
// fires; here every PromQL expression of both is read, and each metric and
// label it names is checked against what a real hub's registry describes.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"sigs.k8s.io/yaml"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/hub"
	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// monitoringValues turns on everything monitoring_test reads.
const monitoringValues = `
grafanaDashboard:
  enabled: true
  annotations: {grafana_folder: MCP}
prometheusRule:
  enabled: true
  rulesConfigMap: true
  labels: {release: kube-prometheus-stack}
`

const (
	dashboardFile = "dashboards/mcp-hub.json"
	dashboardKey  = "mcp-hub.json"
	rulesKey      = "mcp-hub.rules.yaml"
)

// targetLabels are the labels Prometheus adds to every series it scrapes
// from the hub through the chart's ServiceMonitor (the target's, not the
// hub's): dashboards and rules may select and group by them.
var targetLabels = []string{"job", "instance", "namespace", "pod", "service", "endpoint", "container"}

// grafanaVariables are the variables Grafana itself defines.
var grafanaVariables = []string{"__rate_interval", "__interval", "__interval_ms", "__range", "__range_s", "__range_ms"}

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []templateVar `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int            `json:"id"`
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	Datasource map[string]any `json:"datasource"`
	Targets    []struct {
		Expr       string         `json:"expr"`
		Datasource map[string]any `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // of a collapsed row
}

type templateVar struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Query      any            `json:"query"` // a string, or {"query": ...}
	Definition string         `json:"definition"`
	Datasource map[string]any `json:"datasource"`
}

// queryText is a query variable's query, in either of Grafana's forms.
func (v templateVar) queryText() string {
	switch q := v.Query.(type) {
	case string:
		return q
	case map[string]any:
		s, _ := q["query"].(string)
		return s
	}
	return ""
}

// allPanels are the dashboard's panels, those of collapsed rows included.
func (d dashboard) allPanels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

type ruleGroup struct {
	Name  string `json:"name"`
	Rules []struct {
		Alert       string            `json:"alert"`
		Expr        string            `json:"expr"`
		For         string            `json:"for"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"rules"`
}

type prometheusRule struct {
	Spec struct {
		Groups []ruleGroup `json:"groups"`
	} `json:"spec"`
}

// renderMonitoring renders the chart with values and returns its objects
// by kind/name.
func renderMonitoring(t *testing.T, values string) map[string]object {
	t.Helper()
	objs, err := render(t, values)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]object{}
	for _, o := range objs {
		byName[o.Kind+"/"+o.Metadata.Name] = o
	}
	return byName
}

// renderedDashboard is the dashboard in the rendered ConfigMap.
func renderedDashboard(t *testing.T, objs map[string]object) (object, dashboard, string) {
	t.Helper()
	o, ok := objs["ConfigMap/"+fullname+"-dashboard"]
	if !ok {
		t.Fatalf("no ConfigMap %s-dashboard rendered", fullname)
	}
	var cm dataObject
	o.decode(t, &cm)
	raw, ok := cm.Data[dashboardKey]
	if !ok {
		t.Fatalf("the dashboard ConfigMap has no %s: keys %v", dashboardKey, mapsKeys(cm.Data))
	}
	var d dashboard
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		t.Fatalf("the dashboard in the ConfigMap is not JSON: %v", err)
	}
	return o, d, raw
}

// renderedRules are the groups of the PrometheusRule and of the plain
// rules file.
func renderedRules(t *testing.T, objs map[string]object) (object, []ruleGroup, []ruleGroup) {
	t.Helper()
	o, ok := objs["PrometheusRule/"+fullname]
	if !ok {
		t.Fatalf("no PrometheusRule %s rendered", fullname)
	}
	var pr prometheusRule
	o.decode(t, &pr)
	cmObj, ok := objs["ConfigMap/"+fullname+"-rules"]
	if !ok {
		t.Fatalf("no ConfigMap %s-rules rendered", fullname)
	}
	var cm dataObject
	cmObj.decode(t, &cm)
	var file struct {
		Groups []ruleGroup `json:"groups"`
	}
	if err := yaml.UnmarshalStrict([]byte(cm.Data[rulesKey]), &file); err != nil {
		t.Fatalf("%s is not a rules file: %v\n%s", rulesKey, err, cm.Data[rulesKey])
	}
	return o, pr.Spec.Groups, file.Groups
}

func mapsKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestGrafanaDashboard: off by default; on, a ConfigMap carrying the
// sidecar's label (and the user's labels and annotations, in the namespace
// asked for) holds the chart's dashboard file unchanged, as JSON with a
// Prometheus data source variable that every panel queries through, a
// server variable, and unique panel ids.
func TestGrafanaDashboard(t *testing.T) {
	for _, o := range renderMonitoring(t, "") {
		if o.Kind == "PrometheusRule" || strings.HasSuffix(o.Metadata.Name, "-dashboard") || strings.HasSuffix(o.Metadata.Name, "-rules") {
			t.Errorf("%s rendered with the default values", o.key())
		}
	}
	objs := renderMonitoring(t, `
grafanaDashboard:
  enabled: true
  namespace: monitoring
  labels: {grafana_dashboard: "1", team: platform}
  annotations: {grafana_folder: MCP}
`)
	o, d, raw := renderedDashboard(t, objs)
	if o.Metadata.Namespace != "monitoring" {
		t.Errorf("dashboard ConfigMap in namespace %q, want monitoring", o.Metadata.Namespace)
	}
	for k, v := range map[string]string{"grafana_dashboard": "1", "team": "platform", "app.kubernetes.io/name": "mcp-hub"} {
		if o.Metadata.Labels[k] != v {
			t.Errorf("dashboard ConfigMap label %s=%q, want %q (labels %v)", k, o.Metadata.Labels[k], v, o.Metadata.Labels)
		}
	}
	if got := o.Metadata.Annotations["grafana_folder"]; got != "MCP" {
		t.Errorf("dashboard ConfigMap annotation grafana_folder=%q, want MCP", got)
	}
	// The default labels alone carry the sidecar's.
	o, _, _ = renderedDashboard(t, renderMonitoring(t, monitoringValues))
	if o.Metadata.Labels["grafana_dashboard"] != "1" || o.Metadata.Namespace != namespace {
		t.Errorf("default dashboard ConfigMap: namespace %q, labels %v; want %s and grafana_dashboard=1", o.Metadata.Namespace, o.Metadata.Labels, namespace)
	}

	file, err := os.ReadFile(filepath.FromSlash(dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(raw) != strings.TrimSpace(string(file)) {
		t.Errorf("the ConfigMap's %s differs from %s", dashboardKey, dashboardFile)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard uid %q, title %q: both are needed", d.UID, d.Title)
	}
	vars := map[string]templateVar{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if v, ok := vars["datasource"]; !ok || v.Type != "datasource" || v.Query != "prometheus" {
		t.Errorf("no datasource variable of type datasource querying prometheus: %+v", v)
	}
	if v, ok := vars["server"]; !ok || v.Type != "query" || !strings.HasPrefix(v.queryText(), "label_values(") {
		t.Errorf("no server variable with a label_values query: %+v", v)
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" && v.Datasource["uid"] != "${datasource}" {
			t.Errorf("variable %s queries data source %v, want ${datasource}", v.Name, v.Datasource)
		}
	}
	ids := map[int]string{}
	exprs := 0
	for _, p := range d.allPanels() {
		if prev, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q share the id %d", prev, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		if p.Datasource["uid"] != "${datasource}" {
			t.Errorf("panel %q uses data source %v, want ${datasource}", p.Title, p.Datasource)
		}
		for _, tg := range p.Targets {
			if tg.Datasource["uid"] != "${datasource}" || strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q: a query on %v with expr %q", p.Title, tg.Datasource, tg.Expr)
			}
			exprs++
		}
	}
	if exprs < 20 {
		t.Errorf("the dashboard has %d queries; the issue asks for rates, errors and latencies of requests, tools, upstreams, limits, approvals and replicas", exprs)
	}
}

// wantAlerts are the alerts the chart ships, all on by default.
var wantAlerts = []string{"McpHubTargetDown", "McpHubReplicasMissing", "McpHubUpstreamDown", "McpHubToolErrorsHigh",
	"McpHubToolLatencyHigh", "McpHubApprovalsPending", "McpHubApprovalsExpired", "McpHubRateLimited", "McpHubToolsQuarantined"}

// TestPrometheusRule: the PrometheusRule and the plain rules file hold the
// same rules; each alert has a severity, a summary and a description, and
// reads this release's series; thresholds, severities, durations and the
// selector come from the values; a rule can be turned off; the replicas
// floor follows replicaCount or autoscaling.minReplicas.
func TestPrometheusRule(t *testing.T) {
	objs := renderMonitoring(t, monitoringValues)
	o, groups, plain := renderedRules(t, objs)
	if o.APIVersion != "monitoring.coreos.com/v1" || o.Metadata.Labels["release"] != "kube-prometheus-stack" || o.Metadata.Namespace != namespace {
		t.Errorf("PrometheusRule %s in %q with labels %v", o.APIVersion, o.Metadata.Namespace, o.Metadata.Labels)
	}
	if !reflect.DeepEqual(groups, plain) {
		t.Errorf("the rules file differs from the PrometheusRule:\n%+v\n%+v", plain, groups)
	}
	alerts := map[string]int{}
	defaultSel := fmt.Sprintf("job=%q, namespace=%q", fullname, namespace)
	for _, g := range groups {
		for _, r := range g.Rules {
			alerts[r.Alert]++
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: severity %q, summary %q, description %q: all are needed", r.Alert, r.Labels["severity"], r.Annotations["summary"], r.Annotations["description"])
			}
			if !strings.Contains(r.Expr, defaultSel) {
				t.Errorf("%s does not select this release's series (%s): %s", r.Alert, defaultSel, r.Expr)
			}
		}
	}
	for _, a := range wantAlerts {
		if alerts[a] != 1 {
			t.Errorf("alert %s rendered %d times, want once", a, alerts[a])
		}
	}
	if len(alerts) != len(wantAlerts) {
		t.Errorf("alerts %v, want %v", mapsKeys(alerts), wantAlerts)
	}
	rule := func(groups []ruleGroup, alert string) (expr, dur, severity string, found bool) {
		for _, g := range groups {
			for _, r := range g.Rules {
				if r.Alert == alert {
					return r.Expr, r.For, r.Labels["severity"], true
				}
			}
		}
		return "", "", "", false
	}
	if expr, _, _, _ := rule(groups, "McpHubReplicasMissing"); !strings.HasSuffix(expr, "< 2") {
		t.Errorf("McpHubReplicasMissing with replicaCount 2: %s", expr)
	}
	if _, dur, _, _ := rule(groups, "McpHubApprovalsExpired"); dur != "" {
		t.Errorf("McpHubApprovalsExpired has for %q; 0m must leave it out", dur)
	}

	_, groups, _ = renderedRules(t, renderMonitoring(t, `
autoscaling: {enabled: true, minReplicas: 3}
prometheusRule:
  enabled: true
  rulesConfigMap: true
  selector: 'job="hub", cluster="eu"'
  alertLabels: {team: platform, severity: ignored}
  rules:
    toolErrors: {enabled: true, for: 3m, severity: page, ratio: 0.25, minCallsPerSecond: 2, outcomes: "unavailable|error"}
    toolLatency: {enabled: true, for: 10m, severity: warning, p95Seconds: 2.5}
    rateLimited: {enabled: true, for: 10m, severity: warning, perSecond: 7}
    toolsQuarantined: {enabled: false, severity: warning}
`))
	expr, dur, severity, _ := rule(groups, "McpHubToolErrorsHigh")
	for _, want := range []string{`job="hub", cluster="eu"`, `outcome=~"unavailable|error"`, "> 0.25", "> 2"} {
		if !strings.Contains(expr, want) {
			t.Errorf("McpHubToolErrorsHigh lacks %s: %s", want, expr)
		}
	}
	if dur != "3m" || severity != "page" {
		t.Errorf("McpHubToolErrorsHigh: for %q, severity %q; want 3m, page", dur, severity)
	}
	if expr, _, _, _ := rule(groups, "McpHubToolLatencyHigh"); !strings.HasSuffix(expr, "> 2.5") {
		t.Errorf("McpHubToolLatencyHigh with p95Seconds 2.5: %s", expr)
	}
	if expr, _, _, _ := rule(groups, "McpHubRateLimited"); !strings.HasSuffix(expr, "> 7") {
		t.Errorf("McpHubRateLimited with perSecond 7: %s", expr)
	}
	if expr, _, _, _ := rule(groups, "McpHubReplicasMissing"); !strings.HasSuffix(expr, "< 3") {
		t.Errorf("McpHubReplicasMissing with autoscaling.minReplicas 3: %s", expr)
	}
	if _, _, _, found := rule(groups, "McpHubToolsQuarantined"); found {
		t.Error("McpHubToolsQuarantined rendered though disabled")
	}
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Labels["team"] != "platform" || r.Labels["severity"] == "ignored" {
				t.Errorf("%s labels %v: want team=platform and its own severity", r.Alert, r.Labels)
			}
		}
	}
}

// TestMonitoringTemplateRejects: values.schema.json refuses misspelled or
// mistyped monitoring values.
func TestMonitoringTemplateRejects(t *testing.T) {
	for _, tc := range []struct{ name, values, want string }{
		{"unknown dashboard value", "grafanaDashboard: {enabled: true, folder: MCP}\n", "folder"},
		{"numeric dashboard label", "grafanaDashboard: {enabled: true, labels: {grafana_dashboard: 1}}\n", "grafana_dashboard"},
		{"unknown alert", "prometheusRule: {enabled: true, rules: {hubDown: {enabled: true, severity: x}}}\n", "hubDown"},
		{"ratio above 1", "prometheusRule: {rules: {toolErrors: {ratio: 5}}}\n", "ratio"},
		{"bad for", "prometheusRule: {rules: {upstreamDown: {for: soon}}}\n", "for"},
		{"string threshold", "prometheusRule: {rules: {toolLatency: {p95Seconds: 10s}}}\n", "p95Seconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(t, tc.values)
			if err == nil {
				t.Fatalf("rendered; want an error about %s", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error does not name %q: %v", tc.want, err)
			}
		})
	}
}

// execHelm is a helm command run in the chart's directory.
func execHelm(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	return exec.Command(helm(t), args...)
}

// TestMonitoringLint: `helm lint --strict` (which make helm-test runs with
// the monitoring off) passes with the dashboard and both forms of the rules
// on.
func TestMonitoringLint(t *testing.T) {
	var out strings.Builder
	cmd := execHelm(t, "lint", "--strict", ".", "--values", "-")
	cmd.Stdin = strings.NewReader(monitoringValues)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm lint --strict: %v\n%s", err, out.String())
	}
}

// TestMonitoringNamesExportedSeries: every PromQL expression of the
// dashboard (each panel query and each variable's query) and of the alerts
// names only metrics a hub exports, with labels those metrics carry (or
// that Prometheus adds when it scrapes a target), and only Grafana
// variables the dashboard defines. What a hub exports is read from a real
// one (hubSeries).
func TestMonitoringNamesExportedSeries(t *testing.T) {
	objs := renderMonitoring(t, monitoringValues)
	_, d, _ := renderedDashboard(t, objs)
	_, groups, _ := renderedRules(t, objs)
	series := hubSeries(t)

	vars := slices.Clone(grafanaVariables)
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name)
	}
	dash := promCheck{series: series, vars: vars}
	checked := 0
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		for _, p := range dash.labelValues(v.queryText()) {
			t.Errorf("dashboard variable %s: %s", v.Name, p)
		}
		checked++
	}
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			for _, prob := range dash.expr(tg.Expr) {
				t.Errorf("dashboard panel %q: %s\n\t%s", p.Title, prob, tg.Expr)
			}
			checked++
		}
	}
	rules := promCheck{series: series}
	for _, g := range groups {
		for _, r := range g.Rules {
			for _, prob := range rules.expr(r.Expr) {
				t.Errorf("alert %s: %s\n\t%s", r.Alert, prob, r.Expr)
			}
			checked++
		}
	}
	if checked < len(wantAlerts)+20 {
		t.Fatalf("checked only %d expressions", checked)
	}
	t.Logf("%d expressions checked against %d metric families of the hub", checked, len(series))
}

// TestPromCheckFinds: the checker of the test above finds each kind of
// mistake it is there for (and passes what is right), so that its silence
// means something.
func TestPromCheckFinds(t *testing.T) {
	series := map[string]family{
		"mcphub_tool_calls_total":           {typ: "counter", labels: set("server", "tool", "outcome")},
		"mcphub_tool_call_duration_seconds": {typ: "histogram", labels: set("server")},
		"mcphub_catalog_tools":              {typ: "gauge", labels: set()},
	}
	c := promCheck{series: series, vars: []string{"server", "__rate_interval"}}
	for _, ok := range []string{
		`sum by (server, outcome) (rate(mcphub_tool_calls_total{server=~"$server", outcome!="ok"}[$__rate_interval]))`,
		`histogram_quantile(0.95, sum by (le, server) (rate(mcphub_tool_call_duration_seconds_bucket{job="x"}[5m]))) > 2.5`,
		`sum without (tool) (mcphub_tool_calls_total) / ignoring (outcome) group_left sum(mcphub_tool_call_duration_seconds_count)`,
		`(count(up{job="hub", namespace="purko"} == 1) or vector(0)) < 2 # a comment naming no_such_metric`,
		`max by (pod) (mcphub_catalog_tools{namespace=~"${server:regex}"} offset 5m) and on (pod) mcphub_catalog_tools > bool 0`,
	} {
		if probs := c.expr(ok); len(probs) > 0 {
			t.Errorf("%s: %v, want no problem", ok, probs)
		}
	}
	if probs := c.labelValues(`label_values(mcphub_tool_calls_total{job=~".*"}, server)`); len(probs) > 0 {
		t.Errorf("label_values: %v", probs)
	}
	for _, tc := range []struct{ expr, want string }{
		{`rate(mcphub_tool_call_total[5m])`, "mcphub_tool_call_total"},
		{`sum by (server) (rate(mcphub_tool_calls_total{srever="x"}[5m]))`, "srever"},
		{`sum by (srever) (rate(mcphub_tool_calls_total[5m]))`, "srever"},
		{`histogram_quantile(0.9, sum by (le, tool) (rate(mcphub_tool_call_duration_seconds_bucket[5m])))`, "tool"},
		{`rate(mcphub_tool_calls_total_bucket[5m])`, "mcphub_tool_calls_total_bucket"},
		{`mcphub_catalog_tools{quantile="0.5"}`, "quantile"},
		{`rte(mcphub_tool_calls_total[5m])`, "rte"},
		{`sum(rate(mcphub_tool_calls_total{server=~"$srv"}[5m]))`, "$srv"},
		{`{__name__="mcphub_catalog_tools"}`, "metric name"},
		{`sum(rate(mcphub_tool_calls_total[5m])`, "unbalanced"},
		{`mcphub_catalog_tools{server="a}`, "unterminated"},
	} {
		probs := c.expr(tc.expr)
		if !slices.ContainsFunc(probs, func(p string) bool { return strings.Contains(p, tc.want) }) {
			t.Errorf("%s: problems %v, want one naming %s", tc.expr, probs, tc.want)
		}
	}
	if probs := c.labelValues(`label_values(mcphub_tool_calls_total, srever)`); len(probs) == 0 {
		t.Error("label_values of an unknown label passed")
	}
}

// family is one metric family a hub exports: its type (from the exposition,
// "" when the test's hub exported no series of it) and its label names.
type family struct {
	typ    string
	labels map[string]bool
}

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// agentToken is the bearer token of hubSeries' only caller.
const agentToken = "monitoring-agent-token-0123456789"

// hubSeries runs a hub in-process with one upstream and a caller whose
// calls wait for a person's approval, makes one call that is held and
// expires, and returns every metric family the hub's registry describes,
// with its label names: counters nobody incremented and histograms nobody
// observed are in no /metrics body, so the registry's descriptors are the
// only complete list. The types come from the hub's /metrics: the call
// made every histogram of it observe (tool calls, requests, approval
// decisions), so each has its TYPE line there, and a _bucket of anything
// else is refused.
func hubSeries(t *testing.T) map[string]family {
	t.Helper()
	for _, v := range []string{"KUBECONFIG", "KUBERNETES_SERVICE_HOST", "MCP_SERVERS"} {
		t.Setenv(v, "") // no cluster, no servers but the test's
	}
	t.Setenv("MONITORING_AGENT_TOKEN", agentToken)
	up := hubtest.StartOutcomeStreamable(t, "probe")
	// The hub reads servers from its config file only (a file source).
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, `builtins: {staticAnalysis: {enabled: false}, triggerWorkflow: {enabled: false}}
servers:
  - {name: probe, url: %q, transport: streamable-http, toolPolicy: {write: [%s]}}
auth:
  tokens:
    - {name: agent, token: {env: MONITORING_AGENT_TOKEN}, maxLevel: supervised, guardrails: {humanApprovalRequired: true}}
approvals: {timeout: 1s}
shutdownGrace: 1s
`, up.URL, up.Tool(hubtest.ToolOK)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	// The hub registers in a registry of the test's, which describes every
	// family, those no call touched included.
	reg := prometheus.NewRegistry()
	h, err := hub.New(ctx, cfg, hub.Options{ConfigPath: path, Listen: "127.0.0.1:0", StateDir: t.TempDir(), Version: "monitoring-test", Metrics: reg}, zerolog.Nop())
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		h.Close()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = h.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done; h.Close() })
	base := "http://" + ln.Addr().String()
	tool := up.Tool(hubtest.ToolOK)
	hubtest.Eventually(t, 30*time.Second, 20*time.Millisecond, "the upstream's tools in the catalog", func() error {
		for _, tl := range h.Catalog().Tools {
			if tl.Name == tool {
				return nil
			}
		}
		return fmt.Errorf("%d tools", len(h.Catalog().Tools))
	})

	// The call is held for approval, which nobody gives: it expires after
	// approvals.timeout, 1s.
	req, _ := http.NewRequest(http.MethodPost, base+"/api/mcp/tools/"+tool+"/run", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+agentToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Fatalf("the call ran (200 %s); it should have waited for an approval and expired", body)
	}

	types := scrapeTypes(t, base+"/metrics")
	ch := make(chan *prometheus.Desc)
	go func() { reg.Describe(ch); close(ch) }()
	var descs []*prometheus.Desc
	for d := range ch {
		descs = append(descs, d)
	}
	out := map[string]family{}
	for _, d := range descs {
		name, labels, err := parseDesc(d.String())
		if err != nil {
			t.Fatal(err)
		}
		out[name] = family{typ: types[name], labels: set(labels...)}
	}
	// The registry read is the one /metrics serves: every family there is
	// described in it.
	for name := range types {
		if _, ok := out[name]; !ok {
			t.Fatalf("/metrics has %s, which the registry read from the hub does not describe: not the registry /metrics serves", name)
		}
	}
	// The call observed these histograms: a call that went wrong is said
	// here, rather than as a _bucket refused by the checks.
	for _, name := range []string{"mcphub_tool_call_duration_seconds", "mcphub_request_duration_seconds", "mcphub_approval_decision_seconds"} {
		if out[name].typ != "histogram" {
			t.Fatalf("%s is %q on /metrics after an expired held call, want histogram", name, out[name].typ)
		}
	}
	return out
}

// descPattern reads a descriptor's String(): its name and variable labels
// (client_golang has no accessor for either).
var descPattern = regexp.MustCompile(`^Desc\{fqName: "([a-zA-Z_:][a-zA-Z0-9_:]*)", .*, constLabels: \{(.*)\}, variableLabels: \{([^}]*)\}\}$`)

func parseDesc(s string) (string, []string, error) {
	m := descPattern.FindStringSubmatch(s)
	if m == nil {
		return "", nil, fmt.Errorf("cannot read the descriptor %s", s)
	}
	var labels []string
	for _, l := range strings.Split(m[3], ",") {
		if l = strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"); l != "" {
			labels = append(labels, l)
		}
	}
	for _, pair := range strings.Split(m[2], ",") {
		if name, _, ok := strings.Cut(pair, "="); ok {
			labels = append(labels, name)
		}
	}
	return m[1], labels, nil
}

// scrapeTypes is the TYPE of each family in the text exposition at url.
func scrapeTypes(t *testing.T, url string) map[string]string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	types := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return types
}

// promCheck checks PromQL expressions against the series a hub exports.
// It reads PromQL with a tokenizer, not the Prometheus parser (a module
// far larger than the hub's own graph): a name followed by "(" must be a
// PromQL function or aggregation, a name in a by/without/on/ignoring/
// group_left/group_right list a label, a name before "{" or standing alone
// a metric, and the names before the operators of a "{...}" the labels it
// matches on. Grafana's variables ($name, ${name}, ${name:format}) may
// stand anywhere and must be defined.
type promCheck struct {
	series map[string]family
	vars   []string
}

type token struct {
	kind byte // 'n' name, 's' string, '0' number or duration, 'v' variable, 'p' punctuation
	text string
}

// lexPromQL splits expr into tokens, or says why it cannot.
func lexPromQL(expr string) ([]token, error) {
	var out []token
	isNameStart := func(c byte) bool { return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isName := func(c byte) bool { return isNameStart(c) || c >= '0' && c <= '9' }
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#':
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case isNameStart(c):
			j := i
			for j < len(expr) && isName(expr[j]) {
				j++
			}
			out = append(out, token{'n', expr[i:j]})
			i = j
		case c >= '0' && c <= '9' || c == '.':
			j := i
			for j < len(expr) && (isName(expr[j]) || expr[j] == '.' || (expr[j] == '+' || expr[j] == '-') && (expr[j-1] == 'e' || expr[j-1] == 'E')) {
				j++
			}
			out = append(out, token{'0', expr[i:j]})
			i = j
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(expr) && expr[j] != c {
				if expr[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j >= len(expr) {
				return nil, fmt.Errorf("unterminated string at %d", i)
			}
			out = append(out, token{'s', expr[i+1 : j]})
			i = j + 1
		case c == '$':
			j := i + 1
			if j < len(expr) && expr[j] == '{' {
				k := strings.IndexByte(expr[j:], '}')
				if k < 0 {
					return nil, fmt.Errorf("unterminated ${ at %d", i)
				}
				name, _, _ := strings.Cut(expr[j+1:j+k], ":")
				out = append(out, token{'v', name})
				i = j + k + 1
				continue
			}
			for j < len(expr) && isName(expr[j]) {
				j++
			}
			out = append(out, token{'v', expr[i+1 : j]})
			i = j
		default:
			if i+1 < len(expr) && slices.Contains([]string{"==", "!=", "=~", "!~", "<=", ">="}, expr[i:i+2]) {
				out = append(out, token{'p', expr[i : i+2]})
				i += 2
				continue
			}
			if !strings.ContainsRune("(){}[],=<>+-*/%^@:", rune(c)) {
				return nil, fmt.Errorf("unexpected %q at %d", c, i)
			}
			out = append(out, token{'p', string(c)})
			i++
		}
	}
	return out, nil
}

// promFunctions are PromQL's functions and aggregation operators.
var promFunctions = set("abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh",
	"avg_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh", "count_over_time",
	"day_of_month", "day_of_week", "day_of_year", "days_in_month", "deg", "delta", "deriv", "exp", "floor",
	"histogram_avg", "histogram_count", "histogram_fraction", "histogram_quantile", "histogram_stddev",
	"histogram_stdvar", "histogram_sum", "holt_winters", "double_exponential_smoothing", "hour", "idelta",
	"increase", "irate", "label_join", "label_replace", "last_over_time", "ln", "log10", "log2",
	"mad_over_time", "max_over_time", "min_over_time", "minute", "month", "pi", "predict_linear",
	"present_over_time", "quantile_over_time", "rad", "rate", "resets", "round", "scalar", "sgn", "sin",
	"sinh", "sort", "sort_by_label", "sort_by_label_desc", "sort_desc", "sqrt", "stddev_over_time",
	"stdvar_over_time", "sum_over_time", "tan", "tanh", "time", "timestamp", "vector", "year",
	// aggregations
	"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk",
	"quantile", "limitk", "limit_ratio",
	// @ modifiers
	"start", "end")

// promKeywords are PromQL's words that are neither metrics nor functions.
var promKeywords = set("and", "or", "unless", "bool", "offset", "atan2", "inf", "nan", "Inf", "NaN",
	"group_left", "group_right", "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
	"count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio")

// promGrouping are the words followed by a list of labels.
var promGrouping = set("by", "without", "on", "ignoring", "group_left", "group_right")

// selector is one metric a PromQL expression names, with the labels its
// matchers name.
type selector struct {
	metric string
	labels []string
}

// parse reads the metrics, matcher labels and grouping labels of expr.
func (c promCheck) parse(expr string) (sels []selector, grouping []string, problems []string) {
	toks, err := lexPromQL(expr)
	if err != nil {
		return nil, nil, []string{err.Error()}
	}
	depth := map[string]int{}
	next := func(i int) token {
		if i+1 < len(toks) {
			return toks[i+1]
		}
		return token{}
	}
	for i := 0; i < len(toks); i++ {
		tk := toks[i]
		switch tk.kind {
		case 'v':
			if !slices.Contains(c.vars, tk.text) {
				problems = append(problems, fmt.Sprintf("Grafana variable $%s is not defined", tk.text))
			}
		case 's':
			problems = append(problems, c.stringVars(tk.text)...)
		case 'p':
			switch tk.text {
			case "(", ")", "[", "]":
				open := map[string]string{")": "(", "]": "["}
				if o, closing := open[tk.text]; closing {
					depth[o]--
					if depth[o] < 0 {
						problems = append(problems, "unbalanced "+tk.text)
					}
				} else {
					depth[tk.text]++
				}
				if tk.text == "[" {
					// A range or subquery: durations and variables only.
					for i+1 < len(toks) && toks[i+1].text != "]" {
						i++
						if toks[i].kind == 'v' && !slices.Contains(c.vars, toks[i].text) {
							problems = append(problems, fmt.Sprintf("Grafana variable $%s is not defined", toks[i].text))
						}
					}
				}
			case "{":
				problems = append(problems, "a selector without a metric name: name the metric before {")
				i = skipBraces(toks, i)
			}
		case 'n':
			nx := next(i)
			switch {
			case promGrouping[tk.text] && nx.text == "(":
				i += 2
				for ; i < len(toks) && toks[i].text != ")"; i++ {
					if toks[i].kind == 'n' {
						grouping = append(grouping, toks[i].text)
					} else if toks[i].text != "," {
						problems = append(problems, fmt.Sprintf("%q in the label list of %s", toks[i].text, tk.text))
					}
				}
			case nx.text == "(":
				if !promFunctions[tk.text] {
					problems = append(problems, fmt.Sprintf("%s is not a PromQL function", tk.text))
				}
			case promKeywords[tk.text] || promGrouping[tk.text]:
			default:
				sel := selector{metric: tk.text}
				if nx.text == "{" {
					end := skipBraces(toks, i+1)
					for j := i + 2; j < end; j++ {
						if toks[j].kind == 'n' && j+1 < end && slices.Contains([]string{"=", "!=", "=~", "!~"}, toks[j+1].text) {
							sel.labels = append(sel.labels, toks[j].text)
						}
					}
					for j := i + 2; j < end; j++ {
						if toks[j].kind == 's' {
							problems = append(problems, c.stringVars(toks[j].text)...)
						}
					}
					if end >= len(toks) {
						problems = append(problems, "unbalanced {")
					}
					i = end
				}
				sels = append(sels, sel)
			}
		}
	}
	for o, n := range depth {
		if n != 0 {
			problems = append(problems, "unbalanced "+o)
		}
	}
	return sels, grouping, problems
}

// stringVar is a Grafana variable in a PromQL string ("$server",
// "${server:regex}").
var stringVar = regexp.MustCompile(`\$\{?([a-zA-Z_][a-zA-Z0-9_]*)`)

// stringVars are the problems of the variables in a PromQL string.
func (c promCheck) stringVars(s string) []string {
	var problems []string
	for _, m := range stringVar.FindAllStringSubmatch(s, -1) {
		if !slices.Contains(c.vars, m[1]) {
			problems = append(problems, fmt.Sprintf("Grafana variable $%s is not defined", m[1]))
		}
	}
	return problems
}

// skipBraces is the index of the "}" closing the "{" at i (len(toks) when
// none does).
func skipBraces(toks []token, i int) int {
	for j := i + 1; j < len(toks); j++ {
		if toks[j].text == "}" {
			return j
		}
	}
	return len(toks)
}

// labelsOf are the labels a series of metric carries, and whether the hub
// exports it: a family, one of a histogram's _bucket (with le), _sum and
// _count, or of a summary's _sum and _count, or Prometheus's own up.
func (c promCheck) labelsOf(metric string) (map[string]bool, bool) {
	labels := set(targetLabels...)
	add := func(f family, extra ...string) map[string]bool {
		for l := range f.labels {
			labels[l] = true
		}
		for _, l := range extra {
			labels[l] = true
		}
		return labels
	}
	if metric == "up" {
		return labels, true
	}
	if f, ok := c.series[metric]; ok {
		if f.typ == "summary" {
			return add(f, "quantile"), true
		}
		return add(f), true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(metric, suffix)
		if !ok {
			continue
		}
		f, ok := c.series[base]
		switch {
		case ok && f.typ == "histogram" && suffix == "_bucket":
			return add(f, "le"), true
		case ok && (f.typ == "histogram" || f.typ == "summary") && suffix != "_bucket":
			return add(f), true
		}
	}
	return nil, false
}

// expr is what is wrong with expr: metrics the hub does not export, labels
// a matcher names that its metric lacks, grouping labels that none of the
// expression's metrics carries, unknown functions and variables.
func (c promCheck) expr(expr string) []string {
	sels, grouping, problems := c.parse(expr)
	known := map[string]bool{}
	var names []string
	unknown := false
	for _, s := range sels {
		names = append(names, s.metric)
		labels, ok := c.labelsOf(s.metric)
		if !ok {
			problems = append(problems, fmt.Sprintf("metric %s is not exported by the hub", s.metric))
			unknown = true
			continue
		}
		for _, l := range s.labels {
			if !labels[l] {
				problems = append(problems, fmt.Sprintf("metric %s has no label %s (it has %v)", s.metric, l, mapsKeys(labels)))
			}
		}
		for l := range labels {
			known[l] = true
		}
	}
	if len(sels) == 0 {
		problems = append(problems, "no metric named")
	}
	for _, l := range grouping {
		if !known[l] && !unknown { // an unknown metric's labels are unknown too: said once above
			problems = append(problems, fmt.Sprintf("grouping label %s is on none of the metrics %v", l, names))
		}
	}
	return problems
}

// labelValuesPattern reads Grafana's label_values(selector, label).
var labelValuesPattern = regexp.MustCompile(`^\s*label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$`)

// labelValues is what is wrong with a variable's label_values query: its
// selector, checked as an expression, must name one metric, which must
// carry the label.
func (c promCheck) labelValues(query string) []string {
	m := labelValuesPattern.FindStringSubmatch(query)
	if m == nil {
		return []string{fmt.Sprintf("%q is not label_values(selector, label)", query)}
	}
	problems := c.expr(m[1])
	sels, _, _ := c.parse(m[1])
	if len(sels) != 1 {
		return append(problems, fmt.Sprintf("label_values of %d metrics, want one", len(sels)))
	}
	if labels, ok := c.labelsOf(sels[0].metric); ok && !labels[m[2]] {
		problems = append(problems, fmt.Sprintf("metric %s has no label %s", sels[0].metric, m[2]))
	}
	return problems
}
