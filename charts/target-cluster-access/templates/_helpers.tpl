{{/*
Helpers for target-cluster-access. Every template includes
"target-cluster-access.validate" first, so a bad value fails the render with
the chart's own message whichever template Helm happens to render first.
*/}}

{{/* The chart name, used in the app.kubernetes.io/name label. */}}
{{- define "target-cluster-access.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The name of the Roles, RoleBindings, ClusterRole and ClusterRoleBinding: the
release name when it already contains the chart name, otherwise
"<release>-target-cluster-access". Kept to 63 characters because label values
and many names are limited to that.
*/}}
{{- define "target-cluster-access.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* Chart name and version for the helm.sh/chart label. */}}
{{- define "target-cluster-access.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels every object of the release carries. */}}
{{- define "target-cluster-access.labels" -}}
app.kubernetes.io/name: {{ include "target-cluster-access.name" . }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
helm.sh/chart: {{ include "target-cluster-access.chart" . }}
{{- end }}

{{/* The ServiceAccount Anvil authenticates as. */}}
{{- define "target-cluster-access.serviceAccountName" -}}
{{- .Values.serviceAccount.name }}
{{- end }}

{{/*
"true" when the namespace in .ns is listed in privilegedNamespaces, else
empty. Called with (dict "ns" <name> "root" $).
*/}}
{{- define "target-cluster-access.isPrivileged" -}}
{{- $privileged := list }}
{{- range (.root.Values.privilegedNamespaces | default list) }}
{{- $privileged = append $privileged (toString .) }}
{{- end }}
{{- if has (toString .ns) $privileged }}true{{ end }}
{{- end }}

{{/*
Validation of every value. It renders nothing and calls fail on the first
problem, naming the value and, for list entries, the entry.
*/}}
{{- define "target-cluster-access.validate" -}}
{{- $label := "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" }}
{{- $subdomain := "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$" }}

{{- /* namespaces: a non-empty list of distinct DNS-1123 labels. */}}
{{- $namespaces := .Values.namespaces }}
{{- if empty $namespaces }}
{{- fail "values.namespaces must name at least one namespace: list the namespaces Anvil may work in on this cluster, e.g. --set 'namespaces={openstack}'. Use the same list as the registration Secret's \"namespaces\" key (anvil cluster register --namespaces), because the operator only looks at the namespaces the Secret names." }}
{{- end }}
{{- if not (kindIs "slice" $namespaces) }}
{{- fail (printf "values.namespaces must be a list, e.g. --set 'namespaces={openstack}', not %q" (toString $namespaces)) }}
{{- end }}
{{- $names := list }}
{{- range $namespaces }}
{{- $ns := toString . }}
{{- if or (gt (len $ns) 63) (not (regexMatch $label $ns)) }}
{{- fail (printf "values.namespaces: %q is not a valid namespace name; it must be a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)" $ns) }}
{{- end }}
{{- if has $ns $names }}
{{- fail (printf "values.namespaces lists %q more than once" $ns) }}
{{- end }}
{{- $names = append $names $ns }}
{{- end }}

{{- /* createNamespaces and hypervisorTraits are booleans. */}}
{{- if not (kindIs "bool" .Values.createNamespaces) }}
{{- fail (printf "values.createNamespaces must be true or false, not %q" (toString .Values.createNamespaces)) }}
{{- end }}
{{- if not (kindIs "bool" .Values.hypervisorTraits) }}
{{- fail (printf "values.hypervisorTraits must be true or false, not %q" (toString .Values.hypervisorTraits)) }}
{{- end }}

{{- /*
A Namespace object for the release namespace would collide with the
namespace Helm installs into, which already exists and which Helm does not
adopt.
*/}}
{{- if and .Values.createNamespaces (has .Release.Namespace $names) }}
{{- fail (printf "values.namespaces contains the release namespace %q while createNamespaces is true; install the chart into a namespace of its own that is not in the list (e.g. c5c3-access), or set createNamespaces=false" .Release.Namespace) }}
{{- end }}

{{- /* privilegedNamespaces: a subset of namespaces, only with createNamespaces. */}}
{{- $privileged := .Values.privilegedNamespaces | default list }}
{{- if not (kindIs "slice" $privileged) }}
{{- fail (printf "values.privilegedNamespaces must be a list, e.g. --set 'privilegedNamespaces={openstack}', not %q" (toString $privileged)) }}
{{- end }}
{{- range $privileged }}
{{- if not (has (toString .) $names) }}
{{- fail (printf "values.privilegedNamespaces: %q is not listed in values.namespaces; every privileged namespace must also be one Anvil may work in" (toString .)) }}
{{- end }}
{{- end }}
{{- if and $privileged (not .Values.createNamespaces) }}
{{- fail "values.privilegedNamespaces requires createNamespaces=true: the chart can only set the pod-security label on Namespaces it renders. Set createNamespaces=true, or leave privilegedNamespaces empty." }}
{{- end }}

{{- /* serviceAccount.name: a valid object name. */}}
{{- $sa := toString .Values.serviceAccount.name }}
{{- if or (not .Values.serviceAccount.name) (gt (len $sa) 253) (not (regexMatch $subdomain $sa)) }}
{{- fail (printf "values.serviceAccount.name: %q is not a valid name; it must be a DNS-1123 subdomain of at most 253 characters" $sa) }}
{{- end }}
{{- end }}
