package devpg

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeInstall makes version folders under root holding the named
// binaries (empty files: Find only looks for them).
func fakeInstall(t *testing.T, root string, bins map[string][]string) {
	t.Helper()
	for version, names := range bins {
		dir := filepath.Join(root, version, "bin")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if err := os.WriteFile(filepath.Join(dir, name), nil, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestFind(t *testing.T) {
	server := []string{"initdb", "pg_ctl", "postgres"}
	tests := []struct {
		name    string
		bins    map[string][]string
		want    string // relative to the fake root; "" for ErrNoBinaries
		wantErr []string
	}{
		{
			name: "newest complete major wins",
			bins: map[string][]string{"12": server, "15": server, "16": {"pg_ctl", "psql"}},
			want: "15/bin",
		},
		{
			name:    "client only",
			bins:    map[string][]string{"16": {"psql", "pg_dump"}},
			wantErr: []string{"no PostgreSQL server binaries found", "apt-get install postgresql", "brew install postgresql", "DATABASE_URL", BinGlobEnv},
		},
		{
			name:    "nothing",
			wantErr: []string{"no PostgreSQL server binaries found", "apt-get install postgresql"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			fakeInstall(t, root, tt.bins)
			glob := filepath.Join(root, "*", "bin")
			t.Setenv("PATH", t.TempDir())
			t.Setenv(BinGlobEnv, glob)
			got, err := Find()
			if tt.want != "" {
				if err != nil {
					t.Fatalf("Find: %v", err)
				}
				if want := filepath.Join(root, tt.want); got != want {
					t.Fatalf("Find = %s, want %s", got, want)
				}
				return
			}
			if !errors.Is(err, ErrNoBinaries) {
				t.Fatalf("Find = %q, %v; want ErrNoBinaries", got, err)
			}
			for _, s := range append(tt.wantErr, glob) {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}
