// Package routebench holds benchmarks of balancer/route over real bloom
// prefix summaries (gossip/summary), kept apart so that the route package's
// own tests do not depend on the gossip packages. It has no non-test code.
package routebench
