package partition_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/recallhq/recall/partition"
	"github.com/recallhq/recall/store"
	"github.com/recallhq/recall/testutil/natstest"
	pt "github.com/recallhq/recall/testutil/pipelinetest"
)

// keys returns n conversation keys, some with characters a subject token
// may not hold.
func keys(n int) [][2]string {
	var out [][2]string
	for i := range n {
		u := fmt.Sprintf("user-%d", i%7)
		if i%5 == 0 {
			u = fmt.Sprintf("user.%d with spaces *>", i%7)
		}
		out = append(out, [2]string{u, fmt.Sprintf("conv-%d", i)})
	}
	return out
}

// TestTokenIsASubjectToken: tokens are valid NATS subject tokens, differ
// for keys that concatenate alike, and stay stable.
func TestTokenIsASubjectToken(t *testing.T) {
	t.Parallel()
	for _, k := range keys(50) {
		tok := partition.Token(k[0], k[1])
		if len(tok) != 22 || strings.ContainsAny(tok, ". *>\t\r\n") {
			t.Errorf("token %q of %q is no subject token", tok, k)
		}
	}
	if partition.Token("a.b", "c") == partition.Token("a", "b.c") {
		t.Error("keys that concatenate alike share a token")
	}
	// FNV-1a of "a" is 0xe40c292c (the function's published test vector).
	if got := partition.Of("a", 1<<16); got != 0xe40c292c%(1<<16) {
		t.Errorf("Of(\"a\") = %d, want FNV-1a 32 %d", got, 0xe40c292c%(1<<16))
	}
}

// TestAgreesWithNATS publishes keys' tokens through a NATS server mapping
// with partition(n, 1) and checks that the partition NATS chose is the one
// Of computes, for several n.
func TestAgreesWithNATS(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	nc, err := nats.Connect(ns.URL())
	pt.Must(t, err)
	t.Cleanup(nc.Close)
	for _, n := range []int{2, 3, 7, 16} {
		prefix := fmt.Sprintf("agree%d", n)
		src, dst := partition.Mapping(prefix, n)
		pt.Must(t, ns.AddMapping(src, dst))
		sub, err := nc.SubscribeSync(prefix + ".p.*.*")
		pt.Must(t, err)
		pt.Must(t, nc.Flush())
		ks := keys(300)
		for _, k := range ks {
			pt.Must(t, nc.Publish(partition.Subject(prefix, k[0], k[1]), nil))
		}
		seen := make([]int, n)
		for range ks {
			m, err := sub.NextMsg(5 * time.Second)
			pt.Must(t, err)
			parts := strings.Split(m.Subject, ".") // prefix, p, N, token
			if len(parts) != 4 {
				t.Fatalf("mapped subject %q", m.Subject)
			}
			want := partition.Of(parts[3], n)
			if parts[2] != fmt.Sprint(want) {
				t.Errorf("n=%d: NATS put token %s in partition %s, Of says %d", n, parts[3], parts[2], want)
			}
			seen[want]++
		}
		for p, c := range seen {
			if c == 0 {
				t.Errorf("n=%d: partition %d got none of %d keys", n, p, len(ks))
			}
		}
		_ = sub.Unsubscribe()
	}
}

// TestTwoPartitionsEndToEnd runs recall on two partitions: one NATS server
// maps the publishers' subject with partition(2, …) into two streams; each
// partition's worker consumes its stream into a database of its own; a
// router picks the database of each conversation by the same hash, where its
// state equals the oracle's, and the other database holds nothing of it.
func TestTwoPartitionsEndToEnd(t *testing.T) {
	t.Parallel()
	const prefix, n = "recall.checkpoints", 2
	ns := natstest.Start(t)
	src, dst := partition.Mapping(prefix, n)
	pt.Must(t, ns.AddMapping(src, dst))
	var stores []*store.Store
	for p := range n {
		b := pt.NewOn(t, ns.URL(), partition.PartitionSubject(prefix, p), fmt.Sprintf("RECALL_P%d", p))
		b.StartWorker(2)
		stores = append(stores, b.Store)
	}
	router, err := partition.NewRouter(stores...)
	pt.Must(t, err)

	_, js := natstest.Connect(t, ns.URL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type conv struct {
		user, id string
		history  []json.RawMessage
	}
	var convs []conv
	for i, k := range keys(40) {
		c := conv{user: k[0], id: k[1]}
		for j := range 3 + i%4 {
			c.history = append(c.history,
				json.RawMessage(fmt.Sprintf(`{"id":"m%d","role":"user","content":"We must ship part %d by Friday."}`, 2*j, j)),
				json.RawMessage(fmt.Sprintf(`{"id":"m%d","role":"assistant","content":"Agreed: part %d goes first."}`, 2*j+1, j)))
		}
		c.history = append(c.history, json.RawMessage(`{"id":"last","role":"user","content":"next"}`))
		convs = append(convs, c)
		id := fmt.Sprintf("e%d", i)
		ack, err := js.PublishMsg(ctx, &nats.Msg{Subject: partition.Subject(prefix, c.user, c.id),
			Data: pt.Event(id, c.user, c.id, c.history), Header: nats.Header{"Nats-Msg-Id": []string{id}}})
		pt.Must(t, err)
		if want := fmt.Sprintf("RECALL_P%d", partition.For(c.user, c.id, n)); ack.Stream != want {
			t.Errorf("%s/%s went to stream %s, the router expects %s", c.user, c.id, ack.Stream, want)
		}
	}
	perPartition := make([]int, n)
	for _, c := range convs {
		st, p := router.For(c.user, c.id)
		perPartition[p]++
		want := pt.Oracle(t, c.history)
		deadline := time.Now().Add(30 * time.Second)
		for {
			rec, err := st.Evidence(ctx, c.user, c.id)
			pt.Must(t, err)
			if rec.Cursor >= want.Cursor {
				pt.RequireState(t, rec, want)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s/%s: cursor %d in partition %d's database after 30s, want %d", c.user, c.id, rec.Cursor, p, want.Cursor)
			}
			time.Sleep(20 * time.Millisecond)
		}
		other, err := stores[1-p].Evidence(ctx, c.user, c.id)
		pt.Must(t, err)
		if other.Version != 0 {
			t.Errorf("%s/%s: partition %d's database holds it too (version %d)", c.user, c.id, 1-p, other.Version)
		}
	}
	for p, c := range perPartition {
		if c == 0 {
			t.Errorf("partition %d got none of %d conversations", p, len(convs))
		}
	}
	t.Logf("conversations per partition: %v", perPartition)
}
