{{/* Chart name, truncated to the 63 characters of a DNS label. */}}
{{- define "mcp-hub.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name: release-chart, or the release name when it already contains the chart name. */}}
{{- define "mcp-hub.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "mcp-hub.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "mcp-hub.labels" -}}
helm.sh/chart: {{ include "mcp-hub.chart" . }}
{{ include "mcp-hub.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: purko
{{- end }}

{{- define "mcp-hub.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mcp-hub.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "mcp-hub.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "mcp-hub.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "mcp-hub.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The tokens Secret to mount, or "" for none. */}}
{{- define "mcp-hub.tokensSecret" -}}
{{- if .Values.tokens.existingSecret }}
{{- .Values.tokens.existingSecret }}
{{- else if .Values.tokens.create }}
{{- printf "%s-tokens" (include "mcp-hub.fullname" .) }}
{{- end }}
{{- end }}

{{/* Namespaces the hub watches when not watching all of them: a comma list. */}}
{{- define "mcp-hub.watchNamespaces" -}}
{{- if .Values.watch.namespaces }}
{{- .Values.watch.namespaces | uniq | join "," }}
{{- else }}
{{- .Release.Namespace }}
{{- end }}
{{- end }}

{{/* "true" when callers may authenticate with their pod's ServiceAccount token (auth.serviceAccounts.enabled), else "". */}}
{{- define "mcp-hub.serviceAccountAuth" -}}
{{- if dig "auth" "serviceAccounts" "enabled" false .Values.AsMap }}true{{ end }}
{{- end }}

{{/*
What the hub reads and writes in a watched namespace, and nothing more:
MCPServer resources and their status, the `mcp-servers` ConfigMap, the Secrets
holding bearer tokens they reference, Agents (their api tools, and the autonomy
of ServiceAccount callers), and Events about them. With
auth.serviceAccounts.enabled also the pod a caller's token is bound to (get
only: no list, no watch).
*/}}
{{- define "mcp-hub.rbacRules" -}}
- apiGroups: ["purko.io"]
  resources: ["mcpservers"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["purko.io"]
  resources: ["mcpservers/status"]
  verbs: ["get", "patch"]
- apiGroups: ["purko.io"]
  resources: ["agents"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["configmaps", "secrets"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- if include "mcp-hub.serviceAccountAuth" . }}
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get"]
{{- end }}
{{- end }}
