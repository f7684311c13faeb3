{{- /*
Written by hand: what only a chart has. The templates beside it that mirror manifests/ are
generated (webhook/manifests/chart.py); every object's names are manifests/' own, so one
release per cluster (the webhook configuration and the ClusterRole are cluster-wide).
*/ -}}

{{/* The chart's labels on every object, then commonLabels (never in a selector). */}}
{{- define "feedbackstore-webhook.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- range $component := list "webhook" "statusWriter" }}
{{- $budget := get $.Values $component | dig "podDisruptionBudget" dict }}
{{- if and (get $budget "minAvailable") (get $budget "maxUnavailable") }}
{{- fail (printf "%s.podDisruptionBudget has both minAvailable and maxUnavailable (Helm merges your values into the defaults): set the one you do not want to null" $component) }}
{{- end }}
{{- end }}
{{- end }}

{{/* repository:tag, or repository@digest when a digest is given. */}}
{{- define "feedbackstore-webhook.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{/* Refuse values that cannot make a working install, with what to do. */}}
{{- define "feedbackstore-webhook.checks" -}}
{{- if not (has .Values.admission.mode (list "webhook" "policy" "both")) }}
{{- fail (printf "admission.mode %q: use webhook, policy or both" .Values.admission.mode) }}
{{- end }}
{{- if not (has .Values.tls.source (list "existingSecret" "values" "certManager")) }}
{{- fail (printf "tls.source %q: use existingSecret, values or certManager" .Values.tls.source) }}
{{- end }}
{{- if and (eq .Values.tls.source "existingSecret") (not .Values.tls.existingSecret) }}
{{- fail "tls.source existingSecret needs tls.existingSecret, the name of your kubernetes.io/tls Secret in the release's namespace" }}
{{- end }}
{{- if and (eq .Values.tls.source "values") (not (and .Values.tls.certificate .Values.tls.key .Values.tls.caBundle)) }}
{{- fail "tls.source values needs tls.certificate, tls.key and tls.caBundle (PEM): --set-file tls.certificate=certs/tls.crt,tls.key=certs/tls.key,tls.caBundle=certs/ca.crt" }}
{{- end }}
{{- range $component := list "webhook" "statusWriter" }}
{{- $budget := get $.Values $component | dig "podDisruptionBudget" dict }}
{{- if and (get $budget "minAvailable") (get $budget "maxUnavailable") }}
{{- fail (printf "%s.podDisruptionBudget has both minAvailable and maxUnavailable (Helm merges your values into the defaults): set the one you do not want to null" $component) }}
{{- end }}
{{- end }}
{{- end }}
