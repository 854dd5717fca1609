package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/internal/devpg"
	"github.com/recallhq/recall/store"
	"github.com/recallhq/recall/testutil/natstest"
	"github.com/recallhq/recall/testutil/pgtest"
	pt "github.com/recallhq/recall/testutil/pipelinetest"
	"github.com/recallhq/recall/testutil/proctest"
)

// TestBackupRestore follows docs/operations.md, "Backups and restore": a
// conversation is ingested turn by turn, the database is dumped with
// pg_dump and restored into a new database, `recall migrate` runs on it,
// and a pipeline with a new, empty stream starts on it. The next turn, an
// append event whose prefix digest was computed before the dump, must then
// give the restored database exactly the evidence it gives the original:
// the same record (version included: the dump keeps each conversation's
// version, and the append raises it by one on both sides; only updated_at,
// a wall-clock time, differs) and the same archive.
func TestBackupRestore(t *testing.T) {
	t.Parallel()
	pgDump, pgRestore := pgClient(t, "pg_dump"), pgClient(t, "pg_restore")
	ctx := t.Context()

	user, conv, history := sampleHistory(t, "coding")
	requests := userIndexes(t, history)
	if len(requests) < 3 {
		t.Fatalf("example coding has %d user messages, want at least 3", len(requests))
	}
	// The turns before the last are snapshots; the last is an append of
	// what follows them.
	next := requests[len(requests)-1] + 1
	offset := requests[len(requests)-2] + 1

	orig := pt.New(t)
	orig.StartWorker(2)
	for i, k := range requests[:len(requests)-1] {
		id := fmt.Sprintf("snapshot-%d", i)
		orig.Publish(id, pt.Event(id, user, conv, history[:k+1]))
	}
	before := orig.WaitCursor(user, conv, pt.Oracle(t, history[:offset]).Cursor, 15*time.Second)
	if before.MessageCount != offset {
		t.Fatalf("before the dump: message_count %d, want %d", before.MessageCount, offset)
	}
	// A publisher in append mode remembers the digest of what it sent; it
	// does not ask recall, and keeps it across the restore.
	appendEv := appendEventOf(t, "append", user, conv, history[:next], offset)

	dump := filepath.Join(t.TempDir(), "recall.dump")
	runTool(t, pgDump, "--format=custom", "--file="+dump, "--dbname="+orig.DatabaseURL)
	restoredURL := pgtest.NewDatabase(t)
	runTool(t, pgRestore, "--exit-on-error", "--no-owner", "--dbname="+restoredURL, dump)
	runRecall(t, proctest.Env("DATABASE_URL="+restoredURL), "migrate")

	restored := pt.NewOnDatabase(t, restoredURL, natstest.Start(t).URL(), pt.Subject, pt.Stream)
	restored.StartWorker(2)
	got, err := restored.Store.Evidence(ctx, user, conv)
	pgtest.Must(t, err, "read the restored evidence")
	if diff := cmp.Diff(withoutTime(before), withoutTime(got)); diff != "" {
		t.Fatalf("the restored database's evidence before the append differs from the dumped one (-want +got):\n%s", diff)
	}

	orig.Publish("append", appendEv)
	restored.Publish("append", appendEv)
	want := pt.Oracle(t, history[:next])
	wantRec := orig.WaitCursor(user, conv, want.Cursor, 15*time.Second)
	gotRec := restored.WaitCursor(user, conv, want.Cursor, 15*time.Second)
	pt.RequireState(t, wantRec, want)
	if diff := cmp.Diff(withoutTime(wantRec), withoutTime(gotRec)); diff != "" {
		t.Errorf("evidence after the append, restored database (-original +restored):\n%s", diff)
	}
	if gotRec.Version != before.Version+1 {
		t.Errorf("restored version %d after the append, want %d", gotRec.Version, before.Version+1)
	}
	if diff := cmp.Diff(archiveOf(t, orig.Store, user), archiveOf(t, restored.Store, user)); diff != "" {
		t.Errorf("archive after the append, restored database (-original +restored):\n%s", diff)
	}
	if r := restored.Rejections(); len(r) != 0 {
		t.Errorf("restored database: rejections %v, want none", r)
	}
}

// pgClient returns the path of a PostgreSQL client program, on PATH or
// beside the server binaries. Without it the test is skipped, except when
// CI is set, where it fails.
func pgClient(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	glob := os.Getenv(devpg.BinGlobEnv)
	if glob == "" {
		glob = devpg.DefaultBinGlob
	}
	if found, _ := filepath.Glob(filepath.Join(glob, name)); len(found) > 0 {
		return found[len(found)-1]
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is missing (on PATH or in %s), and CI is set: install the PostgreSQL client (apt-get install postgresql-client)", name, glob)
	}
	t.Skipf("%s is missing (on PATH or in %s): install the PostgreSQL client (apt-get install postgresql-client) to test backups", name, glob)
	return ""
}

// runTool runs a program to its end and fails the test on a non-zero exit.
func runTool(t *testing.T, path string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", filepath.Base(path), err, out.String())
	}
	t.Logf("%s: exit 0 in %s", filepath.Base(path), time.Since(start).Round(time.Millisecond))
}

// userIndexes returns the indexes of history's user messages.
func userIndexes(t *testing.T, history []json.RawMessage) []int {
	t.Helper()
	msgs := decode(t, history)
	var out []int
	for i := range msgs {
		if msgs[i].Role == checkpoint.RoleUser {
			out = append(out, i)
		}
	}
	return out
}

// appendEventOf builds the append event of history from offset on, with the
// prefix digest of history[:offset] (docs/protocol.md, "Digests").
func appendEventOf(t *testing.T, eventID, user, conv string, history []json.RawMessage, offset int) []byte {
	t.Helper()
	d, err := checkpoint.PrefixDigest(decode(t, history[:offset]), offset)
	pgtest.Must(t, err, "prefix digest")
	b, err := json.Marshal(map[string]any{
		"schema": checkpoint.Schema, "kind": "snapshot", "event_id": eventID, "user_id": user, "conversation_id": conv,
		"offset": offset, "prefix_digest": d.String(), "messages": history[offset:],
	})
	pgtest.Must(t, err, "encode the append event")
	return b
}

// withoutTime returns rec without updated_at, which is when a database
// wrote the state, not what it holds.
func withoutTime(rec evidence.Record) evidence.Record {
	rec.UpdatedAt = time.Time{}
	return rec
}

// archiveOf returns every archive entry of the user's conversations.
func archiveOf(t *testing.T, st *store.Store, user string) []store.ArchiveEntry {
	t.Helper()
	var out []store.ArchiveEntry
	for e, err := range st.UserArchive(t.Context(), user) {
		pgtest.Must(t, err, "read the archive")
		out = append(out, e)
	}
	if len(out) == 0 {
		t.Fatalf("user %s has no archive entries", user)
	}
	return out
}
