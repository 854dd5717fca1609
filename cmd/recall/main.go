// Command recall keeps bounded, persistent evidence for long agent
// conversations: it consumes checkpoint snapshots from NATS JetStream, turns
// them into River jobs that extract evidence into Postgres, and serves the
// latest evidence over HTTP. Run "recall help" for its commands.
package main

import (
	"os"

	"github.com/recallhq/recall/cmd/recall/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
