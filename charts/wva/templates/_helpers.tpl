{{/*
The chart's name: nameOverride or `wva`.
*/}}
{{- define "wva.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name every object is named after: fullnameOverride, else the
release name when it contains the chart's name (the documented release `wva`
gives `wva`), else `<release>-<name>`. Truncated to 63 characters (a label
value).
*/}}
{{- define "wva.fullname" -}}
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

{{/*
A name made of the full name and a suffix, within 63 characters (a Service
name is a DNS label): (list $ "controller").
*/}}
{{- define "wva.named" -}}
{{- printf "%s-%s" (include "wva.fullname" (index . 0)) (index . 1) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "wva.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of every object.
*/}}
{{- define "wva.labels" -}}
helm.sh/chart: {{ include "wva.chart" . }}
app.kubernetes.io/name: {{ include "wva.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: workload-variant-autoscaler
{{- end }}

{{/*
Labels that select the controller's pods. Kept from the chart's first
release (a Deployment's selector cannot change, so `helm upgrade` works);
the release's instance label tells two releases apart.
*/}}
{{- define "wva.selectorLabels" -}}
control-plane: controller-manager
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
The controller's Deployment (and its default service account).
*/}}
{{- define "wva.controllerName" -}}
{{- include "wva.named" (list . "controller") }}
{{- end }}

{{/*
The service account the controller runs as.
*/}}
{{- define "wva.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "wva.controllerName" .) .Values.serviceAccount.name }}
{{- else if .Values.serviceAccount.name }}
{{- .Values.serviceAccount.name }}
{{- else }}
{{- fail "serviceAccount.create=false needs serviceAccount.name: the service account the chart binds its roles to" }}
{{- end }}
{{- end }}

{{/*
The ConfigMaps the controller reads, by values key: the documented name
(docs/configuration.md) and the controller's flag. The release whose full
name is `wva` uses the documented names, so VariantAutoscalings'
sloClassRef and the docs apply unchanged; any other release prefixes them
with its full name (without a doubled `wva-`), so two releases in one
namespace do not share them.
*/}}
{{- define "wva.configMapTable" -}}
main: {doc: variantautoscaling-config, flag: config-map}
accelerators: {doc: accelerator-unit-costs, flag: accelerators-config-map}
serviceClasses: {doc: service-classes-config, flag: service-classes-config-map}
saturation: {doc: wva-saturation-scaling-config, flag: saturation-config-map}
queueingModel: {doc: wva-queueing-model-config, flag: queueing-model-config-map}
tuner: {doc: tuner-config, flag: tuner-config-map}
inventory: {doc: wva-accelerator-inventory, flag: inventory-config-map}
tunerState: {doc: wva-tuner-state, flag: tuner-state-config-map}
{{- end }}

{{/*
The name of a ConfigMap: (list $ "serviceClasses").
*/}}
{{- define "wva.configMapName" -}}
{{- $ctx := index . 0 }}
{{- $key := index . 1 }}
{{- $doc := (get (include "wva.configMapTable" $ctx | fromYaml) $key).doc }}
{{- $v := $ctx.Values.config }}
{{- if ne $key "main" }}
{{- $v = index $ctx.Values.configMaps $key }}
{{- end }}
{{- if $v.name }}
{{- $v.name }}
{{- else if eq (include "wva.fullname" $ctx) "wva" }}
{{- $doc }}
{{- else }}
{{- printf "%s-%s" (include "wva.fullname" $ctx) (trimPrefix "wva-" $doc) }}
{{- end }}
{{- end }}

{{/*
A ConfigMap's data: each value as a string, an object as JSON (the
ConfigMaps take JSON or YAML objects).
*/}}
{{- define "wva.configMapData" -}}
{{- range $k, $v := . }}
{{ $k }}: {{ if kindIs "map" $v }}{{ toJson $v | quote }}{{ else }}{{ toString $v | quote }}{{ end }}
{{- end }}
{{- end }}

{{/*
"true" when an `auto`/true/false value is on: auto asks whether the cluster
serves the API version and kind: (list $ .Values.serviceMonitor.enabled "monitoring.coreos.com/v1/ServiceMonitor").
*/}}
{{- define "wva.enabled" -}}
{{- $ctx := index . 0 }}
{{- $v := index . 1 }}
{{- if eq (toString $v) "auto" }}
{{- if $ctx.Capabilities.APIVersions.Has (index . 2) }}true{{ end }}
{{- else if $v }}true{{ end }}
{{- end }}

{{/*
Where the Prometheus CA bundle and token are mounted, and the files the
main ConfigMap names.
*/}}
{{- define "wva.prometheusCAFile" -}}
{{- $p := .Values.prometheus }}
{{- if and $p.ca.configMap $p.ca.secret }}
{{- fail "prometheus.ca: set configMap or secret, not both" }}
{{- end }}
{{- if or $p.ca.configMap $p.ca.secret }}
{{- if $p.caFile }}
{{- fail "prometheus.ca and prometheus.caFile: set one (ca mounts the bundle and sets the path itself)" }}
{{- end }}
{{- printf "/etc/wva/prometheus/ca/%s" $p.ca.key }}
{{- else }}
{{- $p.caFile }}
{{- end }}
{{- end }}

{{- define "wva.prometheusTokenFile" -}}
{{- $p := .Values.prometheus }}
{{- $mounted := 0 }}
{{- if $p.token.secret }}{{ $mounted = add1 $mounted }}{{ end }}
{{- if $p.token.serviceAccountToken.enabled }}{{ $mounted = add1 $mounted }}{{ end }}
{{- if $p.tokenFile }}{{ $mounted = add1 $mounted }}{{ end }}
{{- if gt $mounted 1 }}
{{- fail "prometheus: set one of token.secret, token.serviceAccountToken.enabled and tokenFile" }}
{{- end }}
{{- if or $p.token.secret $p.token.serviceAccountToken.enabled }}
{{- print "/etc/wva/prometheus/token/token" }}
{{- else }}
{{- $p.tokenFile }}
{{- end }}
{{- end }}

{{/*
The label that holds a variant's namespace once Prometheus has scraped the
controller: Prometheus renames the series' own `namespace` to
`exported_namespace` (the target's namespace wins) unless honorLabels.
*/}}
{{- define "wva.namespaceLabel" -}}
{{- if .Values.serviceMonitor.honorLabels }}namespace{{ else }}exported_namespace{{ end }}
{{- end }}

{{/*
An HPA behavior with its tolerance in both directions (none when empty):
(list $behavior $tolerance).
*/}}
{{- define "wva.behavior" -}}
{{- $b := deepCopy (index . 0) }}
{{- $tolerance := index . 1 }}
{{- if $tolerance }}
{{- range $dir := list "scaleUp" "scaleDown" }}
{{- if hasKey $b $dir }}
{{- $_ := set (index $b $dir) "tolerance" $tolerance }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml $b }}
{{- end }}

{{/*
Checks a variants entry (list $ $variant): its namespace is watched.
*/}}
{{- define "wva.checkVariant" -}}
{{- $ctx := index . 0 }}
{{- $v := index . 1 }}
{{- if and $ctx.Values.watchNamespaces (not (has $v.namespace $ctx.Values.watchNamespaces)) }}
{{- fail (printf "variants: %s/%s is in a namespace the controller does not watch (watchNamespaces %v)" $v.namespace $v.name $ctx.Values.watchNamespaces) }}
{{- end }}
{{- if and (hasKey $v "minReplicas") (gt (int $v.minReplicas) (int $v.maxReplicas)) }}
{{- fail (printf "variants: %s/%s has minReplicas %v above maxReplicas %v" $v.namespace $v.name $v.minReplicas $v.maxReplicas) }}
{{- end }}
{{- end }}
