// Package devfleet starts a whole local inferrail fleet on loopback:
// simulators, one sidecar per simulator, and balancers, all joined in one
// gossip cluster. It backs `inferrail dev`, `make demo` and `inferrail bench
// compare`, which needs a fresh, cold fleet per policy.
//
// Every component is a child process of the same inferrail binary (`inferrail
// sim`, `inferrail sidecar`, `inferrail balancer`) rather than a goroutine:
// the fleet then runs exactly the code and flags a deployment runs, each
// component has its own Prometheus registry, logs and garbage collector (so a
// benchmark does not measure one component's pauses in another), and a
// component can be killed alone. The cost is a few tens of milliseconds to
// start each process. Children get SIGTERM in reverse start order on shutdown
// (balancers, then sidecars, which leave the gossip, then simulators), and are
// placed in the parent's process group's lifetime by Pdeathsig on Linux, so a
// crashed parent leaves no orphans.
package devfleet
