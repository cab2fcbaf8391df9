// Package render renders benchmark results (bench.Result files) into a
// markdown report and PNG charts drawn in pure Go: the TTFT CDF per policy,
// hit rate per policy against its bounds, p99 TTFT against load, hit rate
// against the number of balancers and p99 TTFT against the number of
// replicas.
//
// Every report starts with the goals (Evaluate), computed from the
// results and marked met, missed or not measured, with the numbers behind a
// miss. Results of one workload live in one directory (Write); results of
// several live in one subdirectory each (ReadTree, WriteTree), rendered as
// <out>/<workload>/report.md plus an index, <out>/README.md, with the goals
// over every workload and a headline table per workload.
package render
