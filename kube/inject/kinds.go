package inject

import "strings"

// templatePaths returns, for a kind of object, the mapping keys that lead
// from the document's root to each pod template it holds (a mapping with
// metadata and spec); a Pod is its own template (the empty path). Kinds
// without pod templates return nil.
func templatePaths(apiVersion, kind string) [][]string {
	group, _, _ := strings.Cut(apiVersion, "/")
	if !strings.Contains(apiVersion, "/") {
		group = ""
	}
	switch {
	case group == "" && kind == "Pod":
		return [][]string{{}}
	case group == "apps" && (kind == "Deployment" || kind == "StatefulSet" || kind == "DaemonSet" || kind == "ReplicaSet"),
		group == "batch" && kind == "Job",
		group == "" && (kind == "ReplicationController" || kind == "PodTemplate"):
		if kind == "PodTemplate" {
			return [][]string{{"template"}}
		}
		return [][]string{{"spec", "template"}}
	case group == "batch" && kind == "CronJob":
		return [][]string{{"spec", "jobTemplate", "spec", "template"}}
	case group == "leaderworkerset.x-k8s.io" && kind == "LeaderWorkerSet":
		// The leader serves the API in multi-node deployments; without a
		// leaderTemplate every pod of a group is a worker of the same template.
		return [][]string{
			{"spec", "leaderWorkerTemplate", "leaderTemplate"},
			{"spec", "leaderWorkerTemplate", "workerTemplate"},
		}
	}
	return nil
}
