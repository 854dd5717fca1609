package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEvalFitRefuses checks that recall eval --fit refuses what it cannot
// fit on, saying which set or file and why, and writes no table.
func TestEvalFitRefuses(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "weights.json")
	bad := filepath.Join(dir, "bad")
	if err := os.Mkdir(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "broken.json"), []byte(`{"user_id":"u","conversation_id":"c",
	  "messages":[{"id":"m0","role":"user","content":"hi"}],"probes":[{"request":"nope","facts":["x"]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	quiet := filepath.Join(dir, "quiet")
	if err := os.Mkdir(quiet, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(quiet, "hello.json"), []byte(`{"user_id":"u","conversation_id":"c",
	  "messages":[{"id":"m0","role":"user","content":"hi"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	lonely := filepath.Join(dir, "lonely")
	if err := os.Mkdir(lonely, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lonely, "one.json"), []byte(`{"user_id":"u","conversation_id":"c",
	  "messages":[{"id":"m0","role":"user","content":"The venue holds 120 people."},{"id":"m1","role":"assistant","content":"Noted."},
	    {"id":"m2","role":"user","content":"How many chairs?"}],"probes":[{"request":"How many chairs?","facts":["holds 120 people"]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"eval", "--fit", "--folds", "1", "--out", out, lonely}, "at least 2 folds"},
		{[]string{"eval", "--fit", "--out", out, lonely}, "set lonely: 1 conversations, fewer than the 5 folds"},
		{[]string{"eval", "--fit", "--out", out}, "name the directories"},
		{[]string{"eval", "--fit", "--out", out, filepath.Join(dir, "missing")}, "is not a directory of fixtures"},
		{[]string{"eval", "--fit", "--out", out, bad}, "fixture broken"},
		{[]string{"eval", "--fit", "--out", out, quiet}, "set quiet: no probes"},
		{[]string{"eval", "--out", out, quiet}, "--out is for --fit"},
	}
	for _, tt := range tests {
		code, _, stderr := runCLI(t, nil, tt.args...)
		if code == 0 || !strings.Contains(stderr, tt.want) {
			t.Errorf("recall %s: exit %d, stderr %q; want a failure saying %q", strings.Join(tt.args, " "), code, stderr, tt.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused fit wrote %s", out)
	}
}
