package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenAISDKGateway runs the official OpenAI SDK for Node against a
// balancer with API keys and a rate limit (test/sdk/gateway-sdk.mjs): the
// SDK must raise its AuthenticationError, PermissionDeniedError and
// RateLimitError for the balancer's 401, 403 and 429, read the rate-limit
// headers, and succeed when its own retry honours Retry-After.
func TestOpenAISDKGateway(t *testing.T) {
	root := scRepoRoot(t)
	node := sdkRequireNode(t)
	sdkRequirePackages(t, root)
	bin := scBuild(t)
	sim := gwStartSim(t, bin, "sim-sdk-gw", "--zero-latency", "--served-model-name", "e2e-model,other-model")
	b := gwStartBalancer(t, bin, "bal-sdk-gw", fmt.Sprintf(`gossip: {enabled: false}
health: {probe_interval: 0s}
models:
  - {name: e2e-model, tokenizer: builtin:sim}
  - {name: other-model}
replicas:
  - {name: s0, url: %s, models: [e2e-model, other-model]}
auth:
  keys:
    - {name: sdk, key: sk-sdk, models: [e2e-model], limits: {requests_per_second: 1, burst: 1}}
`, sim.url))

	ctx, cancel := context.WithTimeout(context.Background(), sdkGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "test/sdk/gateway-sdk.mjs")
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"INFERRAIL_BASE_URL="+b.url+"/v1", "INFERRAIL_MODEL=e2e-model", "INFERRAIL_DENIED=other-model",
		"INFERRAIL_KEY=sk-sdk", "INFERRAIL_SDK_DIR="+filepath.Join(root, sdkDir))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("gateway-sdk.mjs did not finish within %v:\n%s", sdkGuard, out.String())
	}
	if err != nil {
		t.Fatalf("node gateway-sdk.mjs: %v\n%s", err, out.String())
	}
	t.Logf("%s", out.String())
	if !strings.Contains(out.String(), "5 of 5 checks passed") {
		t.Fatalf("gateway-sdk.mjs did not pass every check:\n%s", out.String())
	}
}
