package jobs_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/recallhq/recall/bench"
	"github.com/recallhq/recall/jobs"
	"github.com/recallhq/recall/testutil/fakemodel"
)

// BenchmarkLaneCost compares recall's own cost per event with the model
// lane against the fake endpoint answering at once (one note per user
// message, so that every event adds a note, a version and a view) and
// without it: the CPU time of this process (recall's pipeline, and the
// fake endpoint's few microseconds a call) and of the Postgres backends of
// the run's database, and Postgres's commits, per event. Both run at the
// same paced rate, in alternating runs, so that the shared machine's noise
// hits both alike. Run it alone:
//
//	go test -run '^$' -bench LaneCost -benchtime 1x ./jobs
func BenchmarkLaneCost(b *testing.B) {
	const pairs = 3
	type figures struct {
		recall, pg time.Duration
		commits    int64
		events     int
	}
	total := map[string]*figures{"lexical": {}, "model": {}}
	for range b.N {
		for p := range pairs {
			for _, mode := range []string{"lexical", "model"} {
				f := laneCost(b, mode)
				t := total[mode]
				t.recall += f.recall
				t.pg += f.pg
				t.commits += f.commits
				t.events += f.events
				b.Logf("pair %d, %s: recall %.2f ms, Postgres %.2f ms, %.1f commits an event", p+1, mode,
					perEvent(f.recall, f.events), perEvent(f.pg, f.events), float64(f.commits)/float64(f.events))
			}
		}
	}
	lex, mod := total["lexical"], total["model"]
	costOf := func(f *figures) float64 { return perEvent(f.recall+f.pg, f.events) }
	b.ReportMetric(costOf(lex), "lexical-ms/event")
	b.ReportMetric(costOf(mod), "model-ms/event")
	b.ReportMetric(costOf(mod)/costOf(lex), "model/lexical")
	b.ReportMetric((float64(mod.commits)/float64(mod.events))/(float64(lex.commits)/float64(lex.events)), "commits-model/lexical")
}

// laneFigures is one run's cost.
type laneFigures struct {
	recall, pg time.Duration
	commits    int64
	events     int
}

// laneCost runs 40 conversations taking a turn every 2 s for 6 turns (an
// agent's pace: a turn takes a model call of its own),
// with the model lane or without (mode "lexical"), after a turn of warm-up,
// and returns what the turns cost until every one of them is done (the
// lane's notes written, with the lane).
func laneCost(b *testing.B, mode string) laneFigures {
	const convs, rounds, every = 40, 6, 2 * time.Second
	l := setupLane(b, fakemodel.NoteEach, func(ml **jobs.ModelLane) {
		if mode == "lexical" {
			*ml = nil
		}
	})
	l.start()
	texts := []string{"We must ship by Friday.", "ok"}
	round := func(r int) {
		texts = append(texts, fmt.Sprintf("Fact number %d: the budget is %d EUR.", r, 1000+r), "Noted.")
		msgs := turns(append(texts, "next")...)
		for c := range convs {
			l.ingest(fmt.Sprintf("c%d", c), msgs)
		}
	}
	// done waits until every conversation's turns are done, with one
	// light query every 50 ms (it runs inside the measured window).
	done := func() {
		want := len(texts) - 1
		deadline := time.Now().Add(time.Minute)
		for {
			var n int
			if err := l.pool.QueryRow(context.Background(), `SELECT count(*) FROM recall_conversation
WHERE "cursor" >= $1 AND ($2 OR (notes_cursor = "cursor" AND notes_requested_at IS NULL))`, want, mode == "lexical").Scan(&n); err != nil {
				b.Fatal(err)
			}
			if n == convs {
				return
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s: %d of %d conversations done", mode, n, convs)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	round(0)
	done()
	// What the process and Postgres spend idle (River's polls, the sweep),
	// per second, is taken off: the figures are an event's own.
	idle0 := l.counters()
	time.Sleep(idleWindow)
	before := l.counters()
	idle := before.since(idle0)
	start := time.Now()
	next := start
	for r := 1; r <= rounds; r++ {
		round(r)
		next = next.Add(every)
		time.Sleep(time.Until(next))
	}
	done()
	spent := l.counters().since(before)
	share := float64(time.Since(start)) / float64(idleWindow)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = l.rc.Stop(ctx)
	return laneFigures{recall: spent.self - time.Duration(share*float64(idle.self)), pg: spent.pg - time.Duration(share*float64(idle.pg)),
		commits: spent.commits - int64(share*float64(idle.commits)), events: convs * rounds}
}

// idleWindow is how long laneCost measures the idle cost.
const idleWindow = 3 * time.Second

type counters struct {
	self, pg time.Duration
	commits  int64
}

// since returns what k counts beyond before.
func (k counters) since(before counters) counters {
	return counters{self: k.self - before.self, pg: k.pg - before.pg, commits: k.commits - before.commits}
}

// counters reads this process's CPU time, and the CPU time and commits of
// the Postgres backends of the lane's database.
func (l *lane) counters() counters {
	l.t.Helper()
	var k counters
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	k.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	ctx := context.Background()
	rows, err := l.pool.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		l.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			l.t.Fatal(err)
		}
		if d, err := bench.ProcessCPU(pid); err == nil {
			k.pg += d
		} else if !os.IsNotExist(err) && !strings.Contains(err.Error(), "no such") {
			l.t.Fatal(err)
		}
	}
	if err := l.pool.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&k.commits); err != nil {
		l.t.Fatal(err)
	}
	return k
}

func perEvent(d time.Duration, n int) float64 {
	return float64(d.Microseconds()) / 1000 / float64(n)
}
