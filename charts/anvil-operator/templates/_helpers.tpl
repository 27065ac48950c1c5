{{/*
Helpers for anvil-operator. values.schema.json checks the shape of every
value; "anvil-operator.validate" checks what a schema cannot, across values.
*/}}

{{/* The chart name, used in the app.kubernetes.io/name label. */}}
{{- define "anvil-operator.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The name of the release's objects: the release name when it already
contains the chart name, otherwise "<release>-anvil-operator", kept to 52
characters so that suffixes such as "-metrics-reader" still fit in 63.
*/}}
{{- define "anvil-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* Chart name and version for the helm.sh/chart label. */}}
{{- define "anvil-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels that select the operator's pods; they never change on upgrade. */}}
{{- define "anvil-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "anvil-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
{{- end }}

{{/* Labels every object of the release carries. */}}
{{- define "anvil-operator.labels" -}}
{{ include "anvil-operator.selectorLabels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ include "anvil-operator.chart" . }}
{{- end }}

{{/* The operator's ServiceAccount. */}}
{{- define "anvil-operator.serviceAccountName" -}}
{{- .Values.serviceAccount.name | default (include "anvil-operator.fullname" .) }}
{{- end }}

{{/* The RBAC subject every binding of the chart names. */}}
{{- define "anvil-operator.subject" -}}
- kind: ServiceAccount
  name: {{ include "anvil-operator.serviceAccountName" . }}
  namespace: {{ .Release.Namespace }}
{{- end }}

{{/* The webhook Service, and the name its certificate is issued for. */}}
{{- define "anvil-operator.webhookServiceName" -}}
{{- printf "%s-webhook" (include "anvil-operator.fullname" .) }}
{{- end }}

{{/*
The Secret that holds the webhook's tls.crt, tls.key and CA: cert-manager's
in certManager mode, the operator's in operator mode.
*/}}
{{- define "anvil-operator.webhookSecretName" -}}
{{- printf "%s-webhook-tls" (include "anvil-operator.fullname" .) }}
{{- end }}

{{/*
The names the webhook's serving certificate is issued for: the Service's,
which the apiserver dials, and any extra ones of operator mode.
*/}}
{{- define "anvil-operator.webhookHosts" -}}
{{- $service := include "anvil-operator.webhookServiceName" . }}
{{- $hosts := list (printf "%s.%s.svc" $service .Release.Namespace) (printf "%s.%s.svc.cluster.local" $service .Release.Namespace) }}
{{- if eq .Values.webhook.certificates.mode "operator" }}
{{- $hosts = concat $hosts .Values.webhook.certificates.operator.extraHosts }}
{{- end }}
{{- join "," $hosts }}
{{- end }}

{{/* The cert-manager Certificate of the webhook. */}}
{{- define "anvil-operator.webhookCertificateName" -}}
{{- printf "%s-webhook" (include "anvil-operator.fullname" .) }}
{{- end }}

{{/* The metrics Service, and the name its certificate is issued for. */}}
{{- define "anvil-operator.metricsServiceName" -}}
{{- printf "%s-metrics" (include "anvil-operator.fullname" .) }}
{{- end }}

{{/* The Secret cert-manager keeps the metrics certificate in. */}}
{{- define "anvil-operator.metricsSecretName" -}}
{{- printf "%s-metrics-tls" (include "anvil-operator.fullname" .) }}
{{- end }}

{{/*
"true" when cert-manager issues the metrics server's certificate: metrics
are served and the certificates come from cert-manager. In operator mode
the operator serves metrics with a self-signed certificate.
*/}}
{{- define "anvil-operator.metricsCertificate" -}}
{{- if and .Values.metrics.enabled (eq .Values.webhook.certificates.mode "certManager") }}true{{ end }}
{{- end }}

{{/*
"true" when the chart renders its own self-signed Issuer: cert-manager
issues a certificate (the webhook's or the metrics server's) and no issuer
is named.
*/}}
{{- define "anvil-operator.selfSignedIssuer" -}}
{{- $certs := .Values.webhook.certificates }}
{{- if and (eq $certs.mode "certManager") (not $certs.certManager.issuerRef) (or .Values.webhook.enabled .Values.metrics.enabled) }}true{{ end }}
{{- end }}

{{/* The issuerRef of the chart's Certificates, as YAML. */}}
{{- define "anvil-operator.issuerRef" -}}
{{- $issuer := .Values.webhook.certificates.certManager.issuerRef }}
{{- if not $issuer }}
{{- $issuer = dict "kind" "Issuer" "name" (printf "%s-selfsigned" (include "anvil-operator.fullname" .)) }}
{{- end }}
kind: {{ $issuer.kind | default "Issuer" }}
name: {{ $issuer.name }}
group: {{ $issuer.group | default "cert-manager.io" }}
{{- end }}

{{/* The image reference: by digest when one is set, else by tag. */}}
{{- define "anvil-operator.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository .Values.image.tag }}
{{- end }}
{{- end }}

{{/*
The RBAC rules generated from config/rbac/role.yaml, split by where they
are granted; see files/rbac-rules.yaml.
*/}}
{{- define "anvil-operator.generatedRules" -}}
{{- .Files.Get "files/rbac-rules.yaml" }}
{{- end }}

{{/*
Checks that span values, which values.schema.json cannot express. It
renders nothing and fails on the first problem, naming the value.
*/}}
{{- define "anvil-operator.validate" -}}
{{- if and .Values.clustersNamespace (has .Values.clustersNamespace .Values.watchNamespaces) }}
{{- fail (printf "values.clustersNamespace %q is also in values.watchNamespaces: the namespace of the registration Secrets must not hold workloads, because its Role may only read Secrets" .Values.clustersNamespace) }}
{{- end }}
{{- if and .Values.podDisruptionBudget.enabled (lt (int .Values.replicas) 2) (eq (toString .Values.podDisruptionBudget.maxUnavailable) "0") }}
{{- fail "values.podDisruptionBudget.maxUnavailable=0 with a single replica would block every node drain; raise replicas or maxUnavailable" }}
{{- end }}
{{- end }}
