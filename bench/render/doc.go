// Package render renders benchmark results (bench.Result files) into a
// markdown report and PNG charts drawn in pure Go: the TTFT CDF per policy,
// hit rate per policy against its bounds, p99 TTFT against load, and hit rate
// against the number of balancers.
package render
