{{/* Names and labels shared by every object. */}}
{{- define "appruntime.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "appruntime.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "appruntime.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "appruntime.image" -}}
{{- $img := .image -}}
{{- printf "%s:%s" $img.repository (default .root.Chart.AppVersion $img.tag) -}}
{{- end -}}

{{/* The env every container gets: secrets by reference, then plain settings. */}}
{{- define "appruntime.env" -}}
{{- $s := .Values.secrets -}}
{{- range $var, $ref := dict "DATABASE_URL" $s.databaseURL "REDIS_URL" $s.redisURL "SECRETS_KEY" $s.secretsKey "CONSOLE_SESSION_KEY" $s.consoleSessionKey "SESSION_KEYS" $s.sessionKeys "LLM_API_KEY" $s.llmAPIKey }}
{{- if $ref.name }}
- name: {{ $var }}
  valueFrom:
    secretKeyRef: {name: {{ $ref.name | quote }}, key: {{ $ref.key | quote }}}
{{- end }}
{{- end }}
- name: BLOB_DIR
  value: /var/lib/appruntime/blobs
- name: METRICS_ADDR
  value: {{ printf ":%v" .Values.metrics.port | quote }}
{{- range $k, $v := .Values.env }}
- name: {{ $k }}
  value: {{ $v | quote }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "appruntime.volumes" -}}
- name: blobs
{{- if .Values.blobs.existingClaim }}
  persistentVolumeClaim: {claimName: {{ .Values.blobs.existingClaim | quote }}}
{{- else }}
  emptyDir: {}
{{- end }}
- name: tmp
  emptyDir: {}
{{- end -}}

{{- define "appruntime.volumeMounts" -}}
- {name: blobs, mountPath: /var/lib/appruntime/blobs}
- {name: tmp, mountPath: /tmp}
{{- end -}}
