{{/*
DNS discovery (.Values.discovery): replicas of engines that run without a
sidecar, from the DNS names of headless Services (docs/balancer.md#dns-discovery).
Each discovery.dns[] entry is a balancer config discovery.dns[] entry plus
the chart's own keys: service (an existing headless Service), namespace (its
namespace) or selector (the chart renders the headless Service), which become
the entry's names.
*/}}

{{/* Keys a discovery.dns[] entry may have: the balancer's, then the chart's. */}}
{{- define "inferrail.discoveryKeys" -}}
group names port interval timeout models h2c max_concurrency max_pending kv_capacity_blocks block_size weight probe_path service namespace selector
{{- end -}}

{{/* The headless Service the chart renders for entry g (with a selector). */}}
{{- define "inferrail.discoveryService" -}}
{{- printf "%s-%s" (include "inferrail.fullname" .ctx) .g.group -}}
{{- end -}}

{{/*
The problems of .Values.discovery, one a line ("" when there is none); each
names the value's path and the value.
*/}}
{{- define "inferrail.discoveryProblems" -}}
{{- $d := .Values.discovery -}}
{{- $bad := list -}}
{{- range $k, $_ := $d -}}
{{- if not (has $k (list "resolver" "clusterDomain" "dns")) -}}
{{- $bad = append $bad (printf "discovery.%s: unknown key (discovery has resolver, clusterDomain and dns)" $k) -}}
{{- end -}}
{{- end -}}
{{- if and $d.resolver (not (regexMatch "^[^:/ ]+:[0-9]+$|^\\[[0-9a-fA-F:.]+\\]:[0-9]+$" $d.resolver)) -}}
{{- $bad = append $bad (printf "discovery.resolver must be host:port, got %q" $d.resolver) -}}
{{- end -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$" (toString $d.clusterDomain)) -}}
{{- $bad = append $bad (printf "discovery.clusterDomain must be a DNS domain, got %q" (toString $d.clusterDomain)) -}}
{{- end -}}
{{- if and $d.dns (dig "config" "discovery" "" .Values.balancer) -}}
{{- $bad = append $bad "balancer.config.discovery must be empty when discovery.dns is set: list the groups in discovery.dns" -}}
{{- end -}}
{{- $keys := splitList " " (include "inferrail.discoveryKeys" .) -}}
{{- $groups := list -}}
{{- range $i, $g := $d.dns -}}
{{- $p := printf "discovery.dns[%d]" $i -}}
{{- if not (kindIs "map" $g) -}}
{{- $bad = append $bad (printf "%s must be a map (group, service or names or selector, port, models), got %s" $p (toJson $g)) -}}
{{- continue -}}
{{- end -}}
{{- range $k, $_ := $g -}}
{{- if not (has $k $keys) -}}
{{- $bad = append $bad (printf "%s.%s: unknown key (a discovery.dns entry has %s)" $p $k (join ", " $keys)) -}}
{{- end -}}
{{- end -}}
{{- $group := toString (default "" $g.group) -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $group) -}}
{{- $bad = append $bad (printf "%s.group must be a DNS label (lower-case letters, digits and -), got %q" $p $group) -}}
{{- else if has $group $groups -}}
{{- $bad = append $bad (printf "%s.group %q is not unique" $p $group) -}}
{{- end -}}
{{- $groups = append $groups $group -}}
{{- $sources := list -}}
{{- range $k := list "names" "service" "selector" -}}
{{- if hasKey $g $k -}}
{{- $sources = append $sources $k -}}
{{- end -}}
{{- end -}}
{{- if ne (len $sources) 1 -}}
{{- $bad = append $bad (printf "%s must set one of names, service or selector, got %v" $p (default (list "none") $sources)) -}}
{{- end -}}
{{- if and (hasKey $g "namespace") (hasKey $g "names") -}}
{{- $bad = append $bad (printf "%s.namespace goes with service or selector, not names" $p) -}}
{{- end -}}
{{- if and (hasKey $g "service") (not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" (toString $g.service))) -}}
{{- $bad = append $bad (printf "%s.service must be a Service name, got %q" $p (toString $g.service)) -}}
{{- end -}}
{{- if and (hasKey $g "namespace") (not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" (toString $g.namespace))) -}}
{{- $bad = append $bad (printf "%s.namespace must be a namespace name, got %q" $p (toString $g.namespace)) -}}
{{- end -}}
{{- if hasKey $g "selector" -}}
{{- if or (not (kindIs "map" $g.selector)) (not $g.selector) -}}
{{- $bad = append $bad (printf "%s.selector must be the labels of the engine pods, got %s" $p (toJson $g.selector)) -}}
{{- end -}}
{{- $svc := include "inferrail.discoveryService" (dict "ctx" $ "g" (dict "group" $group)) -}}
{{- if gt (len $svc) 63 -}}
{{- $bad = append $bad (printf "%s.group %q makes the Service name %q longer than 63 characters" $p $group $svc) -}}
{{- end -}}
{{- end -}}
{{- if and (hasKey $g "names") (or (not (kindIs "slice" $g.names)) (not $g.names)) -}}
{{- $bad = append $bad (printf "%s.names must list at least one DNS name, got %s" $p (toJson $g.names)) -}}
{{- end -}}
{{- $port := $g.port -}}
{{- if not (and (or (kindIs "float64" $port) (kindIs "int" $port) (kindIs "int64" $port)) (eq (float64 $port) (float64 (int $port))) (ge (int $port) 1) (le (int $port) 65535)) -}}
{{- $bad = append $bad (printf "%s.port must be the engines' port in [1, 65535], got %s" $p (toJson $port)) -}}
{{- end -}}
{{- if or (not (kindIs "slice" $g.models)) (not $g.models) -}}
{{- $bad = append $bad (printf "%s.models must name at least one model, got %s" $p (toJson $g.models)) -}}
{{- end -}}
{{- end -}}
{{- join "\n" $bad -}}
{{- end -}}

{{/*
The balancer config's discovery section, as YAML ("" without groups). It
fails the render with every problem of .Values.discovery at once.
*/}}
{{- define "inferrail.discovery" -}}
{{- $problems := include "inferrail.discoveryProblems" . -}}
{{- if $problems -}}
{{- fail (printf "\n%s" $problems) -}}
{{- end -}}
{{- $d := .Values.discovery -}}
{{- if $d.dns -}}
{{- $out := list -}}
{{- range $g := $d.dns -}}
{{- $e := omit $g "service" "namespace" "selector" -}}
{{- $ns := default $.Release.Namespace $g.namespace -}}
{{- if $g.service -}}
{{- $_ := set $e "names" (list (printf "%s.%s.svc.%s" $g.service $ns $d.clusterDomain)) -}}
{{- else if $g.selector -}}
{{- $_ := set $e "names" (list (printf "%s.%s.svc.%s" (include "inferrail.discoveryService" (dict "ctx" $ "g" $g)) $ns $d.clusterDomain)) -}}
{{- end -}}
{{- $out = append $out $e -}}
{{- end -}}
{{- $section := dict "dns" $out -}}
{{- with $d.resolver -}}
{{- $_ := set $section "resolver" . -}}
{{- end -}}
{{- toYaml $section -}}
{{- end -}}
{{- end -}}
