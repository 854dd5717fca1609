package e2e

import (
	"bytes"
	"context"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/recallhq/recall/testutil/pgtest"
)

// TestDevNATSPortStable restarts recall dev on the same data folder and
// requires the same NATS URL, so that exports pasted from its banner stay
// good.
func TestDevNATSPortStable(t *testing.T) {
	cfg := devConfig{DatabaseURL: pgtest.UncreatedDatabase(t), DataDir: t.TempDir(), OwnNATSPort: true}
	d := startDev(t, cfg)
	first := d.NATSURL
	d.interrupt()
	d = startDev(t, cfg)
	if d.NATSURL != first {
		t.Errorf("NATS moved from %s to %s across a restart", first, d.NATSURL)
	}
	d.interrupt()
}

// TestPublishWaitRejected publishes to a deleted conversation with --wait:
// the command must stop at once and name the reason, not wait out its
// timeout.
func TestPublishWaitRejected(t *testing.T) {
	d := startDev(t, devConfig{DatabaseURL: pgtest.UncreatedDatabase(t)})
	c := sample(t, "planning")
	runRecall(t, d.env(), "publish", "--example", "planning", "--wait")

	req, _ := http.NewRequest(http.MethodDelete, strings.TrimSuffix(evidenceURL(d.APIURL, c.UserID, c.ConversationID), "/evidence"), nil)
	req.Header.Set("Authorization", "Bearer "+d.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %v %v", resp, err)
	}
	resp.Body.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, recallBin, "publish", "--example", "planning", "--wait", "--wait-timeout", "60s")
	cmd.Env = d.env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	took := time.Since(start)
	if err == nil {
		t.Fatalf("publish --wait to a deleted conversation exited 0:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "reason=deleted") {
		t.Errorf("the error does not name the reason:\n%s", stderr.String())
	}
	if took > 15*time.Second {
		t.Errorf("publish --wait took %s to give up on a rejected event; want it to stop at once", took.Round(time.Millisecond))
	}
	t.Logf("publish --wait stopped after %s: %s", took.Round(time.Millisecond), strings.TrimSpace(stderr.String()))
	d.interrupt()
}
