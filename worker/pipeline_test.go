package worker_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/recallhq/recall/checkpoint"
	pt "github.com/recallhq/recall/testutil/pipelinetest"
)

type corpusConversation struct {
	UserID         string            `json:"user_id"`
	ConversationID string            `json:"conversation_id"`
	Messages       []json.RawMessage `json:"messages"`
}

// loadCorpus reads the sample conversations the repository ships
// (examples/conversations, the ones `recall publish --example` sends), so
// that the test needs nothing outside the checkout.
func loadCorpus(t *testing.T) []corpusConversation {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "examples", "conversations", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var convs []corpusConversation
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c corpusConversation
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		convs = append(convs, c)
	}
	if len(convs) < 2 {
		t.Fatalf("found %d sample conversations in examples/conversations, want 2", len(convs))
	}
	return convs
}

// turns returns the prefixes of msgs that end in a user message.
func turns(t *testing.T, msgs []json.RawMessage) [][]json.RawMessage {
	t.Helper()
	raw, _ := json.Marshal(msgs)
	decoded, err := checkpoint.DecodeMessages(raw)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]json.RawMessage
	for i := range decoded {
		if decoded[i].Role == checkpoint.RoleUser {
			out = append(out, msgs[:i+1])
		}
	}
	return out
}

func TestEndToEndGrowingSnapshots(t *testing.T) {
	t.Parallel()
	b := pt.New(t)
	b.StartWorker(4)
	convs := loadCorpus(t)
	for _, c := range convs {
		for i, prefix := range turns(t, c.Messages) {
			id := fmt.Sprintf("%s-%d", c.ConversationID, i)
			b.Publish(id, pt.Event(id, c.UserID, c.ConversationID, prefix))
		}
	}
	for _, c := range convs {
		want := pt.Oracle(t, c.Messages)
		rec := b.WaitCursor(c.UserID, c.ConversationID, want.Cursor, 15*time.Second)
		pt.RequireState(t, rec, want)
		if rec.MessageCount != len(c.Messages) {
			t.Errorf("%s: message_count %d, want %d", c.ConversationID, rec.MessageCount, len(c.Messages))
		}
	}
	if r := b.Rejections(); len(r) != 0 {
		t.Errorf("rejections: %v", r)
	}
}

// TestAtLeastOnce delivers the same history many times, under the same and
// under different event ids: no entry is duplicated and version does not
// move after the first application.
func TestAtLeastOnce(t *testing.T) {
	t.Parallel()
	b := pt.New(t)
	b.StartWorker(4)
	c := loadCorpus(t)[0]
	want := pt.Oracle(t, c.Messages)
	b.Publish("e0", pt.Event("e0", c.UserID, c.ConversationID, c.Messages))
	first := b.WaitCursor(c.UserID, c.ConversationID, want.Cursor, 10*time.Second)
	for i := range 20 {
		id := fmt.Sprintf("dup-%d", i%5) // repeated ids are deduplicated by JetStream too
		b.Publish(id, pt.Event(id, c.UserID, c.ConversationID, c.Messages))
	}
	// A marker event on another key, published last: once it is in, the
	// duplicates before it have been handled (one consumer, in order).
	b.Publish("marker", pt.Event("marker", c.UserID, "marker", c.Messages))
	b.WaitCursor(c.UserID, "marker", want.Cursor, 10*time.Second)
	time.Sleep(200 * time.Millisecond)
	rec, err := b.Store.Evidence(t.Context(), c.UserID, c.ConversationID)
	pt.Must(t, err)
	pt.RequireState(t, rec, want)
	if rec.Version != first.Version {
		t.Errorf("version moved from %d to %d on duplicates", first.Version, rec.Version)
	}
}

// TestShuffledAcrossWorkers publishes every growing snapshot of several
// conversations in random order to four workers at once: the final state of
// each equals the fold of its longest history.
func TestShuffledAcrossWorkers(t *testing.T) {
	t.Parallel()
	b := pt.New(t)
	for range 4 {
		b.StartWorker(4)
	}
	convs := loadCorpus(t)
	type pub struct {
		id   string
		data []byte
	}
	var pubs []pub
	for k := range 5 {
		for _, c := range convs {
			conv := fmt.Sprintf("%s-%d", c.ConversationID, k)
			for i, prefix := range turns(t, c.Messages) {
				id := fmt.Sprintf("%s-%d", conv, i)
				pubs = append(pubs, pub{id, pt.Event(id, c.UserID, conv, prefix)})
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(pubs), func(i, j int) { pubs[i], pubs[j] = pubs[j], pubs[i] })
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(pubs); i += 4 {
				b.Publish(pubs[i].id, pubs[i].data)
			}
		})
	}
	wg.Wait()
	for k := range 5 {
		for _, c := range convs {
			conv := fmt.Sprintf("%s-%d", c.ConversationID, k)
			want := pt.Oracle(t, c.Messages)
			rec := b.WaitCursor(c.UserID, conv, want.Cursor, 20*time.Second)
			pt.RequireState(t, rec, want)
		}
	}
	if r := b.Rejections(); len(r) != 0 {
		t.Errorf("rejections: %v", r)
	}
}
