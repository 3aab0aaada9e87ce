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
{{- /* Registering servers through POST /api/mcp/server (admin callers only): image entries become MCPServers; URL entries go into the mcp-servers ConfigMap, updated by name only (create cannot be limited by name). */}}
- apiGroups: ["purko.io"]
  resources: ["mcpservers"]
  verbs: ["create", "update", "delete"]
- apiGroups: [""]
  resources: ["configmaps"]
  resourceNames: ["mcp-servers"]
  verbs: ["update"]
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["create"]
- apiGroups: ["purko.io"]
  resources: ["agents"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list", "watch"]
{{- /* Secrets: every one of the namespace, or with rbac.secretNames only those (the hub then watches each with a field selector on its name, which RBAC allows for list and watch too). */}}
{{- with .Values.rbac.secretNames }}
- apiGroups: [""]
  resources: ["secrets"]
  resourceNames: {{ toJson . }}
  verbs: ["get", "list", "watch"]
{{- else }}
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "list", "watch"]
{{- end }}
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

{{/* The port the hub listens on in its container (--listen, containerPort, the peers Service). */}}
{{- define "mcp-hub.containerPort" -}}8080{{- end }}

{{/* "true" when more than one pod may run: replicaCount > 1, or an HPA owns the replica count. Gates the peers Service and replicas.peers in the config. */}}
{{- define "mcp-hub.multiReplica" -}}
{{- if or .Values.autoscaling.enabled (gt (int .Values.replicaCount) 1) }}true{{ end }}
{{- end }}

{{/*
The Secret holding replicas.secret, the key every replica seals task handles
with (docs/protocol.md "Tasks"), when the chart makes it: more than one pod may run and
config.replicas.secret is not set. Empty otherwise.
*/}}
{{- define "mcp-hub.replicasSecret" -}}
{{- $replicas := (.Values.config | default dict).replicas | default dict }}
{{- if and (include "mcp-hub.multiReplica" .) (not $replicas.secret) }}
{{- printf "%s-replicas" (include "mcp-hub.fullname" .) }}
{{- end }}
{{- end }}

{{/* "true" when a PodDisruptionBudget makes sense: at least two pods at all times (replicaCount, or autoscaling.minReplicas with an HPA). */}}
{{- define "mcp-hub.pdb" -}}
{{- if .Values.podDisruptionBudget.enabled }}
{{- $floor := ternary .Values.autoscaling.minReplicas .Values.replicaCount .Values.autoscaling.enabled }}
{{- if gt (int $floor) 1 }}true{{ end }}
{{- end }}
{{- end }}

{{/* The headless Service through which replicas find each other. */}}
{{- define "mcp-hub.peersService" -}}
{{- printf "%s-peers" (include "mcp-hub.fullname" . | trunc 57 | trimSuffix "-") }}
{{- end }}

{{/* host:port of the peers Service, for the hub's replicas.peers: it resolves to the ready pods' IPs, so the port is the container's. */}}
{{- define "mcp-hub.peersAddress" -}}
{{- printf "%s.%s.svc.%s:%s" (include "mcp-hub.peersService" .) .Release.Namespace .Values.clusterDomain (include "mcp-hub.containerPort" .) }}
{{- end }}

{{/*
The hub config file: .Values.config, plus replicas.peers (and replicas.secret
from the chart's Secret, unless set) when more than one pod may run, and replicas.instanceId. What the user set under config.replicas wins; config is copied, never
modified in place.
*/}}
{{- define "mcp-hub.config" -}}
{{- $config := deepCopy (.Values.config | default dict) }}
{{- if include "mcp-hub.multiReplica" . }}
{{- $replicas := dict "peers" (include "mcp-hub.peersAddress" .) }}
{{- if include "mcp-hub.replicasSecret" . }}
{{- $_ := set $replicas "secret" (dict "env" "MCP_HUB_REPLICAS_SECRET") }}
{{- end }}
{{- $_ := set $config "replicas" (merge (get $config "replicas" | default dict) $replicas) }}
{{- end }}
{{- /* One instance id for every replica (docs/operators.md "Registration loops"): the hub's own Service URL, registered on it, may land on another replica and is still the hub. */}}
{{- $instance := dict "instanceId" (printf "%s/%s" .Release.Namespace (include "mcp-hub.fullname" .)) }}
{{- $_ := set $config "replicas" (merge (get $config "replicas" | default dict) $instance) }}
{{- /* One Lease per release (docs/kubernetes.md "Status: one writer"): two releases in one namespace must not elect one writer between them. */}}
{{- if include "mcp-hub.leaderElection" . }}
{{- $kube := get $config "kubernetes" | default dict }}
{{- $election := merge (get $kube "leaderElection" | default dict) (dict "leaseName" (include "mcp-hub.leaseName" .)) }}
{{- $_ := set $kube "leaderElection" $election }}
{{- $_ := set $config "kubernetes" $kube }}
{{- end }}
{{- if .Values.userGrants.enabled }}
{{- $grants := dict "key" (dict "env" "MCP_HUB_GRANTS_KEY") "secret" .Values.userGrants.secret }}
{{- $_ := set $config "userGrants" (merge (get $config "userGrants" | default dict) $grants) }}
{{- end }}
{{- toYaml $config }}
{{- end }}

{{/*
Whether the replicas elect a status writer: config.kubernetes.leaderElection.enabled, true unless false.
*/}}
{{- define "mcp-hub.leaderElection" -}}
{{- if ne (((.Values.config).kubernetes).leaderElection).enabled false }}true{{ end }}
{{- end }}

{{/*
The leader election's Lease: config.kubernetes.leaderElection.leaseName, else the release's full name.
*/}}
{{- define "mcp-hub.leaseName" -}}
{{- (((.Values.config).kubernetes).leaderElection).leaseName | default (include "mcp-hub.fullname" .) }}
{{- end }}
