// Package consoletest drives the console in headless Chromium: sign-in by
// link, the inbox, approving, reviewing, a result arriving live, the
// in-browser chain check, hostile proof rendered inert, roles and tenants,
// and axe-core's accessibility check. It is a package of its own so that
// the browser's goroutines do not meet the http package's leak check.
package consoletest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/batonhq/baton/domain"
	"github.com/batonhq/baton/domain/secrets"
	"github.com/batonhq/baton/eventstore/bolt"
	"github.com/batonhq/baton/eventstore/ledger"
	"github.com/batonhq/baton/gateway"
	_ "github.com/batonhq/baton/gateway/kinds" // the offline model
	batonhttp "github.com/batonhq/baton/http"
	"github.com/batonhq/baton/projections"
)

const chromium = "/usr/bin/chromium"

// axePath is axe-core as .ci/run installs it (npm ci in testdata/axe).
var axePath = filepath.Join("..", "..", "testdata", "axe", "node_modules", "axe-core", "axe.min.js")

// server is a whole Baton front on a real store, with an admin key and
// keys of tenants a and b.
type server struct {
	t             *testing.T
	url           string
	admin, ka, kb string
}

func newServer(t *testing.T) *server {
	dir := t.TempDir()
	store, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	proj, err := projections.Open(filepath.Join(dir, "readmodel.db"), store, projections.NewHandoffs(), projections.Keys{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { proj.Run(ctx); close(done) }()
	scanner, err := secrets.New()
	if err != nil {
		t.Fatal(err)
	}
	// The offline model, for plans (a handoff's page shows its steps).
	catalog, err := gateway.NewCatalog(gateway.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	front := batonhttp.NewServer(batonhttp.Config{Store: store, Projections: proj, Scanner: scanner, Catalog: catalog, Log: zerolog.Nop(), Version: "test",
		EventsPing: time.Second})
	srv := httptest.NewServer(front.Handler())
	t.Cleanup(func() {
		front.StopWaits()
		srv.CloseClientConnections()
		srv.Close()
		front.Close()
		cancel()
		<-done
		proj.Close()
		store.Close()
	})
	mk := func(tenant string, admin bool) string {
		k, err := ledger.NewKeys(store).Create(context.Background(), "test", "", tenant, admin, "")
		if err != nil {
			t.Fatal(err)
		}
		return k.Key
	}
	return &server{t: t, url: srv.URL, admin: mk("ops", true), ka: mk("a", false), kb: mk("b", false)}
}

// api calls the JSON API with a key and wants status.
func (s *server) api(method, path, key string, body any, status int) map[string]any {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		s.t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, status, raw)
	}
	var out map[string]any
	json.Unmarshal(raw, &out)
	return out
}

func (s *server) link(tenant, name, role string, ttl int) string {
	s.t.Helper()
	body := map[string]any{"tenant": tenant, "name": name, "role": role}
	if ttl > 0 {
		body["ttlSeconds"] = ttl
	}
	return s.api("POST", "/v1/admin/console-links", s.admin, body, 201)["url"].(string)
}

func (s *server) contract(key string, fields map[string]any) string {
	s.t.Helper()
	body := map[string]any{"objective": "Rotate the staging TLS certificate", "targetExecutor": "ops-bot", "executorProtocol": "ops_bot.v1",
		"riskLevel": "medium", "approvalMode": "manual", "proofRequired": []string{"log"}}
	for k, v := range fields {
		body[k] = v
	}
	return s.api("POST", "/v1/handoff/contracts", key, body, 201)["handoffId"].(string)
}

// browser is one headless Chromium for the whole test; each person gets a
// browser context of their own (their own cookies).
type browser struct {
	t     *testing.T
	alloc context.Context
	axe   string
}

func newBrowser(t *testing.T) *browser {
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing; .ci/run installs Debian's chromium", chromium)
		}
		t.Skipf("the browser tests need Debian's Chromium at %s (apt-get install chromium); skipped", chromium)
	}
	// The GPU thread runs in the browser process: one fork fewer, and a
	// failed fork of a GPU process (seen on a loaded machine) ended the
	// browser. A start that fails all the same is tried again.
	var root context.Context
	var err error
	for try := 1; try <= 3; try++ {
		alloc, cancel := chromedp.NewExecAllocator(context.Background(),
			chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
			chromedp.Flag("in-process-gpu", true), chromedp.Flag("disable-breakpad", true),
			chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
			chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 900))
		r, stop := chromedp.NewContext(alloc)
		if err = chromedp.Do(r); err == nil { // starts the browser
			t.Cleanup(cancel)
			t.Cleanup(stop)
			root = r
			break
		}
		stop()
		cancel()
		t.Logf("starting %s (try %d): %v", chromium, try, err)
		time.Sleep(time.Duration(try) * 500 * time.Millisecond)
	}
	if root == nil {
		t.Fatalf("starting %s: %v", chromium, err)
	}
	b := &browser{t: t, alloc: root}
	if raw, err := os.ReadFile(axePath); err == nil {
		b.axe = string(raw)
	} else if os.Getenv("CI") != "" {
		t.Fatalf("axe-core is missing at %s; .ci/run installs it with npm ci in testdata/axe", axePath)
	}
	return b
}

// person opens a tab in a browser context of its own. The first one
// starts the browser.
func (b *browser) person() context.Context {
	// A tab whose renderer could not be started is opened once more.
	var err error
	for try := 1; try <= 2; try++ {
		ctx, cancel := chromedp.NewContext(b.alloc, chromedp.WithNewBrowserContext())
		b.t.Cleanup(cancel)
		if err = chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err == nil {
			return ctx
		}
		b.t.Logf("opening a tab (try %d): %v", try, err)
	}
	b.t.Fatal(err)
	return nil
}

func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	s, err := chromedp.Run(c, chromedp.Text(sel))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// waitFor polls a page expression until it is true.
func waitFor(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := chromedp.Run(c, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

// waitAcrossNavigation is waitFor for a condition met on a page still to
// load (a form's redirect): a poll the navigation interrupts is polled
// again, until the deadline.
func waitAcrossNavigation(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, cancel := context.WithDeadline(ctx, deadline)
		_, err := chromedp.Run(c, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond)))
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s (%s): %v", what, expr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// signIn opens a link and presses its button, as a person would.
func signIn(t *testing.T, ctx context.Context, link string) {
	t.Helper()
	run(t, ctx, "sign in", chromedp.Navigate(link), chromedp.Click("#signin"), chromedp.WaitVisible("form.filters"))
}

// accessible runs axe-core in the page and fails on a serious or critical
// violation.
func (b *browser) accessible(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	t.Run("axe-core on the "+page, func(t *testing.T) {
		if b.axe == "" {
			t.Skipf("axe-core is not installed at %s (cd testdata/axe && npm ci); skipped", axePath)
		}
		b.axeCheck(t, ctx, page)
	})
}

func (b *browser) axeCheck(t *testing.T, ctx context.Context, page string) {
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](b.axe+";true")); err != nil {
		t.Fatalf("injecting axe-core: %v", err)
	}
	res := eval[string](t, ctx, `axe.run(document).then(r => JSON.stringify({passes: r.passes.length,
		bad: r.violations.filter(v => v.impact === "serious" || v.impact === "critical")
		 .map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.target.join(" "))})),
		minor: r.violations.filter(v => v.impact !== "serious" && v.impact !== "critical").map(v => v.id)}))`)
	var got struct {
		Passes int
		Bad    []any
		Minor  []string
	}
	if err := json.Unmarshal([]byte(res), &got); err != nil || got.Passes == 0 {
		t.Fatalf("axe-core on the %s answered %s (%v)", page, res, err)
	}
	if len(got.Bad) > 0 {
		t.Errorf("axe-core on the %s: serious or critical violations: %s", page, res)
	}
	t.Logf("axe-core on the %s: %d rules pass, no serious or critical violation; minor: %v", page, got.Passes, got.Minor)
}

// screenshot writes the page at desktop and phone widths into
// $BATON_SCREENSHOTS (docs/console when making the README's pictures).
func screenshot(t *testing.T, ctx context.Context, name string) {
	dir := os.Getenv("BATON_SCREENSHOTS")
	if dir == "" {
		return
	}
	for _, v := range []struct {
		suffix string
		w, h   int64
		mobile bool
	}{{"desktop", 1280, 900, false}, {"phone", 390, 844, true}} {
		opts := []chromedp.EmulateViewportOption{}
		if v.mobile {
			opts = append(opts, chromedp.EmulateMobile)
		}
		run(t, ctx, "viewport", chromedp.EmulateViewport(v.w, v.h, opts...), chromedp.Sleep(300*time.Millisecond))
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+"-"+v.suffix+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(t, ctx, "viewport", chromedp.EmulateViewport(1280, 900))
}

func TestConsoleInTheBrowser(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	start := time.Now()

	// A link that will have expired by the time it is used.
	expiring := s.link("a", "late@example.com", "approver", 1)
	logFile := s.contract(s.ka, map[string]any{"objective": "Rotate a log file", "riskLevel": "low"})
	id := s.contract(s.ka, map[string]any{"objective": "Restart the payments cluster", "riskLevel": "high", "targetExecutor": "ops-bot",
		"approvalTimeoutSeconds": 3600, "escalateAfterSeconds": 900, "escalateTo": "oncall-lead"})
	pending := s.contract(s.ka, map[string]any{"objective": "Drop the old audit index", "riskLevel": "critical", "requiredApprovals": 2})
	other := s.contract(s.kb, map[string]any{"objective": "Tenant b's migration"})

	// The approver signs in by link; the inbox shows the high-risk handoff.
	alice := b.person()
	aliceLink := s.link("a", "alice@example.com", "approver", 0)
	signIn(t, alice, aliceLink)
	item := fmt.Sprintf(`li[data-handoff=%q]`, id)
	if got := text(t, alice, item+" .badge.risk-high"); got != "high" {
		t.Fatalf("risk badge %q", got)
	}
	if got := text(t, alice, item); !strings.Contains(got, "oncall-lead") || !strings.Contains(got, "ops-bot") {
		t.Fatalf("inbox row: %q", got)
	}
	if eval[bool](t, alice, `document.body.innerText.includes("Tenant b")`) {
		t.Fatal("the inbox shows another tenant's handoff")
	}
	b.accessible(t, alice, "inbox")
	screenshot(t, alice, "inbox")

	// A contract created meanwhile appears in the open inbox by itself.
	waitFor(t, alice, "the inbox's live stream", `document.body.dataset.live === "open"`)
	eval[bool](t, alice, `window.__samePage = true`)
	fresh := s.contract(s.ka, map[string]any{"objective": "Renew the CDN certificate", "riskLevel": "high"})
	waitFor(t, alice, "the new contract, live", fmt.Sprintf(`document.querySelector('li[data-handoff=%q]') !== null`, fresh))
	if !eval[bool](t, alice, `window.__samePage === true`) {
		t.Fatal("the inbox was reloaded, not updated")
	}

	// A refused action (a rejection needs a reason) answers with a redirect
	// to the handoff's page and the problem (Post/Redirect/Get); the page
	// still updates itself afterwards, under the handoff's own address.
	run(t, alice, "open another handoff", chromedp.Navigate(s.url+"/console/handoffs/"+logFile), chromedp.WaitVisible("#reject"))
	waitFor(t, alice, "the chain check of one event", `document.getElementById("chain-check").dataset.result === "intact"`)
	if got := text(t, alice, "#chain-check"); !strings.Contains(got, "Chain intact: 1 event recomputed") {
		t.Fatalf("chain check of one event: %q", got)
	}
	run(t, alice, "reject without a reason", chromedp.Click("#reject"), chromedp.WaitVisible("#problem")) // on the answer's page only
	waitFor(t, alice, "the refused page's live stream", `document.body.dataset.live === "open"`)
	if path := eval[string](t, alice, `location.pathname`); path != "/console/handoffs/"+logFile {
		t.Fatalf("after a refusal the address is %s", path)
	}
	// The words written come back, and a reload shows the refusal again
	// without posting the form again.
	long := `"keep these words " + "x".repeat(4000)`
	// The page before carries a refusal of the same code: the new one is
	// the document without this mark (a reload while the form's redirect
	// is still loading aborts it).
	run(t, alice, "reject with too long a reason", chromedp.WaitVisible("#reject"), chromedp.Evaluate[chromedp.Void](`window.__before = true; document.getElementById("reason").value = `+long),
		chromedp.Click("#reject"))
	waitAcrossNavigation(t, alice, "the refused page after the redirect", `window.__before === undefined && document.readyState === "complete" && document.querySelector('#problem[data-code="validation_failed"]') !== null`)
	run(t, alice, "reload the refused page", chromedp.Reload(), chromedp.WaitVisible(`#problem[data-code="validation_failed"]`))
	if !eval[bool](t, alice, `document.getElementById("reason").value === `+long) {
		t.Fatalf("the reason written is not given back after a reload: %q", eval[string](t, alice, `document.getElementById("reason").value.slice(0, 40)`))
	}
	if n := len(s.api("GET", "/v1/executions/"+logFile+"/ledger", s.ka, nil, 200)["events"].([]any)); n != 1 {
		t.Fatalf("%d events after refused forms and a reload", n)
	}
	s.api("POST", "/v1/executions/"+logFile+"/approval", s.ka, map[string]any{"status": "APPROVED", "approvedBy": "bob"}, 200)
	waitFor(t, alice, "the approval, live after a refusal", `document.getElementById("state").textContent === "approval_decided"`)
	run(t, alice, "back to the inbox", chromedp.Navigate(s.url+"/console/"), chromedp.WaitVisible(item))

	// Approve with a reason; the page answers with the new head.
	run(t, alice, "open the handoff", chromedp.Click(item+" a.objective"), chromedp.WaitVisible("#approve"))
	waitFor(t, alice, "the chain check", `document.getElementById("chain-check").dataset.result === "intact"`)
	run(t, alice, "approve", chromedp.SendKeys("#reason", "change window CHG-1042 is open"), chromedp.Click("#approve"), chromedp.WaitVisible("#notice"))
	if got := text(t, alice, "#notice"); !strings.Contains(got, "Recorded: approved, as event 2 of the ledger, hash ") {
		t.Fatalf("notice %q", got)
	}
	if got := text(t, alice, "#approval-status"); !strings.Contains(got, "APPROVED by alice@example.com") {
		t.Fatalf("approval %q", got)
	}

	// The executor posts proof with its key, hostile artifacts among it.
	runID := "run-7"
	s.api("POST", "/v1/executions/"+id+"/proof", s.ka, map[string]any{"executorType": "ops-bot", "executorRunId": runID, "status": "RUNNING",
		"proof": map[string]any{"summary": "Restarted 3 of 3 nodes", "artifacts": []any{
			map[string]any{"type": "log", "text": "node-1 restarted\nnode-2 restarted\nnode-3 restarted"},
			map[string]any{"type": "log", "text": `<script>window.__pwned = "script"</script>`},
			map[string]any{"type": "log", "text": `<img src=x onerror="window.__pwned = 'img'">`},
			map[string]any{"type": "url", "text": `javascript:window.__pwned='link'`},
			map[string]any{"type": "url", "text": "https://ci.example.com/runs/7"},
			map[string]any{"type": "json", "text": `{"healthy": 3, "nodes": ["n1","n2","n3"]}`},
		}}}, 200)

	// The verifier signs in, sees the proof inert, and reviews it.
	vera := b.person()
	signIn(t, vera, s.link("a", "vera@example.com", "verifier", 0))
	run(t, vera, "open the handoff", chromedp.Navigate(s.url+"/console/handoffs/"+id), chromedp.WaitVisible("#submit-review"))
	waitFor(t, vera, "the chain check", `document.getElementById("chain-check").dataset.result === "intact"`)
	inert := eval[string](t, vera, `JSON.stringify({
		pwned: window.__pwned || null,
		scripts: document.querySelectorAll("main script").length,
		imgs: document.querySelectorAll("main img").length,
		jsLinks: [...document.querySelectorAll("a")].filter(a => a.href.toLowerCase().startsWith("javascript:")).length,
		shownAsText: [...document.querySelectorAll("pre.artifact")].some(p => p.textContent.includes("<script>window.__pwned")),
		link: (() => { const a = document.querySelector('a.artifact-link'); return a ? [a.href, a.rel, a.target].join(" ") : ""; })(),
		json: [...document.querySelectorAll("pre.artifact")].some(p => p.textContent.includes('"healthy": 3,\n'))})`)
	want := `{"pwned":null,"scripts":0,"imgs":0,"jsLinks":0,"shownAsText":true,"link":"https://ci.example.com/runs/7 noopener noreferrer _blank","json":true}`
	if inert != want {
		t.Fatalf("proof rendering: %s, want %s", inert, want)
	}
	b.accessible(t, vera, "handoff page")
	run(t, vera, "review", chromedp.Click("#verdict-verified"), chromedp.SendKeys("#notes", "log shows all three nodes, digest sha256:"+strings.Repeat("f", 300)),
		chromedp.Click("#submit-review"), chromedp.WaitVisible("#notice"))
	if got := text(t, vera, "#review"); !strings.Contains(got, "verified by vera@example.com") {
		t.Fatalf("review %q", got)
	}
	// A long word (a digest) wraps: the page does not scroll sideways.
	if wide := eval[bool](t, vera, `document.documentElement.scrollWidth > window.innerWidth`); wide {
		t.Fatalf("the page is %d px wide in a window of %d", eval[int](t, vera, `document.documentElement.scrollWidth`), eval[int](t, vera, `window.innerWidth`))
	}

	// The result closes the ledger; the open page shows it without a reload.
	waitFor(t, vera, "the live stream", `document.body.dataset.live === "open"`)
	eval[bool](t, vera, `window.__samePage = true`)
	s.api("POST", "/v1/executions/"+id+"/result", s.ka, map[string]any{"executorType": "ops-bot", "executorRunId": runID, "status": "SUCCEEDED",
		"result": map[string]any{"summary": "Cluster healthy", "output": "3/3 nodes ready"}}, 200)
	waitFor(t, vera, "the closed ledger, live", `document.getElementById("state").textContent === "ledger_closed"`)
	if !eval[bool](t, vera, `window.__samePage === true`) {
		t.Fatal("the page was reloaded, not updated")
	}
	waitFor(t, vera, "the chain check after close", `document.getElementById("chain-check").dataset.result === "intact"`)
	if got := text(t, vera, "#chain-check"); !strings.Contains(got, "Chain intact") {
		t.Fatalf("chain check %q", got)
	}
	screenshot(t, vera, "handoff-closed")

	// An auditor has no approve button, and a forged POST is refused.
	audrey := b.person()
	signIn(t, audrey, s.link("a", "audrey@example.com", "auditor", 0))
	run(t, audrey, "open a pending handoff", chromedp.Navigate(s.url+"/console/handoffs/"+pending), chromedp.WaitVisible("#chain-check"))
	if eval[bool](t, audrey, `document.getElementById("approve") !== null`) {
		t.Fatal("the auditor has an approve button")
	}
	forged := eval[int](t, audrey, fmt.Sprintf(`fetch("/console/handoffs/%s/actions", {method: "POST", body: new URLSearchParams({
		csrf: document.querySelector("input[name=csrf]").value, action: "approve", reason: "forged"})}).then(r => r.status)`, pending))
	if forged != 403 {
		t.Fatalf("the auditor's forged approval answered %d", forged)
	}
	// Another tenant's handoff is not there.
	if st := eval[int](t, audrey, fmt.Sprintf(`fetch("/console/handoffs/%s").then(r => r.status)`, other)); st != 404 {
		t.Fatalf("another tenant's handoff answered %d", st)
	}

	// A used link and an expired one are refused.
	stranger := b.person()
	for _, l := range []string{aliceLink, expiring} {
		run(t, stranger, "reuse a link", chromedp.Navigate(l), chromedp.Click("#signin"), chromedp.WaitVisible("#refused"))
	}
	if got := text(t, stranger, "#refused"); !strings.Contains(got, "expired") {
		t.Fatalf("expired link: %q", got)
	}
	t.Logf("browser run took %s", time.Since(start).Round(time.Millisecond))
}

// A person's open pages share one event stream: eight handoff pages in
// one browser all load (a browser opens six connections to a server, and
// a stream each held them all) and all update live; when the page that
// listens for them closes, another takes over and the rest catch up.
func TestConsoleTabsShareOneStream(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	ann := b.person()
	signIn(t, ann, s.link("a", "ann@example.com", "approver", 0))
	var ids []string
	var tabs []context.Context
	for i := 0; i < 8; i++ {
		id := s.contract(s.ka, map[string]any{"objective": fmt.Sprintf("Rotate certificate %d", i)})
		tab, cancel := chromedp.NewContext(ann) // a tab of the same browser context
		t.Cleanup(cancel)
		if err := chromedp.Do(tab); err != nil { // opens the tab, for as long as tab lasts
			t.Fatal(err)
		}
		run(t, tab, fmt.Sprintf("open page %d", i), chromedp.Navigate(s.url+"/console/handoffs/"+id), chromedp.WaitVisible("#state"))
		ids, tabs = append(ids, id), append(tabs, tab)
	}
	for i, tab := range tabs {
		waitFor(t, tab, fmt.Sprintf("page %d's live updates", i), `document.body.dataset.live === "open"`)
	}
	for i, id := range ids {
		s.api("POST", "/v1/executions/"+id+"/approval", s.ka, map[string]any{"status": "APPROVED", "approvedBy": "bob"}, 200)
		waitFor(t, tabs[i], fmt.Sprintf("page %d's approval, live", i), `document.getElementById("state").textContent === "approval_decided"`)
	}
	// The inbox, opened first, listens for them all; when it is left,
	// another page takes over.
	run(t, ann, "leave the inbox", chromedp.Navigate("about:blank"))
	for i, id := range ids {
		s.api("POST", "/v1/executions/"+id+"/proof", s.ka, map[string]any{"executorRunId": "run-1", "status": "RUNNING",
			"proof": map[string]any{"summary": "renewed", "artifacts": []any{map[string]any{"type": "log", "text": "ok"}}}}, 200)
		waitFor(t, tabs[i], fmt.Sprintf("page %d's proof, live after the inbox was left", i), `document.getElementById("state").textContent === "proof_received"`)
	}
	// Without Web Locks (a page over plain http on another machine) a
	// page listens on its own.
	bo := b.person()
	run(t, bo, "hide Web Locks", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `Object.defineProperty(Navigator.prototype, "locks", {get: () => undefined})`})
		return err
	}))
	signIn(t, bo, s.link("a", "bo@example.com", "approver", 0))
	run(t, bo, "open a page", chromedp.Navigate(s.url+"/console/handoffs/"+ids[0]), chromedp.WaitVisible("#state"))
	if eval[bool](t, bo, `navigator.locks !== undefined`) {
		t.Fatal("the page has Web Locks")
	}
	waitFor(t, bo, "its own live updates", `document.body.dataset.live === "open"`)
	s.api("POST", "/v1/executions/"+ids[0]+"/review", s.admin, map[string]any{"verdict": "verified", "reviewer": "verifier"}, 200)
	waitFor(t, bo, "the review, live", `document.getElementById("state").textContent === "proof_reviewed"`)
}

// A page open while another tab of the browser signs in as someone else
// does not take that person's page in by a live update: its header named
// the first person, and its forms recorded as the second.
func TestConsoleLiveUpdateAfterAnotherSignIn(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	id := s.contract(s.ka, nil)
	ann := b.person()
	signIn(t, ann, s.link("a", "ann@example.com", "approver", 0))
	run(t, ann, "open the handoff", chromedp.Navigate(s.url+"/console/handoffs/"+id), chromedp.WaitVisible("#approve"))
	waitFor(t, ann, "its live updates", `document.body.dataset.live === "open"`)
	session := eval[string](t, ann, `document.getElementById("live").dataset.session`)
	tab, cancel := chromedp.NewContext(ann) // a tab of the same browser context
	t.Cleanup(cancel)
	signIn(t, tab, s.link("a", "bo@example.com", "verifier", 0))
	s.api("POST", "/v1/executions/"+id+"/approval", s.ka, map[string]any{"status": "APPROVED", "approvedBy": "carol"}, 200)
	waitFor(t, ann, "the page to say it no longer updates", `/signed in again.*bo@example\.com/.test((document.getElementById("live-off") || {}).textContent || "")`)
	if got := eval[string](t, ann, `document.getElementById("live").dataset.session + " " + document.querySelector(".who span").textContent`); got != session+" ann@example.com · approver · tenant a" {
		t.Fatalf("the page is now %q", got)
	}
}

// Text of one long word (a hash, a path) in any field an executor, a
// plan or a person wrote wraps on a phone: a plan's steps and its context
// packet's titles ran off the side of the page, which scrolled sideways.
func TestConsoleLongWordsFitAPhone(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	long := strings.Repeat("x", 180)
	packet := s.api("POST", "/v1/context/preview", s.ka, map[string]any{"threadId": "thr_" + long,
		"retrievalContext": []any{map[string]any{"title": "T" + long, "text": "body " + long}}}, 201)["packetId"].(string)
	plan := s.api("POST", "/v1/agent-plans", s.ka, map[string]any{"objective": "Deploy " + long, "targetExecutor": "ops-bot",
		"riskLevel": "high", "contextPacketId": packet}, 201)["planId"].(string)
	id := s.api("POST", "/v1/handoff/contracts", s.ka, map[string]any{"planId": plan, "executorProtocol": "ops_bot.v1"}, 201)["handoffId"].(string)
	s.api("POST", "/v1/executions/"+id+"/approval", s.ka, map[string]any{"status": "APPROVED", "approvedBy": "a" + long, "reason": "R" + long}, 200)
	s.api("POST", "/v1/executions/"+id+"/proof", s.ka, map[string]any{"executorRunId": "run-1", "status": "RUNNING",
		"proof": map[string]any{"summary": "S" + long, "artifacts": []any{map[string]any{"type": "log", "text": "L" + long}}}}, 200)
	vera := b.person()
	signIn(t, vera, s.link("a", "vera@example.com", "verifier", 0))
	run(t, vera, "open the handoff on a phone", chromedp.EmulateViewport(375, 800, chromedp.EmulateMobile),
		chromedp.Navigate(s.url+"/console/handoffs/"+id), chromedp.WaitVisible("#review-form"))
	run(t, vera, "open the packet's items", chromedp.Click("section[aria-labelledby=s-packet] details > summary"))
	if got := eval[string](t, vera, `(function () {
		var w = document.documentElement.clientWidth, out = [];
		document.querySelectorAll("main *").forEach(function (e) { if (e.getBoundingClientRect().right > w + 1) out.push(e.tagName + " " + e.textContent.slice(0, 40)); });
		return document.documentElement.scrollWidth > w ? out.slice(0, 5).join(" | ") : "";
	})()`); got != "" {
		t.Fatalf("the page is wider than the phone: %s", got)
	}
}

// A live update keeps the reader's place: focus on an inbox link stays on
// it (it went to the page's body, so the next Tab started over), an opened
// event of the timeline stays open; and a decision form is sent once.
func TestConsoleLiveUpdateKeepsThePlace(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	id := s.contract(s.ka, map[string]any{"objective": "Rotate the keys", "riskLevel": "high"})
	alice := b.person()
	signIn(t, alice, s.link("a", "alice@example.com", "approver", 0))
	waitFor(t, alice, "the inbox's live stream", `document.body.dataset.live === "open"`)
	link := fmt.Sprintf(`li[data-handoff=%q] a.objective`, id)
	run(t, alice, "focus the item", chromedp.Focus(link))
	before := eval[string](t, alice, `document.body.dataset.updated || ""`)
	s.contract(s.ka, map[string]any{"objective": "Something else", "riskLevel": "high"})
	waitFor(t, alice, "the inbox updated", fmt.Sprintf(`(document.body.dataset.updated || "") !== %q`, before))
	if !eval[bool](t, alice, fmt.Sprintf(`document.activeElement === document.querySelector(%q)`, link)) {
		t.Fatalf("focus after a live update is on %s", eval[string](t, alice, `document.activeElement.tagName + " " + document.activeElement.className`))
	}

	run(t, alice, "open the handoff", chromedp.Navigate(s.url+"/console/handoffs/"+id), chromedp.WaitVisible("#approve"))
	waitFor(t, alice, "the page's live stream", `document.body.dataset.live === "open"`)
	eval[bool](t, alice, `document.querySelector('li.event[data-seq="1"] > details').open = true`)
	before = eval[string](t, alice, `document.body.dataset.updated || ""`)
	s.api("POST", "/v1/executions/"+id+"/approval", s.ka, map[string]any{"status": "APPROVED", "approvedBy": "bob"}, 200)
	waitFor(t, alice, "the approval, live", fmt.Sprintf(`(document.body.dataset.updated || "") !== %q && document.getElementById("state").textContent === "approval_decided"`, before))
	if !eval[bool](t, alice, `document.querySelector('li.event[data-seq="1"] > details').open`) {
		t.Fatal("the opened event closed on a live update")
	}
	// A screen reader hears one line of what changed, not the page.
	if got := text(t, alice, "#live-status"); got != "Updated: the handoff is approval decided." || eval[bool](t, alice, `document.getElementById("live").hasAttribute("aria-live")`) {
		t.Fatalf("live status %q", got)
	}

	// Sent once: a second submit of the same form is not sent.
	other := s.contract(s.ka, map[string]any{"objective": "Drop the cache", "riskLevel": "high"})
	run(t, alice, "open another", chromedp.Navigate(s.url+"/console/handoffs/"+other), chromedp.WaitVisible("#approve"))
	sent := eval[float64](t, alice, `(function () {
		var n = 0, f = document.querySelector('#approve').form;
		window.addEventListener("submit", function (e) { if (!e.defaultPrevented) n++; e.preventDefault(); }); // after the page's own listener
		f.requestSubmit(document.getElementById("approve"));
		f.requestSubmit(document.getElementById("reject"));
		return n;
	})()`)
	if sent != 1 {
		t.Fatalf("%v submissions went out of one form", sent)
	}
	// And the buttons show it: disabled, they looked as pressable as
	// before, and a second press seemed to do nothing.
	waitFor(t, alice, "the buttons to look disabled", `(function () {
		var b = document.getElementById("reject");
		return b.disabled && getComputedStyle(b).opacity < 0.8 && getComputedStyle(b).cursor === "progress";
	})()`)
}

// A page whose session an admin revoked says so when it stops updating,
// and the sign-in page it leads to says the same, not "ended or expired".
func TestConsoleSaysASessionWasRevoked(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	id := s.contract(s.ka, map[string]any{"objective": "Rotate the keys"})
	link := s.api("POST", "/v1/admin/console-links", s.admin, map[string]any{"tenant": "a", "name": "rita@example.com", "role": "approver"}, 201)
	rita := b.person()
	signIn(t, rita, link["url"].(string))
	run(t, rita, "open the handoff", chromedp.Navigate(s.url+"/console/handoffs/"+id), chromedp.WaitVisible("#approve"))
	waitFor(t, rita, "the page's live stream", `document.body.dataset.live === "open"`)
	s.api("DELETE", "/v1/admin/console-links/"+link["linkId"].(string), s.admin, nil, 204)
	// The next event has the page fetch itself again, which the ended
	// session cannot (the stream's own check comes within 30 seconds).
	s.api("POST", "/v1/executions/"+id+"/approval", s.ka, map[string]any{"status": "APPROVED", "approvedBy": "bob"}, 200)
	waitFor(t, rita, "the page saying it stopped", `document.getElementById("live-off") !== null && document.getElementById("live-off").textContent.includes("revoked by an admin")`)
	run(t, rita, "reload", chromedp.Reload(), chromedp.WaitVisible("#session-ended"))
	if got := text(t, rita, "#session-ended"); !strings.Contains(got, "Your session was revoked by an admin at ") {
		t.Fatalf("the sign-in page says %q", got)
	}
}

// hold pauses the tab's requests whose address matches pattern: the first
// until release is called, the others not at all.
func hold(t *testing.T, ctx context.Context, pattern string) (release func()) {
	t.Helper()
	paused := make(chan *fetch.EventRequestPaused, 16)
	if err := chromedp.Listen(ctx, func(ev any) {
		if p, ok := ev.(*fetch.EventRequestPaused); ok {
			paused <- p
		}
	}); err != nil {
		t.Fatal(err)
	}
	cont := func(id fetch.RequestID) {
		chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id})
			return err
		}))
	}
	run(t, ctx, "hold "+pattern, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: pattern}}})
		return err
	}))
	first := make(chan *fetch.EventRequestPaused, 1)
	go func() {
		first <- <-paused
		for p := range paused {
			cont(p.RequestID)
		}
	}()
	return func() {
		select {
		case p := <-first:
			cont(p.RequestID)
		case <-time.After(20 * time.Second):
			t.Fatalf("no request for %s", pattern)
		}
	}
}

// A page follows the events from where it was drawn: one that comes while
// it loads, before its stream or its share of another page's has begun,
// still reaches it (it said it was live and showed the handoff as it no
// longer was, until the next event).
func TestConsoleLiveFromWhereThePageWasDrawn(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	ann := b.person()
	// The first page: its stream is held while a contract is created.
	release := hold(t, ann, "*/console/events*")
	signIn(t, ann, s.link("a", "ann@example.com", "approver", 0))
	fresh := s.contract(s.ka, map[string]any{"objective": "Created while the page loaded"})
	release()
	waitFor(t, ann, "the contract created while the inbox loaded", fmt.Sprintf(`document.querySelector('li[data-handoff=%q]') !== null`, fresh))

	// A second page of the same person shares the inbox's stream: an
	// approval recorded while its script loads still reaches it.
	tab, cancel := chromedp.NewContext(ann)
	t.Cleanup(cancel)
	if err := chromedp.Do(tab); err != nil {
		t.Fatal(err)
	}
	releaseScript := hold(t, tab, "*/console/static/console.js*")
	go chromedp.Do(tab, chromedp.Navigate(s.url+"/console/handoffs/"+fresh))
	waitAcrossNavigation(t, tab, "the handoff page drawn", `document.getElementById("state") !== null && document.getElementById("state").textContent === "contract_created"`)
	s.api("POST", "/v1/executions/"+fresh+"/approval", s.admin, map[string]any{"status": "APPROVED", "approvedBy": "bob"}, 200)
	time.Sleep(300 * time.Millisecond) // the inbox's stream has it
	releaseScript()
	waitFor(t, tab, "the approval recorded while the page loaded", `document.getElementById("state").textContent === "approval_decided"`)
}

// The in-browser chain check of a handoff that moved on between the page
// and its trail (an executor's proof in between) checks the head shown at
// its own event: the chain is intact, and the page says that events came
// since, not that the chain check failed.
func TestConsoleChainCheckOfAHandoffThatMovedOn(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	id := s.contract(s.ka, map[string]any{"objective": "Rotate the keys"})
	s.api("POST", "/v1/executions/"+id+"/approval", s.admin, map[string]any{"status": "APPROVED", "approvedBy": "bob"}, 200)
	ann := b.person()
	signIn(t, ann, s.link("a", "ann@example.com", "auditor", 0))
	// No live updates here: the check's own answer is what the page shows.
	run(t, ann, "no live updates", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `Object.defineProperty(window, "EventSource", {value: undefined})`})
		return err
	}))
	release := hold(t, ann, "*/trail.json*")
	go chromedp.Do(ann, chromedp.Navigate(s.url+"/console/handoffs/"+id))
	waitAcrossNavigation(t, ann, "the page drawn", `document.getElementById("head-seq") !== null && document.getElementById("head-seq").textContent === "2"`)
	s.api("POST", "/v1/executions/"+id+"/proof", s.ka, map[string]any{"executorType": "ops-bot", "executorRunId": "run-1", "status": "RUNNING",
		"proof": map[string]any{"summary": "rotated", "artifacts": []any{map[string]any{"type": "log", "text": "ok"}}}}, 200)
	release()
	waitFor(t, ann, "the chain check", `document.getElementById("chain-check").dataset.result !== undefined`)
	if got := text(t, ann, "#chain-check"); !strings.Contains(got, "Chain intact: 4 events recomputed") || !strings.Contains(got, "2 events came since this page was drawn") {
		t.Fatalf("the chain check says %q", got)
	}
}

// What a person's decision came to stays on the page through live
// updates: the notice of what was recorded, and a refusal (another
// approver decided first). The executor acting at once had each page fetch
// itself again, and the answer vanished with the address's query it came
// from, before the person had read it.
func TestConsoleLiveUpdateKeepsTheAnswer(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	id := s.contract(s.ka, map[string]any{"objective": "Rotate the keys", "riskLevel": "high"})
	ann, bo := b.person(), b.person()
	signIn(t, ann, s.link("a", "ann@example.com", "approver", 0))
	signIn(t, bo, s.link("a", "bo@example.com", "approver", 0))
	run(t, ann, "open the handoff", chromedp.Navigate(s.url+"/console/handoffs/"+id), chromedp.WaitVisible("#approve"))
	// Bo writes a reason, so his form stays while Ann's decision comes
	// (a live update leaves a form being filled in alone).
	run(t, bo, "open the handoff", chromedp.Navigate(s.url+"/console/handoffs/"+id), chromedp.WaitVisible("#approve"),
		chromedp.SendKeys("#reason", "fine by me"))
	eval[bool](t, bo, `window.__before = true`)
	run(t, ann, "approve", chromedp.Click("#approve"), chromedp.WaitVisible("#notice"))
	// Clicked in the page: a live update of Ann's decision may redraw the
	// button between a node's lookup and its click (a stale node id).
	run(t, bo, "approve too", chromedp.Evaluate[chromedp.Void](`document.getElementById("approve").click()`))
	waitAcrossNavigation(t, bo, "the refusal", `window.__before === undefined && document.readyState === "complete" && document.querySelector('#problem[data-code="approval_already_decided"]') !== null`)
	for _, p := range []context.Context{ann, bo} {
		waitFor(t, p, "the page's live stream", `document.body.dataset.live === "open"`)
	}
	s.api("POST", "/v1/executions/"+id+"/proof", s.ka, map[string]any{"executorType": "ops-bot", "executorRunId": "run-1", "status": "RUNNING",
		"proof": map[string]any{"summary": "rotating", "artifacts": []any{map[string]any{"type": "log", "text": "started"}}}}, 200)
	for _, p := range []context.Context{ann, bo} {
		waitFor(t, p, "the proof, live", `document.getElementById("state").textContent === "proof_received"`)
	}
	if got := eval[string](t, ann, `(document.getElementById("notice") || {}).textContent || "gone"`); !strings.HasPrefix(got, "Recorded: approved") {
		t.Errorf("the approver's notice after a live update: %s", got)
	}
	if got := eval[string](t, bo, `(document.getElementById("problem") || {}).textContent || "gone"`); !strings.Contains(got, "Someone decided this handoff before your decision arrived") {
		t.Errorf("the refusal after a live update: %s", got)
	}
	if n := eval[int](t, bo, `document.querySelectorAll("#problem").length + document.querySelectorAll("#notice").length`); n != 1 {
		t.Errorf("%d notices and refusals on the refused page", n)
	}
	// The reason he wrote, which no form takes now, stays with the refusal.
	if got := eval[string](t, bo, `(document.querySelector("#unsent pre") || {}).textContent || "gone"`); got != "fine by me" {
		t.Errorf("the words not recorded after a live update: %s", got)
	}
}

// A link to a page of the console followed from another site (a shared
// view in a ticket, a wiki, a webmail) opens that page for a person
// signed in: the session's cookie is SameSite=Strict, which the browser
// does not send on a navigation from another site, and the page said to
// ask an admin for a new link.
func TestConsoleLinkFromAnotherSite(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	s.contract(s.ka, map[string]any{"objective": "Rotate the keys", "riskLevel": "high"})
	ann := b.person()
	signIn(t, ann, s.link("a", "ann@example.com", "approver", 0))
	// localhost and 127.0.0.1 are two sites to a browser.
	elsewhere := strings.Replace(s.url, "127.0.0.1", "localhost", 1)
	run(t, ann, "open another site", chromedp.Navigate(elsewhere+"/console/static/console.css"))
	eval[bool](t, ann, `(function () { var a = document.createElement("a"); a.id = "shared"; a.href = "`+s.url+`/console/?risk=high"; a.textContent = "the view"; document.body.append(a); return true; })()`)
	run(t, ann, "follow the shared link", chromedp.Click("#shared"))
	waitAcrossNavigation(t, ann, "the shared view", `location.origin === "`+s.url+`" && document.readyState === "complete" && (document.querySelector("form.filters") !== null || document.querySelector("h1").textContent === "Sign in")`)
	if eval[bool](t, ann, `document.querySelector("form.filters") === null`) {
		t.Fatalf("a signed-in person following a link from another site sees: %s", eval[string](t, ann, `document.querySelector("main").innerText.slice(0, 200)`))
	}
	if got := eval[string](t, ann, `location.search + " " + document.querySelector('select[name=risk]').value`); got != "?risk=high high" {
		t.Fatalf("the view opened is %s", got)
	}
	// A sign-in link opened from another site (a mail, a chat) says who
	// this browser is signed in as, and that the link ends that session.
	other := s.link("a", "bo@example.com", "approver", 0)
	run(t, ann, "open another site", chromedp.Navigate(elsewhere+"/console/static/console.css"))
	eval[bool](t, ann, `(function () { var a = document.createElement("a"); a.id = "mail"; a.href = "`+other+`"; a.textContent = "sign in"; document.body.append(a); return true; })()`)
	run(t, ann, "follow the link in the mail", chromedp.Click("#mail"))
	waitAcrossNavigation(t, ann, "the link's page", `location.origin === "`+s.url+`" && document.readyState === "complete" && document.getElementById("signin") !== null`)
	if got := eval[string](t, ann, `(document.getElementById("current") || {}).textContent || "nothing"`); !strings.Contains(got, "signed in as ann@example.com") {
		t.Fatalf("the link's page, opened from another site, says %s", got)
	}
	// Without a session, the page is the sign-in page, reached once.
	stranger := b.person()
	run(t, stranger, "open another site", chromedp.Navigate(elsewhere+"/console/static/console.css"))
	eval[bool](t, stranger, `(function () { var a = document.createElement("a"); a.id = "shared"; a.href = "`+s.url+`/console/?risk=high"; a.textContent = "the view"; document.body.append(a); return true; })()`)
	run(t, stranger, "follow the shared link", chromedp.Click("#shared"))
	waitAcrossNavigation(t, stranger, "the sign-in page", `location.origin === "`+s.url+`" && document.readyState === "complete" && document.querySelector("pre.cmd") !== null`)
	eval[bool](t, stranger, `window.__stays = true`)
	time.Sleep(700 * time.Millisecond)
	if !eval[bool](t, stranger, `window.__stays === true`) {
		t.Fatal("the sign-in page loads again and again")
	}
}

// An executor heartbeats every few seconds, each one an event of the
// timeline: on the page of a run that took an hour, hundreds of events
// stood between the verifier and the review form, each a stop of the Tab
// key. The earlier events fold, and the form is a few keys away.
func TestConsoleLongTimelineKeepsTheFormNear(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	id := s.contract(s.ka, map[string]any{"objective": "Reindex the archive"})
	s.api("POST", "/v1/executions/"+id+"/approval", s.admin, map[string]any{"status": "APPROVED", "approvedBy": "bob"}, 200)
	for i := 0; i < 150; i++ {
		s.api("POST", "/v1/executions/"+id+"/heartbeat", s.ka, map[string]any{"executorRunId": "run-1"}, 200)
	}
	s.api("POST", "/v1/executions/"+id+"/proof", s.ka, map[string]any{"executorRunId": "run-1", "status": "SUCCEEDED",
		"proof": map[string]any{"summary": "reindexed", "artifacts": []any{map[string]any{"type": "log", "text": "done"}}}}, 200)
	vera := b.person()
	signIn(t, vera, s.link("a", "vera@example.com", "verifier", 0))
	run(t, vera, "open the handoff", chromedp.Navigate(s.url+"/console/handoffs/"+id), chromedp.WaitVisible("#submit-review"))
	presses := 0
	for ; presses < 100 && !eval[bool](t, vera, `document.activeElement && document.activeElement.name === "verdict"`); presses++ {
		run(t, vera, "Tab", chromedp.KeyEvent("\t"))
	}
	if presses == 100 {
		t.Fatalf("the review form is more than 100 presses of Tab from the top; focus is on %s", eval[string](t, vera, `document.activeElement.outerHTML.slice(0, 80)`))
	}
	t.Logf("the verdict is %d presses of Tab from the top", presses)
	// The earlier events are there, folded.
	run(t, vera, "open the earlier events", chromedp.Click("#fold-timeline > summary"))
	events := len(s.api("GET", "/v1/executions/"+id+"/ledger", s.ka, nil, 200)["events"].([]any))
	if n := eval[int](t, vera, `document.querySelectorAll("li.event").length`); n != events {
		t.Fatalf("%d events on the page, of %d", n, events)
	}
}

// failRequests fails the tab's first n requests whose address matches
// pattern, as a network that drops them, and lets the others through.
func failRequests(t *testing.T, ctx context.Context, pattern string, n int) {
	t.Helper()
	paused := make(chan *fetch.EventRequestPaused, 16)
	if err := chromedp.Listen(ctx, func(ev any) {
		if p, ok := ev.(*fetch.EventRequestPaused); ok {
			paused <- p
		}
	}); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "fail "+pattern, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: pattern}}})
		return err
	}))
	go func() {
		for i := 0; ; i++ {
			p, ok := <-paused
			if !ok {
				return
			}
			chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				if i < n {
					_, err := cdp.Call(ctx, tg, fetch.FailRequest, fetch.FailRequestParams{RequestID: p.RequestID, ErrorReason: network.ErrorReasonConnectionReset})
					return err
				}
				_, err := cdp.Call(ctx, tg, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: p.RequestID})
				return err
			}))
		}
	}()
}

// A page whose fetch of itself failed once (a dropped connection) tries
// again, and shows the handoff as it is; failing on, it says that it no
// longer updates. It stayed as it was, saying nothing, while it looked
// live: the event that asked for the fetch does not come again.
func TestConsoleLiveUpdateThatFailedIsTriedAgain(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	id := s.contract(s.ka, map[string]any{"objective": "Rotate the keys"})
	s.api("POST", "/v1/executions/"+id+"/approval", s.admin, map[string]any{"status": "APPROVED", "approvedBy": "bob"}, 200)
	proof := map[string]any{"executorRunId": "run-1", "status": "RUNNING",
		"proof": map[string]any{"summary": "rotating", "artifacts": []any{map[string]any{"type": "log", "text": "started"}}}}
	for _, c := range []struct {
		fails int
		want  string
	}{{1, `document.getElementById("state").textContent === "proof_received" && document.body.dataset.live === "open"`},
		{100, `document.getElementById("live-off") !== null && document.getElementById("live-off").textContent.includes("no longer updates by itself: the page could not be fetched")`}} {
		ann := b.person()
		signIn(t, ann, s.link("a", "ann@example.com", "auditor", 0))
		run(t, ann, "open the handoff", chromedp.Navigate(s.url+"/console/handoffs/"+id), chromedp.WaitVisible("#state"))
		waitFor(t, ann, "the page's live stream", `document.body.dataset.live === "open"`)
		failRequests(t, ann, "*/console/handoffs/"+id, c.fails)
		s.api("POST", "/v1/executions/"+id+"/proof", s.ka, proof, 200)
		waitFor(t, ann, fmt.Sprintf("the page, its fetch failing %d times", c.fails), c.want)
	}
}

// A form refused before the ledger saw it (a CSRF token of another
// session: this browser signed in again meanwhile) is a 403 page that says
// to reload; the reload shows the handoff. The address stayed the form's,
// which takes POSTs only, and the reload answered 405 in JSON.
func TestConsoleReloadAfterAForbiddenForm(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	id := s.contract(s.ka, map[string]any{"objective": "Rotate the keys"})
	ann := b.person()
	signIn(t, ann, s.link("a", "ann@example.com", "approver", 0))
	run(t, ann, "open the handoff", chromedp.Navigate(s.url+"/console/handoffs/"+id), chromedp.WaitVisible("#approve"))
	eval[bool](t, ann, `window.__before = true; document.querySelector("#approve-form input[name=csrf]").value = "another session's"; true`)
	run(t, ann, "approve", chromedp.Click("#approve"))
	waitAcrossNavigation(t, ann, "the 403 page", `window.__before === undefined && document.readyState === "complete" && document.querySelector('[data-code="csrf_failed"]') !== null`)
	if got := eval[string](t, ann, `location.pathname`); got != "/console/handoffs/"+id {
		t.Errorf("the 403 page's address is %s", got)
	}
	run(t, ann, "reload", chromedp.Reload(), chromedp.WaitReady("body"))
	if !eval[bool](t, ann, `document.getElementById("approve") !== null`) {
		t.Fatalf("the reload the 403 page asks for shows: %s", eval[string](t, ann, `document.body.innerText.slice(0, 200)`))
	}
	if n := len(s.api("GET", "/v1/executions/"+id+"/ledger", s.ka, nil, 200)["events"].([]any)); n != 1 {
		t.Fatalf("%d events", n)
	}
}

// leftOf says whether, in the element sel, the word a is drawn left of the
// word b (the first of each).
func leftOf(t *testing.T, ctx context.Context, sel, a, b string) bool {
	t.Helper()
	return eval[bool](t, ctx, fmt.Sprintf(`(function () {
		var el = document.querySelector(%q), text = el.firstChild.nodeType === 3 ? el.firstChild : el.querySelector("*").firstChild;
		function x(w) { var r = document.createRange(), i = text.data.indexOf(w); r.setStart(text, i); r.setEnd(text, i + w.length); return r.getBoundingClientRect().left; }
		return x(%q) < x(%q);
	})()`, sel, a, b))
}

// A text written right to left reads in its own order: an objective in
// Hebrew naming two servers ("delete the backups of staging and not of
// prod") was laid out left to right, and a reader reading from the right
// met prod first; a name and a reason side by side ("by عمر: “…”") ran into
// each other.
func TestConsoleRightToLeftText(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	id := s.contract(s.ka, map[string]any{"objective": "מחק את הגיבויים של staging ולא של prod"})
	s.api("POST", "/v1/executions/"+id+"/approval", s.admin, map[string]any{"status": "REJECTED", "approvedBy": "عمر", "reason": "لا"}, 200)
	ann := b.person()
	signIn(t, ann, s.link("a", "ann@example.com", "auditor", 0))
	run(t, ann, "open the handoff", chromedp.Navigate(s.url+"/console/handoffs/"+id), chromedp.WaitVisible("#state"))
	if leftOf(t, ann, "h1", "staging", "prod") {
		t.Error("the objective is laid out left to right: read from the right, prod comes before staging")
	}
	// The reason stays after the name, in its quotes.
	if !eval[bool](t, ann, `(function () {
		var dd = document.getElementById("approval-status"), bdis = dd.querySelectorAll("bdi");
		return bdis.length === 2 && bdis[0].textContent === "عمر" && bdis[1].textContent === "لا";
	})()`) {
		t.Errorf("the decider and the reason are not set apart: %s", eval[string](t, ann, `document.getElementById("approval-status").innerHTML`))
	}
	run(t, ann, "inbox", chromedp.Navigate(s.url+"/console/?state=all"), chromedp.WaitVisible("a.objective"))
	if leftOf(t, ann, "a.objective", "staging", "prod") {
		t.Error("the inbox's objective is laid out left to right")
	}
}

// The sign-in form is sent once: a second click while the first is under
// way redeemed the link again, which the first had used, and the page the
// browser showed was that refusal ("already used or revoked; ask for a new
// one") though the first had signed the person in.
func TestConsoleSignInIsSentOnce(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	ann := b.person()
	run(t, ann, "open the link", chromedp.Navigate(s.link("a", "ann@example.com", "approver", 0)), chromedp.WaitVisible("#signin"))
	sent := eval[float64](t, ann, `(function () {
		var n = 0, f = document.getElementById("signin").form;
		window.addEventListener("submit", function (e) { if (!e.defaultPrevented) n++; e.preventDefault(); }); // after the page's own listener
		f.requestSubmit(document.getElementById("signin"));
		f.requestSubmit(document.getElementById("signin"));
		return n;
	})()`)
	if sent != 1 {
		t.Fatalf("%v submissions went out of the sign-in form", sent)
	}
}

// A live update says one short line to a screen reader (the page's
// status line), not three: the in-browser chain check, a live region of
// its own, said "Checking the chain…" and then its answer on every update.
// A chain found broken is still said.
func TestConsoleLiveUpdateSaysOneLine(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	id := s.contract(s.ka, map[string]any{"objective": "Rotate the keys"})
	ann := b.person()
	signIn(t, ann, s.link("a", "ann@example.com", "auditor", 0))
	run(t, ann, "open the handoff", chromedp.Navigate(s.url+"/console/handoffs/"+id), chromedp.WaitVisible("#state"))
	waitFor(t, ann, "the chain check", `document.getElementById("chain-check").dataset.result === "intact"`)
	waitFor(t, ann, "the page's live stream", `document.body.dataset.live === "open"`)
	eval[bool](t, ann, `(function () {
		window.__said = [];
		new MutationObserver(function (ms) {
			ms.forEach(function (m) {
				var el = m.target.nodeType === 1 ? m.target : m.target.parentElement;
				var region = el && el.closest('[role=status], [role=alert], [aria-live]');
				if (region) window.__said.push((region.id || region.tagName) + ": " + region.textContent.trim());
			});
		}).observe(document.body, {subtree: true, childList: true, characterData: true});
		return true;
	})()`)
	s.api("POST", "/v1/executions/"+id+"/approval", s.admin, map[string]any{"status": "APPROVED", "approvedBy": "bob"}, 200)
	waitFor(t, ann, "the approval, live", `document.getElementById("state").textContent === "approval_decided"`)
	waitFor(t, ann, "the chain checked again", `document.getElementById("chain-check").dataset.result === "intact"`)
	said := eval[[]string](t, ann, `window.__said`)
	if len(said) != 1 || !strings.HasPrefix(said[0], "live-status: Updated: the handoff is approval decided.") {
		t.Fatalf("a screen reader was told %q", said)
	}
	// The next update finds the chain broken (a trail with no events past
	// those checked, where the page shows more).
	paused := make(chan *fetch.EventRequestPaused, 4)
	chromedp.Listen(ann, func(ev any) {
		if p, ok := ev.(*fetch.EventRequestPaused); ok {
			paused <- p
		}
	})
	run(t, ann, "break the trail", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*/trail.json*"}}})
		return err
	}))
	go func() {
		for p := range paused {
			body, _ := json.Marshal(map[string]any{"handoffId": id, "genesisHash": domain.GenesisHash(id), "events": []any{}})
			chromedp.Do(ann, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: p.RequestID, ResponseCode: 200,
					ResponseHeaders: []*fetch.HeaderEntry{{Name: "Content-Type", Value: "application/json"}}, Body: body})
				return err
			}))
		}
	}()
	s.api("POST", "/v1/executions/"+id+"/proof", s.ka, map[string]any{"executorRunId": "run-1", "status": "RUNNING",
		"proof": map[string]any{"summary": "rotating", "artifacts": []any{map[string]any{"type": "log", "text": "started"}}}}, 200)
	waitFor(t, ann, "the broken chain, said", `document.getElementById("live-status").textContent.startsWith("Chain check failed: the trail ends at event 2, before the head shown on this page (event 4)")`)
}

// A reason pasted longer than the form took was cut by the browser without
// a word (the box took 2,000 characters, the ledger 4,000), and the cut
// reason recorded: the whole of it is recorded, and one past the ledger's
// bound is refused with the words given back, not cut.
func TestConsoleLongReasonIsNotCut(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	id := s.contract(s.ka, map[string]any{"objective": "Rotate the keys"})
	ann := b.person()
	signIn(t, ann, s.link("a", "ann@example.com", "approver", 0))
	run(t, ann, "open the handoff", chromedp.Navigate(s.url+"/console/handoffs/"+id), chromedp.WaitVisible("#approve"))
	reason := strings.Repeat("checked the change window; ", 111) + "end" // 3,000 characters
	run(t, ann, "paste a long reason", chromedp.Focus("#reason"), chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, input.InsertText, input.InsertTextParams{Text: reason})
		return err
	}))
	if n := eval[int](t, ann, `document.getElementById("reason").value.length`); n != len(reason) {
		t.Errorf("the box holds %d of the %d characters pasted", n, len(reason))
	}
	run(t, ann, "approve", chromedp.Click("#approve"), chromedp.WaitVisible("#notice"))
	got := s.api("GET", "/v1/executions/"+id+"/ledger", s.ka, nil, 200)["events"].([]any)[1].(map[string]any)["data"].(map[string]any)["reason"]
	if got != reason {
		t.Fatalf("recorded a reason of %d characters, of %d", len(got.(string)), len(reason))
	}
}

// A sign-in link's page takes the token out of its address; reloaded (or
// restored by a phone that had put the tab away) before signing in, it
// has no link to use, and said to ask an admin for a new link, though the
// link was still good: it says to open the link again, which works.
func TestConsoleLinkPageReloadedBeforeSigningIn(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	ann := b.person()
	link := s.link("a", "ann@example.com", "approver", 0)
	run(t, ann, "open the link", chromedp.Navigate(link), chromedp.WaitVisible("#signin"))
	run(t, ann, "reload", chromedp.Reload(), chromedp.WaitVisible("main h1"))
	if got := text(t, ann, "main"); !strings.Contains(got, "open that link again") {
		t.Fatalf("the link's page reloaded says: %s", got)
	}
	signIn(t, ann, link)
}

// Sign out pressed on a page drawn for a session this browser has since
// replaced (a new link opened in another tab) is refused, 403, saying to
// reload the page and try again; the reload shows the console as it now
// is. It posted the same stale form again, and was refused again.
func TestConsoleReloadAfterAStaleSignOut(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	ann := b.person()
	signIn(t, ann, s.link("a", "ann@example.com", "approver", 0))
	tab, cancel := chromedp.NewContext(ann)
	t.Cleanup(cancel)
	if err := chromedp.Do(tab); err != nil {
		t.Fatal(err)
	}
	signIn(t, tab, s.link("a", "bo@example.com", "approver", 0))
	eval[bool](t, ann, `window.__before = true`)
	run(t, ann, "sign out on the older page", chromedp.Click("button.link"))
	waitAcrossNavigation(t, ann, "the 403 page", `window.__before === undefined && document.readyState === "complete" && document.querySelector('[data-code="csrf_failed"]') !== null`)
	run(t, ann, "reload", chromedp.Reload(), chromedp.WaitReady("body"))
	if got := eval[string](t, ann, `location.pathname + " " + document.querySelector("main").innerText.slice(0, 60)`); !strings.HasPrefix(got, "/console/ Inbox") {
		t.Fatalf("the reload after the refused sign-out shows %s", got)
	}
}

// An inbox with more waiting than a page shows goes on in pages, by links
// that keep the filters: the next page shows the rest, a live update
// keeps the page it is on, and the links work without JavaScript.
func TestConsoleInboxPagesInTheBrowser(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	var ids []string
	for i := range 102 {
		ids = append(ids, s.contract(s.ka, map[string]any{"objective": fmt.Sprintf("Rotate certificate %d", i), "riskLevel": "high"}))
	}
	s.contract(s.ka, map[string]any{"objective": "A low one", "riskLevel": "low"})
	alice := b.person()
	signIn(t, alice, s.link("a", "alice@example.com", "approver", 0))
	run(t, alice, "the high-risk view", chromedp.Navigate(s.url+"/console/?risk=high"), chromedp.WaitVisible("#pages-approvals"))
	if n := eval[float64](t, alice, `document.querySelectorAll("#live li.item").length`); n != 100 {
		t.Fatalf("%v items on the first page", n)
	}
	if got := text(t, alice, "#pages-approvals [role=note]"); got != "Showing 1–100 of 102, those falling due soonest first, then the oldest." {
		t.Fatalf("the first page says %q", got)
	}
	run(t, alice, "the next page", chromedp.Click(`#pages-approvals a[rel=next]`), chromedp.WaitVisible(`#pages-approvals a[rel=first]`))
	got := eval[[]string](t, alice, `Array.from(document.querySelectorAll("#live li.item"), li => li.dataset.handoff)`)
	if fmt.Sprint(got) != fmt.Sprint(ids[100:]) || !eval[bool](t, alice, `new URLSearchParams(location.search).get("risk") === "high"`) {
		t.Fatalf("the second page (%s) shows %v, want %v", eval[string](t, alice, `location.search`), got, ids[100:])
	}
	b.accessible(t, alice, "inbox's second page")
	// A handoff created now comes onto this page, the last, live.
	waitFor(t, alice, "the inbox's live stream", `document.body.dataset.live === "open"`)
	// Focused by script, retried: the stream's catch-up may redraw the
	// list between chromedp's look-up of the node and its focus.
	waitFor(t, alice, "focus on the first page's link", `(() => { const a = document.getElementById("approvals-first"); if (a) a.focus(); return document.activeElement.id === "approvals-first"; })()`)
	fresh := s.contract(s.ka, map[string]any{"objective": "Rotate one more", "riskLevel": "high"})
	waitFor(t, alice, "the new handoff, live", fmt.Sprintf(`!!document.querySelector('#live li[data-handoff=%q]') && document.querySelector("#pages-approvals [role=note]").textContent.includes("101–103 of 103")`, fresh))
	if id := eval[string](t, alice, `document.activeElement.id`); id != "approvals-first" {
		t.Fatalf("focus after a live update is on %q", id)
	}
	run(t, alice, "the first page", chromedp.Click(`#pages-approvals a[rel=first]`), chromedp.WaitVisible(`#pages-approvals a[rel=next]`))
	if first := eval[string](t, alice, `document.querySelector("#live li.item").dataset.handoff`); first != ids[0] {
		t.Fatalf("the first page begins with %s, want %s", first, ids[0])
	}

	// Without JavaScript, the links are links.
	bob := b.person()
	signIn(t, bob, s.link("a", "bob@example.com", "auditor", 0))
	run(t, bob, "no script", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		return err
	}), chromedp.Navigate(s.url+"/console/?risk=high"), chromedp.Click(`#pages-approvals a[rel=next]`), chromedp.WaitVisible(`#pages-approvals a[rel=first]`))
	if n := eval[float64](t, bob, `document.querySelectorAll("#live li.item").length`); n != 3 {
		t.Fatalf("%v items on the second page without script", n)
	}
}

// An open inbox under a stream of lifecycle events (a fleet of executors
// posting progress) fetches itself again at most every two seconds, not
// after each event's 200 ms (twice a second, each a read of every queue),
// and loses no update: the last one shows. A hidden inbox does not fetch
// at all, and catches up when shown.
func TestConsoleInboxUnderManyEvents(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	s.contract(s.ka, nil)
	alice := b.person()
	signIn(t, alice, s.link("a", "alice@example.com", "approver", 0))
	waitFor(t, alice, "the inbox's live stream", `document.body.dataset.live === "open"`)
	eval[bool](t, alice, `(function () {
		window.__fetches = 0;
		var f = window.fetch;
		window.fetch = function (u, o) { if (String(u).indexOf("/console/") === 0) window.__fetches++; return f(u, o); };
		return true;
	})()`)
	n := 1
	start := time.Now()
	for time.Since(start) < 4*time.Second {
		s.contract(s.ka, nil)
		n++
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	waitFor(t, alice, "the last update", fmt.Sprintf(`document.querySelector("#q-approval .count").textContent === "%d"`, n))
	if got := eval[float64](t, alice, `window.__fetches`); got > took.Seconds()/2+2 {
		t.Fatalf("%d events in %v: the inbox fetched itself %v times", n-1, took.Round(time.Millisecond), got)
	}

	eval[bool](t, alice, `(function () {
		Object.defineProperty(document, "hidden", { configurable: true, get: function () { return true; } });
		document.dispatchEvent(new Event("visibilitychange"));
		window.__fetches = 0;
		return true;
	})()`)
	time.Sleep(2500 * time.Millisecond) // the quiet time of the last fetch ends
	s.contract(s.ka, nil)
	time.Sleep(2500 * time.Millisecond)
	if got := eval[float64](t, alice, `window.__fetches`); got != 0 {
		t.Fatalf("a hidden inbox fetched itself %v times", got)
	}
	eval[bool](t, alice, `(function () {
		Object.defineProperty(document, "hidden", { configurable: true, get: function () { return false; } });
		document.dispatchEvent(new Event("visibilitychange"));
		return true;
	})()`)
	waitFor(t, alice, "the hidden page's update, once shown", fmt.Sprintf(`document.querySelector("#q-approval .count").textContent === "%d"`, n+1))
}

// runningHandoff opens, as an auditor, the page of a handoff that an
// executor is working on, and answers a function posting one more RUNNING
// proof, which answers the ledger's head seq after it.
func runningHandoff(t *testing.T, b *browser, s *server) (context.Context, func() int) {
	id := s.contract(s.ka, map[string]any{"objective": "Rotate the keys"})
	s.api("POST", "/v1/executions/"+id+"/approval", s.admin, map[string]any{"status": "APPROVED", "approvedBy": "bob"}, 200)
	ann := b.person()
	signIn(t, ann, s.link("a", "ann@example.com", "auditor", 0))
	run(t, ann, "open the handoff", chromedp.Navigate(s.url+"/console/handoffs/"+id))
	waitFor(t, ann, "the live stream", `document.body.dataset.live === "open"`)
	waitFor(t, ann, "the first chain check", `document.getElementById("chain-check").dataset.result === "intact"`)
	eval[bool](t, ann, `(function () {
		window.__pages = 0; window.__trails = []; 
		var f = window.fetch;
		window.fetch = function (u, o) {
			u = String(u);
			if (u.indexOf("/trail.json") > 0) window.__trails.push(u);
			else if (u.indexOf("/console/handoffs/") === 0) window.__pages++;
			return f(u, o);
		};
		return true;
	})()`)
	n := 0
	return ann, func() int {
		n++
		out := s.api("POST", "/v1/executions/"+id+"/proof", s.ka, map[string]any{"executorType": "ops-bot", "executorRunId": "run-1", "status": "RUNNING",
			"proof": map[string]any{"summary": fmt.Sprintf("step %d", n), "artifacts": []any{map[string]any{"type": "log", "text": "ok"}}}}, 200)
		return int(out["ledgerHead"].(map[string]any)["seq"].(float64))
	}
}

// An open handoff page under a stream of its own events (an executor
// posting progress) fetches itself again at most every two seconds, as
// the inbox does, not after each event's 200 ms (with the chain check's
// trail besides), and the last update shows.
func TestConsoleHandoffUnderManyEvents(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	ann, proof := runningHandoff(t, b, s)
	var head int
	start := time.Now()
	for time.Since(start) < 4*time.Second {
		head = proof()
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(start)
	waitFor(t, ann, "the last update", fmt.Sprintf(`document.getElementById("head-seq").textContent === "%d"`, head))
	if got := eval[float64](t, ann, `window.__pages`); got > took.Seconds()/2+2 {
		t.Fatalf("%d events in %v: the handoff page fetched itself %v times", head, took.Round(time.Millisecond), got)
	}
}

// The chain check after a live update fetches only the events past those
// it has checked (trail.json?after=N) and chains them on from the last
// hash it recomputed: each update fetched and hashed the whole trail
// again, a fetch growing with the handoff. The answer is the whole
// chain's all the same.
func TestConsoleChainCheckFetchesOnlyWhatIsNew(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	ann, proof := runningHandoff(t, b, s)
	var head int
	for i := 0; i < 12; i++ {
		head = proof()
		time.Sleep(250 * time.Millisecond)
	}
	waitFor(t, ann, "the last check", fmt.Sprintf(`document.getElementById("chain-check").textContent.indexOf("Chain intact: %d events recomputed in this browser") === 0`, head))
	trails := eval[[]string](t, ann, `window.__trails`)
	if len(trails) == 0 {
		t.Fatal("no chain check after the live updates")
	}
	for _, u := range trails {
		if !strings.Contains(u, "/trail.json?after=") {
			t.Fatalf("a chain check fetched the whole trail again: %v", trails)
		}
	}
}

// A trail that could not be read (a dropped connection, a server busy for
// a moment) leaves the chain unchecked, said as such, not "Chain check
// failed" as a tampered trail is, nor announced as a break.
func TestConsoleChainCheckOfATrailNotRead(t *testing.T) {
	b := newBrowser(t)
	s := newServer(t)
	ann, proof := runningHandoff(t, b, s)
	failRequests(t, ann, "*/trail.json*", 100)
	head := proof()
	waitFor(t, ann, "the check after the update", fmt.Sprintf(`document.getElementById("head-seq").textContent === "%d" && document.getElementById("chain-check").dataset.result !== undefined`, head))
	got := text(t, ann, "#chain-check")
	if r := eval[string](t, ann, `document.getElementById("chain-check").dataset.result`); r != "unread" ||
		!strings.HasPrefix(got, "The chain could not be checked in this browser just now: the trail could not be fetched.") {
		t.Fatalf("the check says %q (%s)", got, r)
	}
	if said := text(t, ann, "#live-status"); strings.Contains(said, "Chain check failed") {
		t.Fatalf("a screen reader was told %q", said)
	}
}
