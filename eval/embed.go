package eval

import (
	"embed"
	"io/fs"
)

//go:embed fixtures/dev/*.json
var embedded embed.FS

// DevFixtures returns the development fixtures shipped with recall
// (eval/fixtures/dev), for Load: the set the fold may be tuned on.
func DevFixtures() fs.FS { return embeddedSet("fixtures/dev") }

func embeddedSet(dir string) fs.FS {
	sub, err := fs.Sub(embedded, dir)
	if err != nil {
		panic(err) // the embed pattern guarantees the folder
	}
	return sub
}
