package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/store"
)

// fork returns history(n) with the messages from index from on replaced by
// others of the same roles: a history that diverges at from.
func fork(n, from int) []json.RawMessage {
	h := history(n)
	for i := from; i < n; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		h[i], _ = json.Marshal(map[string]string{"id": fmt.Sprintf("f%d", i), "role": role, "content": fmt.Sprintf("we must drop point %d", i)})
	}
	return h
}

// pausedFold runs an extraction of u/c that stops after its fold, before
// it writes, until release is closed; folded is closed once it stopped there.
type pausedFold struct {
	folded, release chan struct{}
	done            chan error
	resume          func()
}

func (tb *testBundle) pauseFold(t *testing.T) *pausedFold {
	t.Helper()
	p := &pausedFold{folded: make(chan struct{}), release: make(chan struct{}), done: make(chan error, 1)}
	p.resume = sync.OnceFunc(func() { close(p.release) })
	t.Cleanup(p.resume) // a test that fails lets the extraction end
	first := true
	store.SetFoldedHook(tb.store, func() {
		if first { // only the first attempt stops: a retry folds at once
			first = false
			close(p.folded)
			<-p.release
		}
	})
	go func() {
		_, err := tb.store.Extract(context.Background(), "u", "c")
		p.done <- err
	}()
	select {
	case <-p.folded:
	case err := <-p.done:
		t.Fatalf("the extraction ended before its fold: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the extraction did not reach the end of its fold")
	}
	return p
}

func (p *pausedFold) finish(t *testing.T) {
	t.Helper()
	p.resume()
	if err := <-p.done; err != nil {
		t.Fatal(err)
	}
}

// TestIngestDuringFold: ingest records a conversation's events while an
// extraction of it is between its first read and its write (holding the
// extraction lock, with the archive rows it wrote): ingest neither waits
// for the fold nor is lost by it. An event that replaces the messages the
// fold read makes the extraction fold again; one that extends them is
// left for the next extraction, which the first enqueues. A deletion
// waits for the extraction, and does not deadlock with it.
func TestIngestDuringFold(t *testing.T) {
	t.Parallel()
	tb := setup(t, time.Minute)
	ingest := func(ev *checkpoint.Event) store.Result {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		res, err := tb.store.IngestBatch(ctx, []store.BatchEvent{{Event: ev}})
		if err != nil {
			t.Fatalf("ingest %s while an extraction folds: %v", ev.EventID, err)
		}
		return res[0]
	}
	h := history(5)
	f := fork(13, 1)
	tb.ingest(t, snapshot(t, "e1", h))

	// 1. A longer snapshot that diverges inside the messages being folded.
	p := tb.pauseFold(t)
	if res := ingest(snapshot(t, "e2", f[:7])); res.Outcome != checkpoint.Accepted {
		t.Fatalf("diverging snapshot during the fold: %+v, want accepted", res)
	}
	p.finish(t)
	tb.requireOracle(t, f[:7])

	// 2. An event that extends the history the fold read.
	if res := tb.ingest(t, snapshot(t, "e3", f[:9])); !res.Enqueued {
		t.Fatalf("e3: %+v, want an enqueued extraction", res)
	}
	jobs := tb.enqueued()
	p = tb.pauseFold(t)
	if res := ingest(snapshot(t, "e4", f[:11])); res.Outcome != checkpoint.Accepted || res.Enqueued {
		t.Fatalf("extension during the fold: %+v, want accepted, absorbed by the pending extraction", res)
	}
	p.finish(t)
	tb.requireOracle(t, f[:9])
	if n := tb.enqueued(); n != jobs+1 {
		t.Fatalf("%d extraction jobs enqueued after the fold, want 1 for the request it did not fold", n-jobs)
	}
	if _, err := tb.store.Extract(t.Context(), "u", "c"); err != nil {
		t.Fatal(err)
	}
	tb.requireOracle(t, f[:11])

	// 3. A deletion during a fold waits for the extraction.
	tb.ingest(t, snapshot(t, "e5", f))
	p = tb.pauseFold(t)
	deleted := make(chan error, 1)
	go func() { deleted <- tb.store.DeleteConversation(context.Background(), "u", "c") }()
	select {
	case err := <-deleted:
		t.Fatalf("the deletion ended while the extraction folded: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	p.finish(t)
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	rec, err := tb.store.Evidence(t.Context(), "u", "c")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Version != 0 || rec.Body != nil {
		t.Fatalf("after the deletion: version %d, body %q, want none", rec.Version, rec.Body)
	}
}

// TestExtractRacesIngest ingests random batches (extensions, forks that
// replace the unsummarised tail, stale and bad events, deletes) while two
// goroutines extract the same conversations over and over, so that folds
// meet ingests at every point. At the end each conversation's state must
// be the fold of the one history it holds: an extraction never summarises
// messages that were replaced while it folded, and never loses a request.
func TestExtractRacesIngest(t *testing.T) {
	t.Parallel()
	tb := setup(t, time.Minute)
	g := newBatchGen(29)
	var attempts, applied atomic.Int64
	store.SetFoldedHook(tb.store, func() { attempts.Add(1) })
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				k := g.keys[rng.IntN(len(g.keys))]
				res, err := tb.store.Extract(context.Background(), k[0], k[1])
				if err != nil {
					t.Errorf("extract %v: %v", k, err)
					return
				}
				if res.Outcome == checkpoint.Applied {
					applied.Add(1)
				}
			}
		})
	}
	for round := range 80 {
		batch := make([]store.BatchEvent, 1+g.rng.IntN(8))
		for i := range batch {
			ev, payload := g.event(t)
			batch[i] = store.BatchEvent{Event: ev, Meta: store.Meta{Stream: "S", StreamSeq: g.seq, Payload: payload}}
		}
		if _, err := tb.store.IngestBatch(t.Context(), batch); err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("round %d: IngestBatch: %v", round, err)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d extractions applied, %d folds finished", applied.Load(), attempts.Load())

	for _, k := range g.keys {
		for range 5 {
			res, err := tb.store.Extract(t.Context(), k[0], k[1])
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != checkpoint.Applied {
				break
			}
		}
		var count int
		var deleted bool
		if err := tb.pool.QueryRow(t.Context(), `SELECT message_count, deleted_at IS NOT NULL FROM recall_conversation
WHERE user_id = $1 AND conversation_id = $2`, k[0], k[1]).Scan(&count, &deleted); err != nil {
			t.Fatalf("%v: %v", k, err)
		}
		rec, err := tb.store.Evidence(t.Context(), k[0], k[1])
		if err != nil {
			t.Fatal(err)
		}
		if deleted {
			if rec.Body != nil {
				t.Errorf("%v: deleted, but its evidence is still served", k)
			}
			continue
		}
		got, err := rec.State()
		if err != nil {
			t.Fatal(err)
		}
		gj, _ := json.Marshal([]any{got.Cursor, got.PrefixDigest, got.OmittedEntries, got.Buckets})
		// The history held is a prefix of one of those generated.
		matched := false
		for _, h := range g.hists[k] {
			if len(h) < count {
				continue
			}
			want := oracle(t, h[:count])
			wj, _ := json.Marshal([]any{want.Cursor, want.PrefixDigest, want.OmittedEntries, want.Buckets})
			if string(gj) == string(wj) {
				matched = true
				break
			}
		}
		if !matched {
			t.Errorf("%v: the state (%d messages held, cursor %d) is the fold of none of the histories generated:\n%s", k, count, got.Cursor, gj)
		}
	}
}
