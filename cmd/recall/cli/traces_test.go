package cli

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/recallhq/recall/internal/apiclient"
	"github.com/recallhq/recall/internal/telemetry"
	"github.com/recallhq/recall/jobs"
	"github.com/recallhq/recall/publisher"
	"github.com/recallhq/recall/testutil/natstest"
	"github.com/recallhq/recall/testutil/pgtest"
	"github.com/recallhq/recall/worker"
)

// The API spans of the test's reads, named after their routes.
const (
	spanRead   = "GET /v1/users/{user_id}/conversations/{conversation_id}/evidence"
	spanSearch = "POST /v1/users/{user_id}/conversations/{conversation_id}/evidence/search"
)

// TestTurnIsOneTrace runs `recall run` with an in-memory span exporter,
// real NATS and Postgres, publishes a turn with the Go publisher inside an
// agent's span, and reads its evidence (and searches it) with the turn's
// traceparent. The turn is one trace: publish → worker batch (also linked
// to the publish span) → River insert → River work → extraction → its SQL,
// and the API read and search with their SQL. No attribute, link, event or
// name holds the message text, the search query or the conversation id.
func TestTurnIsOneTrace(t *testing.T) {
	t.Parallel()
	tr := startTraced(t)
	exp, tp, ns, cfg, a := tr.exp, tr.tp, tr.ns, tr.cfg, tr.a

	_, js := natstest.Connect(t, ns.URL())
	pub, err := publisher.New(js, publisher.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}

	// Words that appear only in the messages and the query.
	secrets := []string{"Friday", "billing", "Understood", "rollout", "weekday", "forbidden", "c-traced"}
	history := []publisher.Message{
		{ID: "m0", Role: "user", Content: "We must never deploy the billing service on a Friday afternoon."},
		{ID: "m1", Role: "assistant", Content: "Understood: no Friday deploys of billing."},
		{ID: "m2", Role: "user", Content: "Draft the rollout plan for Tuesday."},
	}
	ctx, turn := tp.Tracer("agent").Start(t.Context(), "agent turn")
	if _, err := pub.PublishMessages(ctx, "u-traced", "c-traced", history); err != nil {
		t.Fatal(err)
	}
	tok, err := apiclient.Sign([]byte(cfg.JWTSecret), "u-traced", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + a.Addr + "/v1/users/u-traced/conversations/c-traced/evidence"
	body := tracedRequest(ctx, t, tok, http.MethodGet, base+"?min_cursor=2&wait=20s", "")
	if !strings.Contains(body, "Friday") || strings.Contains(body, `"lagging":true`) {
		t.Fatalf("the evidence of the turn is not in: %s", body)
	}
	// A read that waits shares the database reads of the requests waiting
	// on its conversation, which are no one request's: a plain read's SQL
	// runs under its span.
	tracedRequest(ctx, t, tok, http.MethodGet, base, "")
	tracedRequest(ctx, t, tok, http.MethodPost, base+"/search", `{"query":"which weekday is forbidden for deploys?"}`)
	turn.End()

	id := turn.SpanContext().TraceID()
	// The work span ends just after the extraction commits, which the read
	// may have seen first, and a server span just after its answer.
	var spans tracetest.SpanStubs
	for deadline := time.Now().Add(10 * time.Second); ; {
		spans = exp.GetSpans()
		if len(named(spans, id, jobs.SpanWork)) > 0 && len(named(spans, id, spanSearch)) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}

	one := func(name string) tracetest.SpanStub {
		t.Helper()
		found := named(spans, id, name)
		if len(found) != 1 {
			t.Fatalf("%d spans %q in the turn's trace %s, want 1; the trace holds %v", len(found), name, id, names(spans, id))
		}
		return found[0]
	}
	publish, batch := one(publisher.SpanPublish), one(worker.SpanBatch)
	insert, work, extract := one(jobs.SpanInsert), one(jobs.SpanWork), one(jobs.SpanExtract)
	search := one(spanSearch)
	reads := named(spans, id, spanRead)
	if len(reads) != 2 {
		t.Fatalf("%d spans %q in the turn's trace, want 2 (the wait and the plain read)", len(reads), spanRead)
	}
	read := reads[1]
	for _, c := range []struct {
		child, parent tracetest.SpanStub
	}{
		{publish, tracetest.SpanStub{Name: "agent turn", SpanContext: turn.SpanContext()}},
		{batch, publish}, {insert, batch}, {work, insert}, {extract, work},
		{reads[0], tracetest.SpanStub{Name: "agent turn", SpanContext: turn.SpanContext()}},
		{read, tracetest.SpanStub{Name: "agent turn", SpanContext: turn.SpanContext()}},
		{search, tracetest.SpanStub{Name: "agent turn", SpanContext: turn.SpanContext()}},
	} {
		if c.child.Parent.SpanID() != c.parent.SpanContext.SpanID() {
			t.Errorf("span %q: parent %s, want %q (%s)", c.child.Name, c.child.Parent.SpanID(), c.parent.Name, c.parent.SpanContext.SpanID())
		}
	}
	if len(batch.Links) != 1 || batch.Links[0].SpanContext.SpanID() != publish.SpanContext.SpanID() {
		t.Errorf("the batch span's links %v, want one to the publish span %s", batch.Links, publish.SpanContext.SpanID())
	}
	for _, parent := range []tracetest.SpanStub{extract, read, search} {
		if !hasSQLChild(spans, parent) {
			t.Errorf("no SQL span under %q; the trace holds %v", parent.Name, names(spans, id))
		}
	}

	// Nothing of the conversation's text, the query or its ids in any
	// span, of this trace or any other.
	for _, s := range spans {
		for _, v := range spanTexts(s) {
			for _, secret := range secrets {
				if strings.Contains(v, secret) {
					t.Errorf("span %q holds %q: %q", s.Name, secret, v)
				}
			}
		}
	}
}

// TestHTTPIngestIsTraced: an event posted to /v1/checkpoints with a
// traceparent carries the request's trace into the stream, and the worker's
// batch continues it.
func TestHTTPIngestIsTraced(t *testing.T) {
	t.Parallel()
	tr := startTraced(t)
	exp, tp, cfg, a := tr.exp, tr.tp, tr.cfg, tr.a
	tok, err := apiclient.Sign([]byte(cfg.JWTSecret), "u-http", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}

	ctx, turn := tp.Tracer("agent").Start(t.Context(), "agent turn")
	tracedRequest(ctx, t, tok, http.MethodPost, "http://"+a.Addr+"/v1/checkpoints", `{"schema":"recall.checkpoint.v1","kind":"snapshot",`+
		`"event_id":"e-http-1","user_id":"u-http","conversation_id":"c-http","offset":0,"prefix_digest":null,`+
		`"messages":[{"id":"m0","role":"user","content":"Keep the Friday freeze."}]}`)
	turn.End()
	id := turn.SpanContext().TraceID()
	var spans tracetest.SpanStubs
	for deadline := time.Now().Add(10 * time.Second); len(named(spans, id, worker.SpanBatch)) == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		spans = exp.GetSpans()
	}
	posts, batches := named(spans, id, "POST /v1/checkpoints"), named(spans, id, worker.SpanBatch)
	if len(posts) != 1 || len(batches) != 1 {
		t.Fatalf("the trace holds %v, want one POST /v1/checkpoints and one %s", names(spans, id), worker.SpanBatch)
	}
	if batches[0].Parent.SpanID() != posts[0].SpanContext.SpanID() {
		t.Errorf("the batch's parent is %s, want the POST's span %s", batches[0].Parent.SpanID(), posts[0].SpanContext.SpanID())
	}
}

// tracedRequest sends a request with ctx's traceparent and returns the
// body of its 200 (or 202) answer.
func tracedRequest(ctx context.Context, t *testing.T, tok, method, url, body string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusAccepted {
		t.Fatalf("%s %s: %d %s", method, url, res.StatusCode, b)
	}
	return string(b)
}

// named returns the spans of trace id called name.
func named(spans tracetest.SpanStubs, id trace.TraceID, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.SpanContext.TraceID() == id && s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// names lists the names of trace id's spans, for failures.
func names(spans tracetest.SpanStubs, id trace.TraceID) []string {
	var out []string
	for _, s := range spans {
		if s.SpanContext.TraceID() == id {
			out = append(out, s.Name)
		}
	}
	return out
}

// hasSQLChild reports whether a Postgres span is a child of parent.
func hasSQLChild(spans tracetest.SpanStubs, parent tracetest.SpanStub) bool {
	for _, s := range spans {
		if s.Parent.SpanID() != parent.SpanContext.SpanID() {
			continue
		}
		for _, kv := range s.Attributes {
			if kv.Key == "db.system.name" && kv.Value.AsString() == "postgresql" {
				return true
			}
		}
	}
	return false
}

// spanTexts returns every text a span carries: its name, status, and the
// values of its attributes and those of its links and events.
func spanTexts(s tracetest.SpanStub) []string {
	out := []string{s.Name, s.Status.Description}
	for _, kv := range s.Attributes {
		out = append(out, kv.Value.String())
	}
	for _, l := range s.Links {
		for _, kv := range l.Attributes {
			out = append(out, kv.Value.String())
		}
	}
	for _, e := range s.Events {
		out = append(out, e.Name)
		for _, kv := range e.Attributes {
			out = append(out, kv.Value.String())
		}
	}
	return out
}

// TestTracesOffByDefault: with no OTEL_* variable set, recall run installs
// nothing: no tracer provider (its own or the global one), no SQL tracer.
func TestTracesOffByDefault(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	cfg := runConfig(pgtest.NewDatabase(t), ns.URL())
	cfg.getenv = func(string) string { return "" }
	a := startApp(t, cfg, roles{worker: true, api: true})
	if a.tp != nil || a.tracing != nil {
		t.Errorf("traces are on with no OTEL_* variable: %T", a.tp)
	}
	if a.pool.Config().ConnConfig.Tracer != nil || a.apiPool.Config().ConnConfig.Tracer != nil {
		t.Error("the pools trace their queries with no OTEL_* variable")
	}
	if _, ok := otel.GetTracerProvider().(*sdktrace.TracerProvider); ok {
		t.Error("the global tracer provider is an SDK provider")
	}
}

// startTraced starts recall (worker and API) on a fresh database and a
// NATS server of its own, with its spans going to the returned in-memory
// exporter; both stop when the test ends.
func startTraced(t *testing.T) traced {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp, err := telemetry.NewProvider(t.Context(), sdktrace.WithSyncer(exp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ns := natstest.Start(t)
	cfg := runConfig(pgtest.NewDatabase(t), ns.URL())
	cfg.tracerProvider = tp
	a := startApp(t, cfg, roles{worker: true, api: true})
	return traced{exp: exp, tp: tp, ns: ns, cfg: cfg, a: a}
}

// traced is a recall that startTraced started, and what it was started with.
type traced struct {
	exp *tracetest.InMemoryExporter
	tp  *sdktrace.TracerProvider
	ns  *natstest.Server
	cfg *config
	a   *app
}
