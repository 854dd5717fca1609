package eval

import (
	"embed"
	"io/fs"
)

//go:embed fixtures/dev/*.json fixtures/heldout/*.json
var embedded embed.FS

// DevFixtures returns the development fixtures shipped with recall
// (eval/fixtures/dev), for Load: the set the fold may be tuned on.
func DevFixtures() fs.FS { return embeddedSet("fixtures/dev") }

// HeldOutFixtures returns the held-out fixtures shipped with recall
// (eval/fixtures/heldout), for Load: the set the fold is measured on and
// never tuned on.
func HeldOutFixtures() fs.FS { return embeddedSet("fixtures/heldout") }

func embeddedSet(dir string) fs.FS {
	sub, err := fs.Sub(embedded, dir)
	if err != nil {
		panic(err) // the embed pattern guarantees the folder
	}
	return sub
}
