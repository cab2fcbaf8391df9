// Package decisionlog keeps the balancer's routing decisions: a sampled
// JSON-lines file, one line per decision, written by one goroutine from a
// bounded queue (a full queue drops the record and counts it; the request
// path never waits for the disk), and a small in-memory ring of the latest
// sampled decisions that the admin port serves to the web UI
// (GET /debug/decisions). A record names the request, the policy, the
// attempt, the prompt's length and predicted cached tokens, the winner and
// every candidate's state, load, prediction and score. It never holds the
// prompt itself. The format is in docs/decisions.md.
package decisionlog
