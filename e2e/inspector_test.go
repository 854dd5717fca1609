package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/recallhq/recall/testutil/pgtest"
)

// The inspector test's conversations: a long one whose first message holds
// a constraint, and one whose id is HTML that would run script if the page
// wrote it as HTML.
const (
	inspectUser       = "ops-demo"
	inspectConv       = "launch-plan"
	inspectConstraint = "We must never deploy the billing service on a Friday."
	inspectPlanned    = "The launch party at Harbour Hall is for 40 guests."
	inspectCorrection = "Correction: the launch party at Harbour Hall is for 55 guests instead of 40."
	xssConv           = `<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>`
)

// chromium returns the path of Debian's Chromium. Without it the test is
// skipped, saying so, except with CI set, where it fails.
func chromium(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("/usr/bin/chromium")
	if err != nil {
		if path, err = exec.LookPath("chromium"); err == nil {
			return path
		}
		if os.Getenv("CI") != "" {
			t.Fatalf("Chromium is missing, and CI is set: install it (apt-get install chromium) so that the inspector is tested in a browser: %v", err)
		}
		t.Skipf("Chromium is missing (apt-get install chromium): the evidence inspector is not tested in a browser")
	}
	return path
}

// TestInspector drives the evidence inspector of a real recall dev in
// headless Chromium: a service token logs in, lists a user's conversations,
// opens one and sees its early constraint in the message and the archive
// with why it was shown, its rejection and a search's result; an id made of
// HTML is shown as text and runs nothing; a user's token sees the 403 page
// and no data; and the token never goes into a URL the browser requests.
// With RECALL_SCREENSHOT set, it writes a PNG of the conversation page there.
func TestInspector(t *testing.T) {
	bin := chromium(t)
	d := startDev(t, devConfig{DatabaseURL: pgtest.UncreatedDatabase(t)})
	api := strings.TrimRight(d.APIURL, "/")

	// The conversations, through the HTTP ingest, and a snapshot that
	// rewrites the first message, which the worker rejects.
	long := inspectHistory(90)
	publishAndWait(t, d, "inspect-1", inspectConv, long)
	publishAndWait(t, d, "inspect-xss", xssConv, []map[string]string{
		{"role": "user", "content": "We must keep this conversation short."},
		{"role": "assistant", "content": "Understood."},
		{"role": "user", "content": "Good."},
	})
	rewritten := append([]map[string]string{{"role": "user", "content": "We may deploy on any day."}}, long[1:]...)
	if status, body := postJSON(t, api+"/v1/checkpoints", d.Token, checkpointEvent("inspect-2", inspectConv, rewritten)); status != http.StatusAccepted {
		t.Fatalf("POST the rewritten snapshot: %d %s", status, body)
	}
	rejections := api + "/v1/users/" + inspectUser + "/conversations/" + inspectConv + "/rejections"
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, body := get(t, rejections, d.Token); strings.Contains(string(body), "prefix_mismatch") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the rewritten snapshot was not rejected within 30s")
		}
	}

	// The banner prints the inspector's address with the service token in
	// its fragment.
	want := api + "/inspect/#" + url.Values{"token": {d.Token}, "user": {"demo-user"}}.Encode()
	if !strings.Contains(d.Stdout.String(), "\n"+want+"\n") {
		t.Errorf("the banner does not print the inspector's address %s:\n%s", want, d.Stdout.String())
	}

	// The page's answers carry the policy that forbids other scripts and
	// framing.
	resp, err := http.Get(api + "/inspect/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") ||
		resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("GET /inspect/: Content-Security-Policy %q, X-Frame-Options %q", csp, resp.Header.Get("X-Frame-Options"))
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1200, 800))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	var requests urlLog
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf), chromedp.WithListener(requests.add))
	defer cancel()
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// The browser starts with the first Do, on ctx itself.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1200, 800)); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}

	run("log in", chromedp.Navigate(api+"/inspect/"), chromedp.WaitVisible(chromedp.ID("login-form")),
		chromedp.SendKeys(chromedp.ID("token"), d.Token), chromedp.Click(chromedp.CSS("#login-form button")),
		chromedp.WaitVisible(chromedp.ID("user-form")),
		chromedp.SendKeys(chromedp.ID("user-id"), inspectUser), chromedp.Click(chromedp.CSS("#user-form button")),
		chromedp.WaitVisible(chromedp.CSS("#conversations li:nth-child(2) a")))
	// Conversations are listed by id: the HTML one sorts first.
	requireText(t, ctx, "#conversations li:nth-child(1) a", xssConv)
	requireText(t, ctx, "#conversations li:nth-child(2) a", inspectConv)

	run("open the conversation with the HTML id", chromedp.Click(chromedp.CSS("#conversations li:nth-child(1) a")))
	waitFor(t, ctx, `document.querySelectorAll("#archive tbody tr").length > 0`)
	requireText(t, ctx, "#conv-title", xssConv)
	if ran := evaluate[bool](t, ctx, `window.__xss !== undefined || document.querySelectorAll("img, main script").length > 0`); ran {
		t.Error("the HTML of the conversation id was parsed: an element was made or its script ran")
	}

	run("open the long conversation", chromedp.Click(chromedp.ID("back")), chromedp.WaitVisible(chromedp.CSS("#conversations li:nth-child(2) a")),
		chromedp.Click(chromedp.CSS("#conversations li:nth-child(2) a")))
	waitFor(t, ctx, `document.getElementById("conv-title").textContent === `+strconv.Quote(inspectConv)+
		` && document.getElementById("archive-summary").textContent !== "" && document.querySelectorAll("#rejections tbody tr td").length > 1`)
	requireContains(t, ctx, "#message", inspectConstraint)
	requireContains(t, ctx, "#archive tbody tr:first-child", inspectConstraint)
	requireContains(t, ctx, "#archive tbody tr:first-child", "shown as user")
	requireContains(t, ctx, "#rejections", "prefix_mismatch")
	// The correction, what it replaced, and why the older entry is left out.
	requireContains(t, ctx, "#corrections", inspectCorrection)
	requireContains(t, ctx, "#corrections", inspectPlanned)
	planned := evaluate[string](t, ctx, `Array.from(document.querySelectorAll("#archive tbody tr")).map((r) => r.textContent).find((r) => r.includes(`+
		strconv.Quote(inspectPlanned)+`)) || ""`)
	if !strings.Contains(planned, "superseded by message") {
		t.Errorf("the planned entry's row says %q, want it superseded", planned)
	}

	run("search", chromedp.SendKeys(chromedp.ID("query"), "when may we deploy the billing service?"),
		chromedp.Click(chromedp.CSS("#search-form button")))
	waitFor(t, ctx, `document.querySelectorAll("#search-result li").length > 0`)
	requireContains(t, ctx, "#search-result", "never deploy the billing service")

	if path := os.Getenv("RECALL_SCREENSHOT"); path != "" {
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote the screenshot %s (%d bytes)", path, len(png))
	}

	// A user's token, even the user's own, from the address's fragment, in
	// a tab of its own (its own session storage): the 403 page, no data.
	userCtx, cancelUser := chromedp.NewContext(ctx, chromedp.WithListener(requests.add))
	defer cancelUser()
	own := sign(t, devSecret(t, d.dataDir), inspectUser, time.Hour)
	sctx, cancelStep := context.WithTimeout(userCtx, 30*time.Second)
	defer cancelStep()
	err = chromedp.Do(sctx, chromedp.Navigate(api+"/inspect/#"+url.Values{"user": {inspectUser}, "token": {own}}.Encode()),
		chromedp.WaitVisible(chromedp.ID("forbidden")))
	if err != nil {
		t.Fatalf("a user's token: %v", err)
	}
	body := evaluate[string](t, userCtx, `document.body.innerText`)
	if strings.Contains(body, inspectConv) || strings.Contains(body, "billing") {
		t.Errorf("the page shows a user's token data:\n%s", body)
	}
	if href := evaluate[string](t, userCtx, `location.href`); strings.Contains(href, own) {
		t.Errorf("the token stayed in the address: %s", href)
	}

	for _, u := range requests.urls() {
		if strings.Contains(u, d.Token) || strings.Contains(u, own) {
			t.Errorf("the browser sent a token in a URL: %s", u)
		}
		if !strings.HasPrefix(u, api+"/") && !strings.HasPrefix(u, "data:") {
			t.Errorf("the page requested %s, outside the API", u)
		}
	}
	cancelUser()
	cancel()
	d.interrupt()
}

// inspectHistory returns a conversation of about n messages whose first
// message states inspectConstraint and whose last asks what to do next.
func inspectHistory(n int) []map[string]string {
	h := []map[string]string{{"role": "user", "content": inspectConstraint}, {"role": "assistant", "content": "Noted: no billing deploys on Fridays."},
		{"role": "user", "content": inspectPlanned}, {"role": "assistant", "content": "Booked the hall for 40."}}
	topics := []string{"the landing page copy", "the pricing table", "the support rota", "the press kit", "the onboarding emails", "the status page"}
	for i := 0; len(h) < n-3; i++ {
		if i == 20 {
			h = append(h, map[string]string{"role": "user", "content": inspectCorrection}, map[string]string{"role": "assistant", "content": "Updated the booking."})
		}
		topic := topics[i%len(topics)]
		h = append(h,
			map[string]string{"role": "user", "content": fmt.Sprintf("Draft %d of %s is ready for review by Anna.", i, topic)},
			map[string]string{"role": "assistant", "content": fmt.Sprintf("I read draft %d of %s; two typos are left.", i, topic)})
	}
	return append(h, map[string]string{"role": "user", "content": "What should we do next for the launch?"})
}

// checkpointEvent returns a snapshot event of conv of inspectUser.
func checkpointEvent(eventID, conv string, history []map[string]string) []byte {
	msgs := make([]map[string]string, len(history))
	for i, m := range history {
		msgs[i] = map[string]string{"id": "m" + strconv.Itoa(i), "role": m["role"], "content": m["content"]}
	}
	b, _ := json.Marshal(map[string]any{"schema": "recall.checkpoint.v1", "kind": "snapshot", "event_id": eventID,
		"user_id": inspectUser, "conversation_id": conv, "offset": 0, "prefix_digest": nil, "messages": msgs})
	return b
}

// publishAndWait posts a snapshot through the HTTP ingest and waits until
// its evidence is in.
func publishAndWait(t *testing.T, d *devProc, eventID, conv string, history []map[string]string) {
	t.Helper()
	api := strings.TrimRight(d.APIURL, "/")
	if status, body := postJSON(t, api+"/v1/checkpoints", d.Token, checkpointEvent(eventID, conv, history)); status != http.StatusAccepted {
		t.Fatalf("POST %s: %d %s", eventID, status, body)
	}
	status, body := get(t, evidenceURL(api, inspectUser, conv)+"?min_cursor="+strconv.Itoa(len(history)-1)+"&wait=30s", d.Token)
	if status != http.StatusOK || !strings.Contains(string(body), `"cursor":`+strconv.Itoa(len(history)-1)) {
		t.Fatalf("the evidence of %s: %d %s", eventID, status, body)
	}
}

// urlLog records the URLs of the requests a browser tab sends.
type urlLog struct {
	mu   sync.Mutex
	list []string
}

func (l *urlLog) add(ev any) {
	if e, ok := ev.(*network.EventRequestWillBeSent); ok {
		l.mu.Lock()
		l.list = append(l.list, e.Request.URL)
		l.mu.Unlock()
	}
}

func (l *urlLog) urls() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.list...)
}

// evaluate evaluates expr in the page. DevTools evaluation is not subject to
// the page's Content-Security-Policy.
func evaluate[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor waits up to 30s until expr is true in the page.
func waitFor(t *testing.T, ctx context.Context, expr string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !evaluate[bool](t, ctx, expr); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the page never had %s; it shows:\n%s", expr, evaluate[string](t, ctx, `document.body.innerText`))
		}
	}
}

// requireText checks the text of the element sel selects.
func requireText(t *testing.T, ctx context.Context, sel, want string) {
	t.Helper()
	if got := evaluate[string](t, ctx, `document.querySelector(`+strconv.Quote(sel)+`).textContent`); got != want {
		t.Errorf("%s shows %q, want %q", sel, got, want)
	}
}

// requireContains checks that the text of the element sel selects holds
// want.
func requireContains(t *testing.T, ctx context.Context, sel, want string) {
	t.Helper()
	if got := evaluate[string](t, ctx, `document.querySelector(`+strconv.Quote(sel)+`).textContent`); !strings.Contains(got, want) {
		t.Errorf("%s does not show %q; it shows:\n%s", sel, want, got)
	}
}
