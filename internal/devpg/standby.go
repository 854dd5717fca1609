package devpg

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// InitStandby fills the data folder with a base backup of primary
// (pg_basebackup over a replication connection, with the WAL it needs and
// standby.signal and primary_conninfo written), so that Start runs the
// cluster as a hot standby streaming from primary. The primary must accept
// replication connections from 127.0.0.1 for the postgres user; a cluster
// Init made does (initdb writes those pg_hba.conf lines).
func (c *Cluster) InitStandby(ctx context.Context, primary *Cluster) error {
	if err := os.MkdirAll(c.dataDir(), 0o700); err != nil {
		return err
	}
	if err := c.own(); err != nil {
		return err
	}
	// PATH may hold links to the server binaries only: pg_basebackup is
	// then beside the file pg_ctl links to.
	b := *c
	if _, err := os.Stat(filepath.Join(b.Bin, "pg_basebackup")); err != nil {
		real, err := filepath.EvalSymlinks(filepath.Join(b.Bin, "pg_ctl"))
		if err != nil {
			return fmt.Errorf("find pg_basebackup: %w", err)
		}
		b.Bin = filepath.Dir(real)
	}
	return b.run(ctx, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(primary.Port), "-U", "postgres",
		"-D", c.dataDir(), "-X", "stream", "-c", "fast", "-R")
}
