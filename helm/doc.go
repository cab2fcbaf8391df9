// Package helm holds the tests of the helm chart in helm/inferrail: helm lint
// and helm template through helm's Go SDK, for the default values and every
// value file in helm/inferrail/ci, with every rendered object decoded
// strictly into its Kubernetes Go type (internal/kubetest).
package helm
