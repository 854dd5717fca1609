package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/recallhq/recall/checkpoint"
)

// poison is one bad (or merely extreme) event and what recall must do
// with it: reject it with reason want, or accept it (want "").
type poison struct {
	name string
	data []byte
	want checkpoint.Reason
}

func ev(fields map[string]any) []byte {
	base := map[string]any{"schema": checkpoint.Schema, "event_id": "x", "user_id": "poison", "conversation_id": "p",
		"messages": []any{map[string]any{"id": "m0", "role": "user", "content": "hello " + Marker}}}
	for k, v := range fields {
		if v == nil {
			delete(base, k)
			continue
		}
		base[k] = v
	}
	return raw(base)
}

// poisonCorpus returns the events that must each leave exactly one
// rejection row. n numbers the copy (ids differ between copies).
func poisonCorpus(n int) []poison {
	id := func(s string) string { return fmt.Sprintf("poison-%s-%d", s, n) }
	msgs := func(k int) []any {
		out := make([]any, k)
		for i := range out {
			out[i] = map[string]any{"id": fmt.Sprint(i), "role": "user", "content": "x"}
		}
		return out
	}
	nested := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	return []poison{
		{"not JSON", []byte(`{"schema": "recall.checkpoint.v1", "event_id": "` + Marker), checkpoint.ReasonMalformed},
		{"empty payload", []byte{}, checkpoint.ReasonMalformed},
		{"invalid UTF-8", []byte(`{"schema":"recall.checkpoint.v1","event_id":"e","user_id":"u\xff","conversation_id":"c","messages":[{"role":"user","content":"` + Marker + "\xfe\"}]}"), checkpoint.ReasonMalformed},
		{"nesting 100,000 deep", []byte(`{"schema":"recall.checkpoint.v1","event_id":"e","user_id":"u","conversation_id":"c","messages":[{"role":"user","content":"` + Marker + `","artifact":` + nested + `}]}`), checkpoint.ReasonMalformed},
		{"20 MB string", ev(map[string]any{"event_id": id("huge"), "messages": []any{map[string]any{"role": "user", "content": strings.Repeat(Marker, 20<<20/len(Marker))}}}), checkpoint.ReasonTooLarge},
		{"100,000 messages", ev(map[string]any{"event_id": id("many"), "messages": msgs(100_000)}), checkpoint.ReasonTooLarge},
		{"a JSON array", []byte(`[{"role":"user","content":"` + Marker + `"}]`), checkpoint.ReasonInvalid},
		{"user_id a number", ev(map[string]any{"event_id": id("uid-num"), "user_id": 42}), checkpoint.ReasonInvalid},
		{"offset a string", ev(map[string]any{"event_id": id("off-str"), "offset": "0"}), checkpoint.ReasonInvalid},
		{"messages an object", ev(map[string]any{"event_id": id("msgs-obj"), "messages": map[string]any{"role": "user", "content": Marker}}), checkpoint.ReasonInvalid},
		{"content a number", ev(map[string]any{"event_id": id("content-num"), "messages": []any{map[string]any{"role": "user", "content": 42, "id": Marker}}}), checkpoint.ReasonInvalid},
		{"role unknown", ev(map[string]any{"event_id": id("role"), "messages": []any{map[string]any{"role": Marker, "content": Marker}}}), checkpoint.ReasonInvalid},
		{"kind unknown", ev(map[string]any{"event_id": id("kind"), "kind": "append"}), checkpoint.ReasonInvalid},
		{"delete with messages", ev(map[string]any{"event_id": id("del-msgs"), "kind": "delete"}), checkpoint.ReasonInvalid},
		{"user_id with NUL", ev(map[string]any{"event_id": id("nul"), "user_id": "u\x00" + Marker}), checkpoint.ReasonInvalid},
		{"conversation_id of 10 KB", ev(map[string]any{"event_id": id("long-cid"), "conversation_id": strings.Repeat("c", 10<<10)}), checkpoint.ReasonInvalid},
		{"event_id of 10 KB", ev(map[string]any{"event_id": strings.Repeat(Marker, 10<<10/len(Marker))}), checkpoint.ReasonInvalid},
		{"no event_id", ev(map[string]any{"event_id": nil}), checkpoint.ReasonInvalid},
		{"no schema", ev(map[string]any{"event_id": id("no-schema"), "schema": nil}), checkpoint.ReasonInvalid},
		{"unsupported schema", ev(map[string]any{"event_id": id("schema-v2"), "schema": "recall.checkpoint.v2"}), checkpoint.ReasonUnsupportedSchema},
		{"offset without prefix_digest", ev(map[string]any{"event_id": id("no-digest"), "offset": 3}), checkpoint.ReasonInvalid},
		{"prefix_digest not hex", ev(map[string]any{"event_id": id("bad-digest"), "offset": 3, "prefix_digest": Marker}), checkpoint.ReasonInvalid},
	}
}

// TestPoisonAndFlood interleaves the poison corpus with good events at full
// speed: every bad event leaves exactly one rejection row with its reason,
// the good ones are all applied, extreme but valid events are accepted,
// deletes of unknown keys leave a tombstone, and the worker's memory stays
// bounded.
func TestPoisonAndFlood(t *testing.T) {
	t.Parallel()
	copies := 2
	if long {
		copies = 6
	}
	c := newCluster(t, "", "RECALL_GAP_TIMEOUT=2s")
	wk := c.worker("w0")
	ctx := context.Background()

	good := newWorkload(t, 6, "good", 20, 10)
	// Extreme but valid: a 10 MB message and an artifact nested 9,000 deep.
	rng := rand.New(rand.NewPCG(6, 6))
	huge := newConversation(rng, "good-u-huge", "huge", 3)
	huge.History[0] = raw(map[string]any{"id": "m0", "role": "user", "content": "We must " + strings.Repeat(Marker+" ", 10<<20/(len(Marker)+1))})
	huge.Oracle = huge.oracle(t)
	deep := newConversation(rng, "good-u-deep", "deep", 3)
	deep.History[len(deep.History)-2] = json.RawMessage(`{"id":"tool","role":"tool","tool_call_id":"t","content":"` + Marker + `","artifact":` +
		strings.Repeat("[", 9000) + `"` + Marker + `"` + strings.Repeat("]", 9000) + `}`)
	deep.Oracle = deep.oracle(t)
	extreme := []*conversation{huge, deep}
	for i, cv := range extreme {
		n := cv.Snapshots[len(cv.Snapshots)-1]
		id := fmt.Sprintf("extreme-%d", i)
		good.Events = append(good.Events, event{ID: id, Data: snapshotEvent(id, cv.User, cv.Conv, cv.History[:n]), Conv: len(good.Convs)})
		good.Convs = append(good.Convs, cv)
	}

	// A conversation to mismatch later, and keys deleted before they exist.
	pm := newConversation(rng, "poison", "pm", 4)
	pm.Oracle = pm.oracle(t)
	good.Events = append(good.Events, event{ID: "pm-0", Data: snapshotEvent("pm-0", pm.User, pm.Conv, pm.History[:pm.Snapshots[3]])})
	good.Convs = append(good.Convs, pm)

	type sent struct {
		p   poison
		seq uint64
	}
	var bad []sent
	var tombstones []string
	publishMixed := func(phase int, extra []poison) {
		var list []poison
		for k := range copies {
			list = append(list, poisonCorpus(phase*100+k)...)
		}
		list = append(list, extra...)
		evs := good.Events
		if phase > 0 {
			evs = nil
		}
		// Interleave at random, at full speed, from one publisher so that
		// each bad event's stream sequence is known.
		order := rng.Perm(len(list) + len(evs))
		pctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		for _, k := range order {
			if k < len(evs) {
				if _, err := c.pub.publish(pctx, evs[k].ID, evs[k].Data); err != nil {
					t.Fatal(err)
				}
				continue
			}
			p := list[k-len(evs)]
			seq, err := c.pub.publish(pctx, fmt.Sprintf("bad-%d-%d", phase, k), p.data)
			if err != nil {
				t.Fatal(err)
			}
			bad = append(bad, sent{p, seq})
		}
	}
	ghost := func(i int) poison {
		key := fmt.Sprintf("ghost-%d", i)
		tombstones = append(tombstones, key)
		return poison{"delete of an unknown key", raw(map[string]any{"schema": checkpoint.Schema, "kind": "delete", "event_id": key,
			"user_id": "poison", "conversation_id": key}), ""}
	}
	publishMixed(0, []poison{ghost(0), ghost(1)})
	v, took := waitConverged(t, c.pool, good.Convs, 2*time.Minute)
	t.Logf("phase 1: %s after %s", v, took.Round(100*time.Millisecond))
	if _, ok := waitStreamDone(t, c.js, 2*time.Minute); !ok {
		t.Fatalf("phase 1 was not fully handled")
	}
	hwm1, err := wk.vmHWM()
	if err != nil {
		t.Fatal(err)
	}

	// Phase 2, now that pm's cursor has moved and the ghosts are deleted:
	// a different lineage for pm, an append with a gap, events for deleted
	// keys, and the corpus again (memory must not grow with it).
	other := newConversation(rand.New(rand.NewPCG(99, 99)), "poison", "pm", 4)
	var off, digest = 3, strings.Repeat("ab", 32)
	publishMixed(1, []poison{
		{"prefix_mismatch", snapshotEvent("pm-other", pm.User, pm.Conv, other.History[:other.Snapshots[3]]), checkpoint.ReasonPrefixMismatch},
		{"gap", raw(map[string]any{"schema": checkpoint.Schema, "event_id": "pm-gap", "user_id": pm.User, "conversation_id": pm.Conv,
			"offset": off + 500, "prefix_digest": digest, "messages": []any{map[string]any{"role": "user", "content": Marker}}}), checkpoint.ReasonGap},
		{"snapshot of a deleted key", snapshotEvent("ghost-0-again", "poison", "ghost-0", pm.History[:1]), checkpoint.ReasonDeleted},
		{"snapshot of a deleted key", snapshotEvent("ghost-1-again", "poison", "ghost-1", pm.History[:2]), checkpoint.ReasonDeleted},
		ghost(2),
	})
	drained, ok := waitStreamDone(t, c.js, 2*time.Minute)
	if !ok {
		t.Errorf("the stream was not fully handled")
	}
	v, _ = waitConverged(t, c.pool, good.Convs, 30*time.Second)
	requireOracle(t, v)
	hwm2, err := wk.vmHWM()
	if err != nil {
		t.Fatalf("the worker is gone: %v\n%s", err, tail(wk.logPath, 30))
	}

	// Exactly one rejection row per bad event, with its reason, and no
	// other row.
	rows, err := c.pool.Query(ctx, `SELECT stream_seq, reason, count(*) FROM recall_rejection GROUP BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	type rk struct {
		seq    int64
		reason string
	}
	got := map[rk]int{}
	total := 0
	for rows.Next() {
		var k rk
		var n int
		if err := rows.Scan(&k.seq, &k.reason, &n); err != nil {
			t.Fatal(err)
		}
		got[k] = n
		total += n
	}
	rows.Close()
	wantRows := 0
	for _, b := range bad {
		if b.p.want == "" {
			for k := range got {
				if k.seq == int64(b.seq) {
					t.Errorf("%s (stream_seq %d) was rejected as %s; it must be accepted", b.p.name, b.seq, k.reason)
				}
			}
			continue
		}
		wantRows++
		if n := got[rk{int64(b.seq), string(b.p.want)}]; n != 1 {
			var reasons []string
			for k, n := range got {
				if k.seq == int64(b.seq) {
					reasons = append(reasons, fmt.Sprintf("%s×%d", k.reason, n))
				}
			}
			t.Errorf("%s (stream_seq %d): %d rejection rows with reason %s, want 1 (rows for it: %v)", b.p.name, b.seq, n, b.p.want, reasons)
		}
	}
	if total != wantRows {
		t.Errorf("%d rejection rows, want %d (one per bad event)", total, wantRows)
	}
	for _, key := range tombstones {
		var deleted bool
		if err := c.pool.QueryRow(ctx, `SELECT deleted_at IS NOT NULL FROM recall_conversation WHERE user_id = 'poison' AND conversation_id = $1`, key).Scan(&deleted); err != nil || !deleted {
			t.Errorf("delete of unknown key %s: no tombstone (%v)", key, err)
		}
	}

	// Memory: bounded, and not growing with the second copy of the flood.
	const bound = 1 << 30
	if hwm2 > bound {
		t.Errorf("worker peak RSS %d MiB, more than %d MiB", hwm2>>20, bound>>20)
	}
	if hwm2 > hwm1+hwm1/2 {
		t.Errorf("worker peak RSS grew from %d MiB to %d MiB with the second flood", hwm1>>20, hwm2>>20)
	}
	if !wk.alive() {
		t.Errorf("the worker exited: %v\n%s", wk.waitErr, tail(wk.logPath, 30))
	}
	logs := c.scanLogs()
	requireCleanLogs(t, logs)
	t.Logf("outcomes: %v; worker peak RSS %d MiB after phase 1, %d MiB at the end", logs.Outcomes, hwm1>>20, hwm2>>20)
	results.add(t, row{
		Scenario: "5 poison and flood", Published: distinctIDs(good.Events) + len(bad), Accepted: c.pub.accepted(),
		States: v.States, Matching: v.Matching, Dups: v.Dups, Lost: v.Lost, Recover: drained,
		Note: fmt.Sprintf("%d bad events, %d rejection rows (want %d), %d tombstones; peak RSS %d MiB", len(bad), total, wantRows, len(tombstones), hwm2>>20),
	})
}
