package e2e

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// uiScreenshots is where TestWebUI writes its screenshots (make
// ui-screenshots passes docs/images); "" writes none.
var uiScreenshots = flag.String("ui-screenshots", "", "directory for the web UI test's screenshots (empty: none)")

// uiDev is a running `inferrail dev` and the URLs it printed.
type uiDev struct {
	proc      *scProc
	client    string   // balancer-0's client base URL
	balancer  string   // balancer-0's UI URL
	sidecars  []string // each sidecar's UI URL
	replicas  []string // the sidecars' names
	modelName string
}

// uiStartDev starts `inferrail dev` with n replicas and one balancer on free
// ports, and the further flags extra, and reads the URLs it prints once the
// fleet is ready.
func uiStartDev(t *testing.T, bin string, n int, extra ...string) *uiDev {
	t.Helper()
	d := &uiDev{modelName: "ui-model"}
	args := append([]string{"dev", "--replicas", fmt.Sprint(n), "--balancers", "1", "--port", "0",
		"--model", d.modelName, "--log-dir", t.TempDir()}, extra...)
	d.proc = scStart(t, bin, "dev", args...)
	var out string
	scWait(t, "the dev fleet to be ready", func() error {
		select {
		case <-d.proc.done:
			return fmt.Errorf("inferrail dev exited: %v", d.proc.err)
		default:
		}
		b, err := os.ReadFile(d.proc.log)
		if err != nil {
			return err
		}
		if out = string(b); !strings.Contains(out, "Ctrl-C stops the fleet.") {
			return fmt.Errorf("not ready yet")
		}
		return nil
	})
	client := regexp.MustCompile(`(?m)^  balancer-0  (http://\S+)/v1/chat/completions$`).FindStringSubmatch(out)
	ui := regexp.MustCompile(`(?m)^  (\S+)\s+(http://\S+/ui/)$`).FindAllStringSubmatch(out, -1)
	if client == nil || len(ui) != n+1 {
		t.Fatalf("inferrail dev printed no client URL or not %d UI URLs:\n%s", n+1, out)
	}
	d.client = client[1]
	for _, m := range ui {
		if m[1] == "balancer-0" {
			d.balancer = m[2]
			continue
		}
		d.replicas = append(d.replicas, m[1])
		d.sidecars = append(d.sidecars, m[2])
	}
	if d.balancer == "" {
		t.Fatalf("no balancer UI URL in:\n%s", out)
	}
	return d
}

// uiTraffic sends chat requests sharing a few system prompts to url until
// ctx ends or 5000 were sent, one at a time; it returns when it stops.
func uiTraffic(ctx context.Context, url, model string) {
	for i := 0; i < 5000 && ctx.Err() == nil; i++ {
		body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"system","content":%q},{"role":"user","content":"question %d"}],"max_tokens":4}`,
			model, btPrefix(i % 6)[:600], i)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond): // pacing, not synchronisation
		}
	}
}

// uiBrowser is a headless chromium tab that records every console error,
// uncaught exception and error entry of the browser log of the pages it
// shows.
type uiBrowser struct {
	ctx    context.Context
	mu     sync.Mutex
	errors []string
}

func uiStartBrowser(t *testing.T) *uiBrowser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed: run `make fixtures` (scripts/chromium.sh installs Debian's chromium)")
	}
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.Flag("headless", true), chromedp.DisableGPU,
		chromedp.WindowSize(1400, 1000), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	b := &uiBrowser{ctx: ctx}
	// Start the browser and the tab, then follow its console.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("start chromium: %v", err)
	}
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.mu.Lock()
				b.errors = append(b.errors, m.String())
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-watched; cancelAlloc() })
	return b
}

// eval evaluates expr in the page into a T.
func eval[T any](b *uiBrowser, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

func (b *uiBrowser) problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.errors)
}

// screenshot writes the whole page to dir/name when dir is set.
func (b *uiBrowser) screenshot(t *testing.T, dir, name string) {
	t.Helper()
	if dir == "" {
		return
	}
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWebUI opens the web UI of a real `inferrail dev` fleet under traffic
// in headless chromium: on the balancer the page loads without console
// errors, lists every replica, its decisions view gains new decisions and
// the explain form answers; on a sidecar it lists every replica from that
// node's gossip view.
func TestWebUI(t *testing.T) {
	const n = 3
	browser := uiStartBrowser(t)
	bin := scBuild(t)
	dev := uiStartDev(t, bin, n)
	tctx, stopTraffic := context.WithCancel(context.Background())
	trafficDone := make(chan struct{})
	go func() { defer close(trafficDone); uiTraffic(tctx, dev.client, dev.modelName) }()
	t.Cleanup(func() { stopTraffic(); <-trafficDone })

	if err := chromedp.Do(browser.ctx, chromedp.Navigate(dev.balancer)); err != nil {
		t.Fatalf("open %s: %v", dev.balancer, err)
	}
	scWait(t, "the balancer page to list every replica, healthy", func() error {
		rows, err := eval[[]string](browser, `[...document.querySelectorAll("#fleet tbody tr[data-replica]")].map(r => r.dataset.replica + " " + r.cells[1].textContent)`)
		if err != nil {
			return err
		}
		for _, name := range dev.replicas {
			if !slices.Contains(rows, name+" healthy") {
				return fmt.Errorf("fleet rows %q lack %s healthy", rows, name)
			}
		}
		return nil
	})
	var first int
	scWait(t, "the decisions view to show a decision", func() error {
		var err error
		first, err = eval[int](browser, `Number(document.getElementById("decisions").dataset.last || 0)`)
		if err != nil {
			return err
		}
		if first == 0 {
			return fmt.Errorf("no decision shown")
		}
		return nil
	})
	scWait(t, "the decisions view to update", func() error {
		last, err := eval[int](browser, `Number(document.getElementById("decisions").dataset.last)`)
		if err != nil {
			return err
		}
		winners, err := eval[[]string](browser, `[...document.querySelectorAll("#decisions tbody tr[data-seq]")].map(r => r.cells[6].textContent)`)
		if err != nil {
			return err
		}
		if last <= first || len(winners) < 2 {
			return fmt.Errorf("last decision %d (first seen %d), %d rows", last, first, len(winners))
		}
		for _, w := range winners {
			if !slices.Contains(dev.replicas, w) {
				return fmt.Errorf("a decision names winner %q, not a replica %v", w, dev.replicas)
			}
		}
		return nil
	})
	scWait(t, "the charts to draw hit rate and TTFT", func() error {
		paths, err := eval[int](browser, `document.querySelectorAll("#hit-chart path").length + 10 * document.querySelectorAll("#ttft-chart path.l1").length`)
		if err != nil {
			return err
		}
		if paths < 11 {
			return fmt.Errorf("chart paths %d", paths)
		}
		return nil
	})
	if err := chromedp.Do(browser.ctx, chromedp.Click(chromedp.CSS(`#explain-form button`))); err != nil {
		t.Fatalf("submit the explain form: %v", err)
	}
	scWait(t, "the explain form to answer", func() error {
		pick, err := eval[string](browser, `(document.getElementById("explain-pick") || {}).textContent || ""`)
		if err != nil {
			return err
		}
		rows, err := eval[int](browser, `document.querySelectorAll("#explain-table tbody tr").length`)
		if err != nil {
			return err
		}
		if !slices.Contains(dev.replicas, pick) || rows != n {
			return fmt.Errorf("explain pick %q with %d candidate rows", pick, rows)
		}
		return nil
	})
	if *uiScreenshots != "" {
		// For the docs: charts with a minute of history.
		scWait(t, "a minute of history in the charts", func() error {
			n, err := eval[int](browser, `Number(document.getElementById("ttft-chart").dataset.points || 0)`)
			if err != nil {
				return err
			}
			if n < 45 {
				return fmt.Errorf("%d points", n)
			}
			return nil
		})
	}
	browser.screenshot(t, *uiScreenshots, "ui-balancer.png")

	if err := chromedp.Do(browser.ctx, chromedp.Navigate(dev.sidecars[0])); err != nil {
		t.Fatalf("open %s: %v", dev.sidecars[0], err)
	}
	scWait(t, "the sidecar page to list every replica from its gossip view", func() error {
		rows, err := eval[[]string](browser, `[...document.querySelectorAll("#fleet tbody tr[data-replica]")].map(r => r.dataset.replica)`)
		if err != nil {
			return err
		}
		hidden, err := eval[bool](browser, `document.getElementById("decisions-card").hidden`)
		if err != nil {
			return err
		}
		for _, name := range dev.replicas {
			if !slices.Contains(rows, name) {
				return fmt.Errorf("fleet rows %q lack %s", rows, name)
			}
		}
		if !hidden {
			return fmt.Errorf("a sidecar shows the decisions view")
		}
		return nil
	})
	scWait(t, "the sidecar page to draw the engine's hit rate", func() error {
		paths, err := eval[int](browser, `document.querySelectorAll("#hit-chart path").length`)
		if err != nil {
			return err
		}
		if paths == 0 {
			return fmt.Errorf("no hit rate line yet")
		}
		return nil
	})
	browser.screenshot(t, *uiScreenshots, "ui-sidecar.png")

	if p := browser.problems(); len(p) > 0 {
		t.Errorf("the pages logged errors:\n%s", strings.Join(p, "\n"))
	}
	stopTraffic()
	<-trafficDone
	dev.proc.kill(syscall.SIGINT)
}
