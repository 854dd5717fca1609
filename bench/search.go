package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/store"
)

// SearchPath says how the search scenario builds its conversations and
// times its turns.
const SearchPath = "events parsed and handed to store.Ingest then store.Extract directly (no NATS, no River)"

// searchScenario is the search scenario: one conversation whose focus
// archive holds many thousand entries (20,000 in full and quick runs), built
// in a few large events; the cost of an append turn on it beside one on a
// conversation of 10 messages, alternating; then POST …/evidence/search
// from concurrent loopback clients with queries drawn from the
// conversation's vocabulary, beside GET …/evidence of the same conversation
// by the same clients, alternating rounds.
func (e *env) searchScenario(ctx context.Context, res *Result) error {
	// Nothing else runs while it is measured.
	if err := e.stopPipeline(); err != nil {
		return err
	}
	st, err := store.New(e.pool, &store.Config{Logger: e.logger, Jobs: discardJobs{}})
	if err != nil {
		return err
	}
	gen := newChatter(1)
	big := &directConv{e: e, st: st, userID: "search-big", conversationID: "c", gen: gen}
	start := time.Now()
	if err := big.build(ctx, e.sz.searchEntries); err != nil {
		return err
	}
	entries, err := big.archiveCount(ctx)
	if err != nil {
		return err
	}
	if entries < e.sz.searchEntries {
		return fmt.Errorf("the archive holds %d entries, want at least %d", entries, e.sz.searchEntries)
	}
	e.progress("search: archive of %d entries from %d messages built in %.1fs", entries, big.length, time.Since(start).Seconds())
	// A running service's tables have statistics (autovacuum analyzes a
	// table after a bulk of changes); the planner's choices depend on them.
	if _, err := e.pool.Exec(ctx, `ANALYZE recall_archive, recall_conversation`); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}

	small := &directConv{e: e, st: st, userID: "search-small", conversationID: "c", gen: gen}
	if err := small.grow(ctx, 9, 9); err != nil {
		return err
	}
	for k := range e.sz.costWarm + e.sz.searchTurns {
		// Alternate which goes first, so that neither always follows the
		// other's commit.
		pair := [2]*directConv{big, small}
		if k%2 == 1 {
			pair[0], pair[1] = small, big
		}
		for _, c := range pair {
			if err := c.turn(ctx, k >= e.sz.costWarm); err != nil {
				return err
			}
		}
	}
	res.SearchPath = SearchPath
	res.SearchArchiveEntries = entries
	res.SearchMessages = big.length
	res.Append20kArchiveMs, res.Append10MessagesMs = ms(medianDuration(big.times)), ms(medianDuration(small.times))
	res.AppendCostRatio20kArchive = res.Append20kArchiveMs / res.Append10MessagesMs
	e.progress("search: append turn %.2f ms at an archive of %d entries, %.2f ms at 10 messages: ratio %.2f",
		res.Append20kArchiveMs, entries, res.Append10MessagesMs, res.AppendCostRatio20kArchive)

	if res.SearchPlan, err = e.explainCandidates(ctx, big, "deadline budget schema"); err != nil {
		return err
	}
	return e.searchLoad(ctx, st, big, res)
}

// searchLoad measures POST …/evidence/search and GET …/evidence of big.
func (e *env) searchLoad(ctx context.Context, st *store.Store, big *directConv, res *Result) error {
	srv, err := e.startAPI(ctx, st)
	if err != nil {
		return err
	}
	defer srv.close()
	token := srv.token(big.userID)
	clients := e.sz.searchClients
	hc := newHTTPClient(2 * clients)
	defer hc.CloseIdleConnections()

	// An entry from the archive's first event must be found by its name.
	probe := big.gen.name(3)
	body, err := searchOnce(ctx, hc, srv.url, big, token, probe)
	if err != nil {
		return err
	}
	if !bytes.Contains(body, []byte(probe)) {
		return fmt.Errorf("a search for the name of the archive's third sentence does not show it")
	}

	queries := big.gen.queries(512)
	bodies := make([][]byte, len(queries))
	for i, q := range queries {
		bodies[i], _ = json.Marshal(map[string]string{"query": q})
	}
	searchURL := evidenceURL(srv.url, big.userID, big.conversationID) + "/search"
	getURL := evidenceURL(srv.url, big.userID, big.conversationID)
	search := func(g, i int) *http.Request {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, searchURL, bytes.NewReader(bodies[(g*131+i)%len(bodies)]))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		return req
	}
	get := func(int, int) *http.Request {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, getURL, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		return req
	}
	warm := min(e.sz.readDuration, 500*time.Millisecond)
	if _, err := httpLoad(ctx, hc, clients, warm, get); err != nil {
		return fmt.Errorf("get: %w", err)
	}
	if _, err := httpLoad(ctx, hc, clients, warm, search); err != nil {
		return fmt.Errorf("search: %w", err)
	}
	var searched, got []time.Duration
	var searchTime, getTime time.Duration
	for round := range e.sz.readRounds {
		g, err := httpLoad(ctx, hc, clients, e.sz.readDuration, get)
		if err != nil {
			return fmt.Errorf("get: %w", err)
		}
		s, err := httpLoad(ctx, hc, clients, e.sz.readDuration, search)
		if err != nil {
			return fmt.Errorf("search: %w", err)
		}
		searched, got = append(searched, s.latencies...), append(got, g.latencies...)
		searchTime, getTime = searchTime+s.elapsed, getTime+g.elapsed
		e.progress("search round %d/%d: search %.0f req/s p99 %.2f ms; get %.0f req/s p99 %.2f ms",
			round+1, e.sz.readRounds, s.rps(), ms(percentile(s.latencies, 0.99)), g.rps(), ms(percentile(g.latencies, 0.99)))
	}
	slices.Sort(searched)
	slices.Sort(got)
	res.SearchClients = clients
	res.SearchRequests = len(searched)
	res.SearchP50Ms, res.SearchP99Ms = ms(percentile(searched, 0.5)), ms(percentile(searched, 0.99))
	res.SearchRequestsPerS = float64(len(searched)) / searchTime.Seconds()
	res.SearchBaselineGetP50Ms, res.SearchBaselineGetP99Ms = ms(percentile(got, 0.5)), ms(percentile(got, 0.99))
	res.SearchBaselineGetRequestsPerS = float64(len(got)) / getTime.Seconds()

	// The same clients at half the rate they reached, each request sent at
	// its time: the latency a service sees below its limit.
	res.SearchPacedRate = res.SearchRequestsPerS / 2
	paced, err := httpPaced(ctx, hc, clients, res.SearchPacedRate, time.Duration(e.sz.readRounds)*e.sz.readDuration, search)
	if err != nil {
		return fmt.Errorf("paced search: %w", err)
	}
	res.SearchPacedP50Ms, res.SearchPacedP99Ms = ms(percentile(paced.latencies, 0.5)), ms(percentile(paced.latencies, 0.99))
	e.progress("search at %.0f req/s from %d clients, paced: p50 %.2f ms, p99 %.2f ms", res.SearchPacedRate, clients, res.SearchPacedP50Ms, res.SearchPacedP99Ms)
	return nil
}

// searchOnce posts one search and returns the response body.
func searchOnce(ctx context.Context, client *http.Client, base string, c *directConv, token, query string) ([]byte, error) {
	b, _ := json.Marshal(map[string]string{"query": query})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, evidenceURL(base, c.userID, c.conversationID)+"/search", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	if _, err := out.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("search: status %d: %s", resp.StatusCode, out.Bytes())
	}
	return out.Bytes(), nil
}

// directConv is a conversation of the search scenario, written through
// the store without NATS or River: each event is parsed as the worker
// parses it, ingested and extracted.
type directConv struct {
	e                      *env
	st                     *store.Store
	userID, conversationID string
	gen                    *chatter

	length int               // messages held
	chain  checkpoint.Digest // chain digest of the messages held
	times  []time.Duration   // of timed turns
}

// build writes at least entries sentences in four events, each ending with
// a request (whose own sentences stay unsummarised).
func (c *directConv) build(ctx context.Context, entries int) error {
	const events, perMessage = 4, 5 // sentences per message, on average
	msgs := entries/perMessage + entries/(10*perMessage) + 2
	msgs += 1 - msgs%2 // odd: the history ends with a request
	per := (msgs/events + 1) &^ 1
	for c.length < msgs {
		n := min(per, msgs-c.length)
		if (c.length+n)%2 == 0 {
			n++ // each event ends with a request
		}
		if err := c.grow(ctx, n, 0); err != nil {
			return err
		}
	}
	return nil
}

// grow sends n new messages as one event and extracts. With short > 0 the
// messages have one to short sentences, else three to seven.
func (c *directConv) grow(ctx context.Context, n, short int) error {
	_, err := c.send(ctx, n, short)
	return err
}

// turn sends a reply and a new request; timed turns are recorded.
func (c *directConv) turn(ctx context.Context, timed bool) error {
	d, err := c.send(ctx, 2, 3)
	if err != nil {
		return err
	}
	if timed {
		c.times = append(c.times, d)
	}
	return nil
}

// send appends n messages in one event, ingests and extracts it, and returns
// the time from parsing the event to the extraction's commit.
func (c *directConv) send(ctx context.Context, n, short int) (time.Duration, error) {
	lo, hi := 3, 7
	if short > 0 {
		lo, hi = 1, short
	}
	c.gen.next = c.length // the chatter writes both conversations
	msgs := make([]json.RawMessage, n)
	for i := range msgs {
		msgs[i] = c.gen.message(lo, hi)
	}
	var prefix *checkpoint.Digest
	if c.length > 0 {
		prefix = &c.chain
	} else {
		c.chain = checkpoint.ChainStart()
	}
	data := encodeEvent(c.e.ids.next(), c.userID, c.conversationID, c.length, prefix, msgs)

	start := time.Now()
	ev, err := checkpoint.ParseEvent(data, checkpoint.Limits{})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", c.userID, err)
	}
	ing, err := c.st.Ingest(ctx, ev, store.Meta{Stream: "recall-bench-direct", StreamSeq: directSeq.Add(1), PublishedAt: start})
	if err != nil {
		return 0, fmt.Errorf("%s: ingest: %w", c.userID, err)
	}
	if ing.Outcome != checkpoint.Accepted {
		return 0, fmt.Errorf("%s: an event at offset %d was %s, not accepted", c.userID, c.length, ing.Outcome)
	}
	ext, err := c.st.Extract(ctx, c.userID, c.conversationID)
	if err != nil {
		return 0, fmt.Errorf("%s: extract: %w", c.userID, err)
	}
	d := time.Since(start)
	if ext.Outcome != checkpoint.Applied || ext.Cursor != ev.End()-1 {
		return 0, fmt.Errorf("%s: extraction %s to cursor %d, want %d", c.userID, ext.Outcome, ext.Cursor, ev.End()-1)
	}
	for _, dg := range ev.Digests {
		c.chain = c.chain.Next(dg)
	}
	c.length = ev.End()
	return d, nil
}

func (c *directConv) archiveCount(ctx context.Context) (int, error) {
	var n int
	err := c.e.pool.QueryRow(ctx, `SELECT archive_count FROM recall_conversation WHERE user_id = $1 AND conversation_id = $2`,
		c.userID, c.conversationID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("read the archive's size: %w", err)
	}
	return n, nil
}

// explainCandidates runs one search for query through a store whose pool
// catches the statement that reads the candidates, then EXPLAIN ANALYZE of
// that statement with the same arguments, and returns the plan's gist: each
// scan with its index and the rows it returned, each sort, and the
// execution time.
func (e *env) explainCandidates(ctx context.Context, c *directConv, query string) ([]string, error) {
	pcfg, err := pgxpool.ParseConfig(e.dbURL)
	if err != nil {
		return nil, err
	}
	catch := &statementCatcher{marker: "term_hashes &&"}
	pcfg.ConnConfig.Tracer = catch
	pcfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	st, err := store.New(pool, nil)
	if err != nil {
		return nil, err
	}
	if _, err := st.Search(ctx, c.userID, c.conversationID, query); err != nil {
		return nil, err
	}
	sql, args := catch.caught()
	if sql == "" {
		return nil, errors.New("the search ran no statement over the term index")
	}
	rows, err := e.pool.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF) "+sql, args...)
	if err != nil {
		return nil, fmt.Errorf("explain the candidates query: %w", err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("explain the candidates query: %w", err)
	}
	return planGist(lines), nil
}

// planGist keeps of an EXPLAIN ANALYZE text plan its scans, sorts and
// execution time, each on one line without the timings of each loop.
func planGist(lines []string) []string {
	var out []string
	for _, l := range lines {
		t := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "->"))
		switch {
		case strings.HasPrefix(t, "Execution Time"), strings.HasPrefix(t, "Planning Time"):
			out = append(out, t)
		case strings.Contains(t, "Scan"), t == "Sort" || strings.HasPrefix(t, "Sort ("), strings.HasPrefix(t, "Incremental Sort ("):
			name, actual, _ := strings.Cut(t, " (")
			if _, rows, ok := strings.Cut(actual, "rows="); ok {
				rows, _, _ = strings.Cut(rows, " ")
				name += " → " + rows + " rows"
			} else if strings.HasPrefix(actual, "never executed") {
				name += " → never executed"
			}
			out = append(out, name)
		case strings.HasPrefix(t, "Rows Removed by Filter"), strings.HasPrefix(t, "Heap Blocks"), strings.HasPrefix(t, "Sort Method"):
			out = append(out, "  "+t)
		}
	}
	return out
}

// statementCatcher is a pgx tracer that keeps the first statement whose SQL
// holds marker, with its arguments, whether sent alone or in a batch.
type statementCatcher struct {
	marker string
	mu     sync.Mutex
	sql    string
	args   []any
}

func (s *statementCatcher) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.Contains(data.SQL, s.marker) {
		s.mu.Lock()
		if s.sql == "" {
			s.sql, s.args = data.SQL, data.Args
		}
		s.mu.Unlock()
	}
	return ctx
}

func (s *statementCatcher) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (s *statementCatcher) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (s *statementCatcher) TraceBatchQuery(ctx context.Context, conn *pgx.Conn, data pgx.TraceBatchQueryData) {
	s.TraceQueryStart(ctx, conn, pgx.TraceQueryStartData{SQL: data.SQL, Args: data.Args})
}

func (s *statementCatcher) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (s *statementCatcher) caught() (string, []any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sql, s.args
}
