package sidecar

// KV-events modes, as reported by the events_mode metric and /v1/summary.
const (
	// modeDisabled: no events endpoint is configured; the approximate set is used.
	modeDisabled = "disabled"
	// modeWaiting: subscribed, but no batch has arrived yet.
	modeWaiting = "waiting"
	// modeLive: batches arrive; the exact block set is used.
	modeLive = "live"
	// modeSilent: traffic went through the data path for the grace period
	// but no batch arrived: the engine publishes no events, the approximate
	// set is used until one does.
	modeSilent = "silent"
)
