{{/* Full name prefix of every object. */}}
{{- define "inferrail.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "inferrail.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ default .Chart.Name .Values.nameOverride }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component: include "inferrail.selector" (list . "balancer"). */}}
{{- define "inferrail.selector" -}}
{{- $ctx := index . 0 -}}
app.kubernetes.io/name: {{ default $ctx.Chart.Name $ctx.Values.nameOverride }}
app.kubernetes.io/instance: {{ $ctx.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "inferrail.image" -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end -}}

{{- define "inferrail.gossipSecret" -}}
{{- default (printf "%s-gossip" (include "inferrail.fullname" .)) .Values.gossip.existingSecret -}}
{{- end -}}

{{/* The gossip seeds: the headless Service of the balancers. */}}
{{- define "inferrail.gossipSeed" -}}
{{ include "inferrail.fullname" . }}-gossip.{{ .Release.Namespace }}.svc.cluster.local:{{ .Values.gossip.port }}
{{- end -}}

{{/* The gossip key: the value, else the one in the existing Secret, else a new one. */}}
{{- define "inferrail.gossipKey" -}}
{{- if .Values.gossip.key -}}
{{- .Values.gossip.key -}}
{{- else -}}
{{- $s := lookup "v1" "Secret" .Release.Namespace (include "inferrail.gossipSecret" .) -}}
{{- if and $s $s.data (index $s.data "gossip.key") -}}
{{- index $s.data "gossip.key" | b64dec -}}
{{- else -}}
{{- randBytes 32 -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The fields every webhook of the MutatingWebhookConfiguration shares. */}}
{{- define "inferrail.webhookCommon" -}}
{{- $ctx := .ctx -}}
admissionReviewVersions: [v1]
sideEffects: None
failurePolicy: {{ $ctx.Values.webhook.failurePolicy }}
timeoutSeconds: {{ $ctx.Values.webhook.timeoutSeconds }}
reinvocationPolicy: IfNeeded
matchPolicy: Equivalent
clientConfig:
  service:
    name: {{ .svc }}
    namespace: {{ $ctx.Release.Namespace }}
    path: {{ .path }}
    port: 443
  {{- if .caBundle }}
  caBundle: {{ .caBundle }}
  {{- end }}
rules:
  - operations: [CREATE]
    apiGroups: [""]
    apiVersions: [v1]
    resources: [pods]
    scope: Namespaced
{{- end -}}

{{/* The Secret of the balancers' API keys, "" for none. */}}
{{- define "inferrail.apiKeysSecret" -}}
{{- if .Values.balancer.apiKeysSecret -}}
{{- .Values.balancer.apiKeysSecret -}}
{{- else if .Values.balancer.apiKeys -}}
{{- printf "%s-api-keys" (include "inferrail.fullname" .) -}}
{{- end -}}
{{- end -}}
