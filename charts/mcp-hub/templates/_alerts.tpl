{{/*
The label matchers that pick this release's series in the alerting rules:
prometheusRule.selector, or by default the job the ServiceMonitor gives them
(the main Service's name) in the release namespace.
*/}}
{{- define "mcp-hub.alertSelector" -}}
{{- .Values.prometheusRule.selector | default (printf "job=%q, namespace=%q" (include "mcp-hub.fullname" .) .Release.Namespace) }}
{{- end }}

{{/*
The pods that should be up: prometheusRule.rules.replicasMissing.minReplicas,
or the chart's own floor (autoscaling.minReplicas with an HPA, else
replicaCount).
*/}}
{{- define "mcp-hub.alertMinReplicas" -}}
{{- $min := int .Values.prometheusRule.rules.replicasMissing.minReplicas }}
{{- if eq $min 0 }}
{{- $min = int (ternary .Values.autoscaling.minReplicas .Values.replicaCount .Values.autoscaling.enabled) }}
{{- end }}
{{- $min }}
{{- end }}

{{/*
One alerting rule: the alert's name, expr, and its values block (for,
severity) under prometheusRule.rules; summary and description are
Prometheus templates ({{ $labels.server }}), hence the raw strings.
*/}}
{{- define "mcp-hub.alertRule" -}}
{{- $labels := merge (dict "severity" .rule.severity) (.root.Values.prometheusRule.alertLabels | default dict) }}
{{- $r := dict "alert" .alert "expr" .expr "labels" $labels "annotations" (dict "summary" .summary "description" .description) }}
{{- if and .rule.for (ne .rule.for "0s") (ne .rule.for "0m") }}
{{- $_ := set $r "for" .rule.for }}
{{- end }}
{{- toYaml (list $r) }}
{{- end }}

{{/*
The hub's alerting rules, one group, in the format of both a PrometheusRule's
spec.groups and a Prometheus rules file. Each rule is on unless its
prometheusRule.rules.<name>.enabled is false; its thresholds are there too.
Every metric and label they name is checked against what the hub exports
by charts/mcp-hub/monitoring_test.go.
*/}}
{{- define "mcp-hub.alertGroups" -}}
{{- $sel := include "mcp-hub.alertSelector" . }}
{{- $rules := .Values.prometheusRule.rules }}
{{- $out := list }}
{{- with $rules.targetDown }}{{ if .enabled }}
{{- $out = concat $out (include "mcp-hub.alertRule" (dict "root" $ "rule" . "alert" "McpHubTargetDown"
  "expr" (printf "up{%s} == 0" $sel)
  "summary" `mcp-hub pod {{ $labels.namespace }}/{{ $labels.pod }} cannot be scraped`
  "description" `Prometheus has failed to scrape {{ $labels.instance }} (job {{ $labels.job }}) for a while: the pod is down, not ready to serve /metrics, or unreachable.`) | fromYamlArray) }}
{{- end }}{{ end }}
{{- with $rules.replicasMissing }}{{ if .enabled }}
{{- $min := include "mcp-hub.alertMinReplicas" $ }}
{{- $out = concat $out (include "mcp-hub.alertRule" (dict "root" $ "rule" . "alert" "McpHubReplicasMissing"
  "expr" (printf "(count(up{%s} == 1) or vector(0)) < %s" $sel $min)
  "summary" (printf "Fewer than %s mcp-hub pods are up" $min)
  "description" (printf "Only {{ $value }} mcp-hub pods answer scrapes, fewer than the %s expected: callers lose capacity, and with none the hub is down." $min)) | fromYamlArray) }}
{{- end }}{{ end }}
{{- with $rules.upstreamDown }}{{ if .enabled }}
{{- $out = concat $out (include "mcp-hub.alertRule" (dict "root" $ "rule" . "alert" "McpHubUpstreamDown"
  "expr" (printf "min by (namespace, server) (mcphub_upstream_up{%s}) == 0" $sel)
  "summary" `Upstream MCP server {{ $labels.server }} is down`
  "description" `mcp-hub has not been connected to {{ $labels.server }} (namespace {{ $labels.namespace }}) on at least one replica: its tools are not callable there. GET /api/mcp/tools shows the server's error.`) | fromYamlArray) }}
{{- end }}{{ end }}
{{- with $rules.toolErrors }}{{ if .enabled }}
{{- $calls := printf "sum by (namespace, server) (rate(mcphub_tool_calls_total{%s}[5m]))" $sel }}
{{- $out = concat $out (include "mcp-hub.alertRule" (dict "root" $ "rule" . "alert" "McpHubToolErrorsHigh"
  "expr" (printf "(\n  sum by (namespace, server) (rate(mcphub_tool_calls_total{%s, outcome=~%q}[5m]))\n  /\n  %s\n) > %v\nand\n%s > %v" $sel .outcomes $calls .ratio $calls .minCallsPerSecond)
  "summary" `Tool calls of {{ $labels.server }} fail`
  "description" (printf "{{ $value | humanizePercentage }} of the tool calls of {{ $labels.server }} ended in %s over 5 minutes (threshold %v)." .outcomes .ratio)) | fromYamlArray) }}
{{- end }}{{ end }}
{{- with $rules.toolLatency }}{{ if .enabled }}
{{- $out = concat $out (include "mcp-hub.alertRule" (dict "root" $ "rule" . "alert" "McpHubToolLatencyHigh"
  "expr" (printf "histogram_quantile(0.95, sum by (namespace, server, le) (rate(mcphub_tool_call_duration_seconds_bucket{%s}[5m]))) > %v" $sel .p95Seconds)
  "summary" `Tool calls of {{ $labels.server }} are slow`
  "description" (printf "The 95th percentile of tool call latency through mcp-hub for {{ $labels.server }} is {{ $value | humanizeDuration }} (threshold %vs)." .p95Seconds)) | fromYamlArray) }}
{{- end }}{{ end }}
{{- with $rules.approvalsPending }}{{ if .enabled }}
{{- $out = concat $out (include "mcp-hub.alertRule" (dict "root" $ "rule" . "alert" "McpHubApprovalsPending"
  "expr" (printf "sum by (namespace) (mcphub_approvals_pending{%s}) > 0" $sel)
  "summary" `Tool calls have been waiting for approval for long`
  "description" (printf "{{ $value }} tool calls have been held for a person's approval (namespace {{ $labels.namespace }}) for more than %s: an approver should decide them in the console or at /api/mcp/approvals." (.for | default "a while"))) | fromYamlArray) }}
{{- end }}{{ end }}
{{- with $rules.approvalsExpired }}{{ if .enabled }}
{{- $out = concat $out (include "mcp-hub.alertRule" (dict "root" $ "rule" . "alert" "McpHubApprovalsExpired"
  "expr" (printf "sum by (namespace) (increase(mcphub_approval_decision_seconds_count{%s, verdict=\"expired\"}[1h])) > 0" $sel)
  "summary" `Held tool calls expire unapproved`
  "description" `{{ $value | humanize }} tool calls held for approval expired without a decision in the last hour (namespace {{ $labels.namespace }}): nobody is watching the approvals, or approvals.timeout is too short.`) | fromYamlArray) }}
{{- end }}{{ end }}
{{- with $rules.rateLimited }}{{ if .enabled }}
{{- $out = concat $out (include "mcp-hub.alertRule" (dict "root" $ "rule" . "alert" "McpHubRateLimited"
  "expr" (printf "sum by (namespace, limit, kind) (rate(mcphub_rate_limited_total{%s}[5m])) > %v" $sel .perSecond)
  "summary" `mcp-hub refuses many tool calls by its {{ $labels.limit }} {{ $labels.kind }} limit`
  "description" (printf "{{ $value | humanize }} tool calls per second are refused by a %s limit (%s), above %v/s: a caller loops, or the limits are too low for the load." `{{ $labels.limit }}` `{{ $labels.kind }}` .perSecond)) | fromYamlArray) }}
{{- end }}{{ end }}
{{- with $rules.toolsQuarantined }}{{ if .enabled }}
{{- $out = concat $out (include "mcp-hub.alertRule" (dict "root" $ "rule" . "alert" "McpHubToolsQuarantined"
  "expr" (printf "max by (namespace, server) (mcphub_pinning_quarantined_tools{%s}) > 0" $sel)
  "summary" `Tools of {{ $labels.server }} are quarantined`
  "description" `{{ $value }} tools of {{ $labels.server }} changed since they were pinned, or look like a prompt injection, and are held back until an admin approves them (mcp-hub pins, or the console).`) | fromYamlArray) }}
{{- end }}{{ end }}
{{- toYaml (list (dict "name" "mcp-hub" "rules" $out)) }}
{{- end }}
