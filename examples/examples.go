// Package examples embeds sample conversations (copies of the project's
// shared corpus) so that `recall publish --example NAME` works from any
// folder, and tests and demos have realistic histories.
package examples

import (
	"embed"
	"io/fs"
	"sort"
	"strings"
)

//go:embed conversations/*.json
var files embed.FS

// Names lists the sample conversations.
func Names() []string {
	entries, _ := fs.ReadDir(files, "conversations")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".json"))
	}
	sort.Strings(names)
	return names
}

// Conversation returns a sample conversation as JSON:
// {"user_id","conversation_id","messages":[…]}.
func Conversation(name string) ([]byte, error) {
	return files.ReadFile("conversations/" + name + ".json")
}
