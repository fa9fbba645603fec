{{/* The chart name, or nameOverride. */}}
{{- define "pma.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name that prefixes every resource: fullnameOverride, else <release>-<chart>, with the usual shortcuts
that keep a name from repeating itself: the release name alone when it already holds the chart name, and the chart
name alone when it begins with the release name (release "platform": platform-management-api, not
platform-platform-management-api). Also the server's Service name. */}}
{{- define "pma.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else if hasPrefix (printf "%s-" .Release.Name) $name }}
{{- $name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* chart label value: name-version. */}}
{{- define "pma.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "pma.labels" -}}
helm.sh/chart: {{ include "pma.chart" . }}
app.kubernetes.io/name: {{ include "pma.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: {{ include "pma.name" . }}
{{- end }}

{{/* Selector labels of the server's pods (the component keeps them apart from etcd's). */}}
{{- define "pma.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pma.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: apiserver
{{- end }}

{{/* Selector labels of etcd's pods. */}}
{{- define "pma.etcd.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pma.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: etcd
{{- end }}

{{/* The ServiceAccount the server runs as. */}}
{{- define "pma.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "pma.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* "true" when image.repository names no registry (Docker's rule: the first path part holds a "." or ":" or is
localhost), so the nodes pull it from Docker Hub. */}}
{{- define "pma.image.noRegistry" -}}
{{- $parts := splitList "/" .Values.image.repository }}
{{- $first := first $parts }}
{{- if or (eq (len $parts) 1) (not (or (contains "." $first) (contains ":" $first) (eq $first "localhost"))) }}true{{ end }}
{{- end }}

{{/* The server's image reference. */}}
{{- define "pma.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* Names the server's certificate must carry: the ones the aggregator dials (<svc>.<ns>.svc) and the others. */}}
{{- define "pma.serviceDNSNames" -}}
{{- $svc := include "pma.fullname" . -}}
{{- $ns := .Release.Namespace -}}
{{- toJson (list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.%s" $svc $ns .Values.clusterDomain)) }}
{{- end }}

{{/* The Secret holding the serving certificate (tls.crt, tls.key; ca.crt when the chart or cert-manager makes it). */}}
{{- define "pma.tlsSecretName" -}}
{{- if eq .Values.tls.mode "existingSecret" }}
{{- .Values.tls.existingSecret.name }}
{{- else }}
{{- printf "%s-tls" (include "pma.fullname" .) }}
{{- end }}
{{- end }}

{{/* The cert-manager Certificate of the serving certificate (certManager mode). */}}
{{- define "pma.servingCertificateName" -}}
{{- printf "%s-serving" (include "pma.fullname" .) }}
{{- end }}

{{/*
A per-render cache shared by all templates (Helm renders every template with the same .Values map), so that a
certificate generated once is the same in the Secret, the APIService caBundle and the pods' checksum.
*/}}
{{- define "pma.cache" -}}
{{- if not (hasKey .Values "__pmaRenderCache") }}
{{- $_ := set .Values "__pmaRenderCache" dict }}
{{- end }}
{{- end }}

{{/*
Serving certificate of generate mode, as JSON {ca, crt, key} (PEM). Reused from the chart's own Secret when it
exists (lookup; empty under `helm template` and `--dry-run`), so upgrades keep the caBundle; made otherwise.
*/}}
{{- define "pma.generatedServingTLS" -}}
{{- include "pma.cache" . }}
{{- $cache := index .Values "__pmaRenderCache" }}
{{- if not (hasKey $cache "serving") }}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (include "pma.tlsSecretName" .) }}
{{- $data := dict }}
{{- if $existing }}{{ $data = $existing.data | default dict }}{{ end }}
{{- if and (index $data "ca.crt") (index $data "tls.crt") (index $data "tls.key") }}
{{- $_ := set $cache "serving" (dict "ca" (index $data "ca.crt" | b64dec) "crt" (index $data "tls.crt" | b64dec) "key" (index $data "tls.key" | b64dec)) }}
{{- else }}
{{- $days := int .Values.tls.validityDays }}
{{- $ca := genCA (printf "%s-ca" (include "pma.fullname" .)) $days }}
{{- $names := include "pma.serviceDNSNames" . | fromJsonArray }}
{{- $cert := genSignedCert (printf "%s.%s.svc" (include "pma.fullname" .) .Release.Namespace) nil $names $days $ca }}
{{- $_ := set $cache "serving" (dict "ca" $ca.Cert "crt" $cert.Cert "key" $cert.Key) }}
{{- end }}
{{- end }}
{{- toJson (index $cache "serving") }}
{{- end }}

{{/* Whether the chart runs etcd itself ("true") or the server uses etcd.external ("" ). */}}
{{- define "pma.etcd.internal" -}}
{{- if not .Values.etcd.external.endpoints }}true{{ end }}
{{- end }}

{{/* etcd StatefulSet name (also the prefix of its pods' names). */}}
{{- define "pma.etcd.fullname" -}}
{{- printf "%s-etcd" (include "pma.fullname" . | trunc 40 | trimSuffix "-") }}
{{- end }}

{{/* etcd's headless Service: gives each member the DNS name <member>.<headless>.<ns>.svc. */}}
{{- define "pma.etcd.headlessName" -}}
{{- printf "%s-headless" (include "pma.etcd.fullname" .) }}
{{- end }}

{{/* Secret of the etcd members' certificate (server and peer) and the etcd CA. */}}
{{- define "pma.etcd.serverSecretName" -}}
{{- printf "%s-server-tls" (include "pma.etcd.fullname" .) }}
{{- end }}

{{/* Secret of the API server's etcd client certificate: ca.crt, tls.crt, tls.key. */}}
{{- define "pma.etcd.clientSecretName" -}}
{{- if include "pma.etcd.internal" . }}
{{- printf "%s-client-tls" (include "pma.etcd.fullname" .) }}
{{- else }}
{{- .Values.etcd.external.secretName }}
{{- end }}
{{- end }}

{{/* Member names and their peer DNS names, as JSON [{name, host}]. */}}
{{- define "pma.etcd.members" -}}
{{- $members := list }}
{{- $etcd := include "pma.etcd.fullname" . }}
{{- $headless := include "pma.etcd.headlessName" . }}
{{- range $i := until (int .Values.etcd.replicas) }}
{{- $name := printf "%s-%d" $etcd $i }}
{{- $members = append $members (dict "name" $name "host" (printf "%s.%s.%s.svc" $name $headless $.Release.Namespace)) }}
{{- end }}
{{- toJson $members }}
{{- end }}

{{/* The --etcd-servers list: the chart's members, or etcd.external.endpoints. */}}
{{- define "pma.etcd.servers" -}}
{{- if include "pma.etcd.internal" . }}
{{- $urls := list }}
{{- range (include "pma.etcd.members" . | fromJsonArray) }}
{{- $urls = append $urls (printf "https://%s:2379" .host) }}
{{- end }}
{{- join "," $urls }}
{{- else }}
{{- join "," .Values.etcd.external.endpoints }}
{{- end }}
{{- end }}

{{/*
etcd certificates as JSON {ca, serverCrt, serverKey, clientCrt, clientKey} (PEM): one CA, one certificate for every
member (server and peer: genSignedCert gives both serverAuth and clientAuth) naming each member and, with
wildcards, any member of the headless Service, and the API server's client certificate. Reused from the two Secrets
when both exist, so an upgrade never gives members certificates from a different CA one by one.
*/}}
{{- define "pma.etcd.generatedTLS" -}}
{{- include "pma.cache" . }}
{{- $cache := index .Values "__pmaRenderCache" }}
{{- if not (hasKey $cache "etcd") }}
{{- $server := lookup "v1" "Secret" .Release.Namespace (include "pma.etcd.serverSecretName" .) }}
{{- $client := lookup "v1" "Secret" .Release.Namespace (include "pma.etcd.clientSecretName" .) }}
{{- $s := dict }}{{ if $server }}{{ $s = $server.data | default dict }}{{ end }}
{{- $c := dict }}{{ if $client }}{{ $c = $client.data | default dict }}{{ end }}
{{- if and (index $s "ca.crt") (index $s "tls.crt") (index $s "tls.key") (index $c "tls.crt") (index $c "tls.key") }}
{{- $_ := set $cache "etcd" (dict "ca" (index $s "ca.crt" | b64dec) "serverCrt" (index $s "tls.crt" | b64dec) "serverKey" (index $s "tls.key" | b64dec) "clientCrt" (index $c "tls.crt" | b64dec) "clientKey" (index $c "tls.key" | b64dec)) }}
{{- else }}
{{- $days := int .Values.etcd.certValidityDays }}
{{- $etcd := include "pma.etcd.fullname" . }}
{{- $headless := include "pma.etcd.headlessName" . }}
{{- $ns := .Release.Namespace }}
{{- $ca := genCA (printf "%s-ca" $etcd) $days }}
{{- $names := list "localhost" }}
{{- range (include "pma.etcd.members" . | fromJsonArray) }}
{{- $names = append $names .host }}
{{- $names = append $names (printf "%s.%s" .host $.Values.clusterDomain) }}
{{- end }}
{{- $names = append $names (printf "*.%s.%s.svc" $headless $ns) }}
{{- $names = append $names (printf "*.%s.%s.svc.%s" $headless $ns .Values.clusterDomain) }}
{{- $server := genSignedCert $etcd (list "127.0.0.1") $names $days $ca }}
{{- $client := genSignedCert (include "pma.fullname" .) nil nil $days $ca }}
{{- $_ := set $cache "etcd" (dict "ca" $ca.Cert "serverCrt" $server.Cert "serverKey" $server.Key "clientCrt" $client.Cert "clientKey" $client.Key) }}
{{- end }}
{{- end }}
{{- toJson (index $cache "etcd") }}
{{- end }}

{{/* Pod anti-affinity from a mode (soft | hard | none) and selector labels; prints nothing for none. */}}
{{- define "pma.antiAffinity" -}}
{{- $term := dict "topologyKey" "kubernetes.io/hostname" "labelSelector" (dict "matchLabels" .selector) -}}
{{- if eq .mode "soft" -}}
{{- toYaml (dict "podAntiAffinity" (dict "preferredDuringSchedulingIgnoredDuringExecution" (list (dict "weight" 100 "podAffinityTerm" $term)))) }}
{{- else if eq .mode "hard" -}}
{{- toYaml (dict "podAntiAffinity" (dict "requiredDuringSchedulingIgnoredDuringExecution" (list $term))) }}
{{- end -}}
{{- end }}

{{/* A memory quantity (resources.limits.memory) in bytes, as a float: a number of bytes, or a decimal number with
a Kubernetes suffix (Ki Mi Gi Ti Pi Ei, k M G T P E). Anything else fails, naming the value. */}}
{{- define "pma.memoryBytes" -}}
{{- if or (kindIs "float64" .) (kindIs "int64" .) (kindIs "int" .) }}
{{- . | float64 }}
{{- else }}
{{- $q := toString . }}
{{- if not (regexMatch "^[0-9]+(\\.[0-9]+)?([KMGTPE]i|[kMGTPE])?$" $q) }}
{{- fail (printf "resources.limits.memory %q is not a memory quantity: write it as 512Mi, 2Gi, 500M or a number of bytes" $q) }}
{{- end }}
{{- $number := regexFind "^[0-9]+(\\.[0-9]+)?" $q }}
{{- $factors := dict "" 1 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 "Pi" 1125899906842624 "Ei" 1152921504606846976 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 "P" 1000000000000000 "E" 1000000000000000000 }}
{{- mulf ($number | float64) (get $factors (trimPrefix $number $q)) }}
{{- end }}
{{- end }}

{{/* A CPU quantity (resources.limits.cpu or resources.requests.cpu) in cores, as a float: a number of cores (2,
1.5) or of millicores (500m). Anything else fails, naming the value. Takes {value, name}. */}}
{{- define "pma.cpuCores" -}}
{{- if or (kindIs "float64" .value) (kindIs "int64" .value) (kindIs "int" .value) }}
{{- .value | float64 }}
{{- else }}
{{- $q := toString .value }}
{{- if not (regexMatch "^[0-9]+(\\.[0-9]+)?m?$" $q) }}
{{- fail (printf "%s %q is not a CPU quantity: write it as 500m, 2 or 1.5" .name $q) }}
{{- end }}
{{- if hasSuffix "m" $q }}
{{- divf (trimSuffix "m" $q | float64) 1000 }}
{{- else }}
{{- $q | float64 }}
{{- end }}
{{- end }}
{{- end }}

{{/* The server's --workers: the value workers when it is a number; for auto the pod's CPU, resources.limits.cpu
else resources.requests.cpu, rounded up (as the server's own auto rounds the cgroup's limit), at least 1 and at
most 64, and 1 without either. A number rather than the server's auto, so that the heap can be shared out here
(pma.heapMiB), `helm template` shows it, and a CPU request counts (the server sees only a limit; without one it
would take every core of the node, each worker with its own cache). */}}
{{- define "pma.workers" -}}
{{- range .Values.extraArgs }}
{{- if or (eq . "--workers") (hasPrefix "--workers=" .) }}
{{- fail (printf "extraArgs has %q: set the value workers instead (the chart shares the memory limit among the workers)" .) }}
{{- end }}
{{- end }}
{{- if eq (toString .Values.workers) "auto" }}
{{- $resources := .Values.resources | default dict }}
{{- $cpu := dig "limits" "cpu" "" $resources }}
{{- $name := "resources.limits.cpu" }}
{{- if not $cpu }}
{{- $cpu = dig "requests" "cpu" "" $resources }}
{{- $name = "resources.requests.cpu" }}
{{- end }}
{{- if $cpu }}
{{- $cores := include "pma.cpuCores" (dict "value" $cpu "name" $name) | float64 }}
{{- min 64 (max 1 (ceil $cores | int)) }}
{{- else }}1{{ end }}
{{- else }}
{{- .Values.workers | int }}
{{- end }}
{{- end }}

{{/* The V8 heap limit in MiB (--max-old-space-size) of each of the server's processes (NODE_OPTIONS reaches the
primary and every worker): heap.maxOldSpaceSizeMiB when set, else heap.limitPercent of a worker's share of the
container's memory limit. With one worker (one process, no primary) the share is the whole limit; with N, the limit
less heap.primaryReserveMiB (the primary forks the workers and serves nothing) divided by N, as each worker holds a
whole copy of the watch cache. A share under 512 MiB fails (an idle worker with its cluster connected takes about
185 MiB, and the percent would leave too little beside its heap). Empty without a memory limit (Node's own default
applies). */}}
{{- define "pma.heapMiB" -}}
{{- $limit := dig "limits" "memory" "" (.Values.resources | default dict) }}
{{- if .Values.heap.maxOldSpaceSizeMiB }}
{{- .Values.heap.maxOldSpaceSizeMiB | int }}
{{- else if $limit }}
{{- $mib := 1048576.0 }}
{{- $share := include "pma.memoryBytes" $limit | float64 }}
{{- $workers := include "pma.workers" . | int }}
{{- if gt $workers 1 }}
{{- $reserve := .Values.heap.primaryReserveMiB | int }}
{{- $share = divf (subf $share (mulf $reserve $mib)) $workers }}
{{- if lt $share (mulf 512 $mib) }}
{{- $from := ternary "workers: auto, from the pod's CPU" "the value workers" (eq (toString .Values.workers) "auto") }}
{{- fail (printf "%d workers (%s) get %d MiB each of resources.limits.memory %v, after heap.primaryReserveMiB %d for the primary process; each holds its own copy of the watch cache and needs at least 512 MiB: set resources.limits.memory to at least %dMi, fewer workers, or heap.maxOldSpaceSizeMiB to size each heap yourself" $workers $from (floor (divf $share $mib) | int) $limit $reserve (add (mul $workers 512) $reserve)) }}
{{- end }}
{{- end }}
{{- max 1 (floor (divf (mulf $share .Values.heap.limitPercent) 104857600)) | int }}
{{- end }}
{{- end }}

{{/* The TracingConfiguration file (values observability.tracing.*). */}}
{{- define "pma.tracingConfiguration" -}}
apiVersion: apiserver.config.k8s.io/v1
kind: TracingConfiguration
endpoint: {{ .Values.observability.tracing.endpoint | quote }}
samplingRatePerMillion: {{ int .Values.observability.tracing.samplingRatePerMillion }}
{{- end }}

{{/* "true" when rendering without a cluster (helm template, Argo CD, Flux, --dry-run=client): lookup answers nothing
then, not even for kube-system, which every cluster has. */}}
{{- define "pma.offline" -}}
{{- if not (lookup "v1" "Namespace" "" "kube-system") }}true{{ end }}
{{- end }}

{{/* A YAML comment above a generated Secret when rendering without a cluster: lookup could not find the one made
before, so this render made new certificates (and a new CA) that the next render will replace again. */}}
{{- define "pma.offlineWarning" -}}
{{- if include "pma.offline" .root }}
# WARNING: rendered without a cluster (helm template, Argo CD, --dry-run), where lookup sees nothing: {{ .what }}
# below are NEW, made for this render, and every render makes others (pods roll, clients stop trusting). Under
# GitOps {{ .fix }} (docs/operating.md, "GitOps").
{{- end }}
{{- end }}

{{/* Labels of the backup job's pods (etcd's NetworkPolicy lets them reach the client port). */}}
{{- define "pma.backupSelectorLabels" -}}
app.kubernetes.io/name: {{ include "pma.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: etcd-backup
{{- end }}
