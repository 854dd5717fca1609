package eval

import (
	"embed"
	"io/fs"
)

//go:embed fixtures/*.json
var embedded embed.FS

// Fixtures returns the fixtures shipped with recall (eval/fixtures), for
// Load.
func Fixtures() fs.FS {
	sub, err := fs.Sub(embedded, "fixtures")
	if err != nil {
		panic(err) // the embed pattern guarantees the folder
	}
	return sub
}
