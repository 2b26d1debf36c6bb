{{/* The chart's name: app.kubernetes.io/name. */}}
{{- define "snug.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The prefix of every object's name: "snug" for a release named snug. */}}
{{- define "snug.fullname" -}}
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

{{- define "snug.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "snug.selectorLabels" -}}
app.kubernetes.io/name: {{ include "snug.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of every object; helm.sh/chart and managed-by only under Helm. */}}
{{- define "snug.labels" -}}
helm.sh/chart: {{ include "snug.chart" . }}
{{ include "snug.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: snug
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* agent */}}
{{- define "snug.agent.fullname" -}}
{{ include "snug.fullname" . }}-agent
{{- end }}

{{- define "snug.agent.labels" -}}
{{ include "snug.labels" . }}
app.kubernetes.io/component: agent
{{- end }}

{{- define "snug.agent.selectorLabels" -}}
{{ include "snug.selectorLabels" . }}
app.kubernetes.io/component: agent
{{- end }}

{{- define "snug.agent.serviceAccountName" -}}
{{- default (include "snug.agent.fullname" .) .Values.agent.serviceAccount.name }}
{{- end }}

{{/* controller */}}
{{- define "snug.controller.fullname" -}}
{{ include "snug.fullname" . }}-controller
{{- end }}

{{- define "snug.controller.labels" -}}
{{ include "snug.labels" . }}
app.kubernetes.io/component: controller
{{- end }}

{{- define "snug.controller.selectorLabels" -}}
{{ include "snug.selectorLabels" . }}
app.kubernetes.io/component: controller
{{- end }}

{{- define "snug.controller.serviceAccountName" -}}
{{- default (include "snug.controller.fullname" .) .Values.controller.serviceAccount.name }}
{{- end }}

{{/*
An image reference from a component's image block and the global image
overrides: (dict "image" .Values.agent.image "context" $).
*/}}
{{- define "snug.image" -}}
{{- $registry := .context.Values.image.registry | default .image.registry -}}
{{- $tag := .context.Values.image.tag | default .image.tag | default .context.Chart.AppVersion -}}
{{- if $registry -}}
{{- printf "%s/%s:%s" $registry .image.repository $tag -}}
{{- else -}}
{{- printf "%s:%s" .image.repository $tag -}}
{{- end -}}
{{- end }}

{{/* A value rendered as a template: a map or a string. */}}
{{- define "snug.render" -}}
{{- if typeIs "string" .value }}
{{- tpl .value .context }}
{{- else }}
{{- tpl (.value | toYaml) .context }}
{{- end }}
{{- end }}

{{/* The agent's port name: its one port serves HTTPS with tls.enabled. */}}
{{- define "snug.agent.portName" -}}
{{- ternary "https" "http" .Values.tls.enabled }}
{{- end }}

{{/* The --tls flags of both components, one per line. */}}
{{- define "snug.tlsArgs" -}}
{{- if .Values.tls.enabled }}
- --tls
{{- with .Values.tls.secretName }}
- --tls-cert-file=/etc/snug/tls/tls.crt
- --tls-private-key-file=/etc/snug/tls/tls.key
{{- end }}
{{- end }}
{{- end }}

{{/* What a scrape of an HTTPS endpoint needs by default. */}}
{{- define "snug.scrapeTLS" -}}
{{- if .Values.tls.enabled }}
scheme: https
{{- if not .Values.tls.secretName }}
tlsConfig:
  insecureSkipVerify: true
{{- end }}
{{- end }}
{{- end }}

{{/* admission: the webhook's Service, Secret and MutatingWebhookConfiguration names. */}}
{{- define "snug.admission.fullname" -}}
{{ include "snug.fullname" . }}-admission
{{- end }}

{{- define "snug.admission.secretName" -}}
{{ include "snug.fullname" . }}-admission-tls
{{- end }}

{{/* The webhook runs in the controller: both must be on. */}}
{{- define "snug.admission.enabled" -}}
{{- if and .Values.admission.enabled .Values.controller.enabled }}true{{- end }}
{{- end }}
