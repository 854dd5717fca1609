package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/recallhq/recall/testutil/pgtest"
)

// TestExamples runs examples/ai-sdk and examples/openai-agents against one
// recall dev, with their mock models, as `make example-ai-sdk` and `make
// example-openai-agents` do: npm ci, then node main.mjs, which checks the
// prompts its model received and exits non-zero when one is wrong.
func TestExamples(t *testing.T) {
	needNode(t, "the examples")
	examples := []string{"ai-sdk", "openai-agents"}
	dirs := installExamples(t, examples...)

	d := startDev(t, devConfig{DatabaseURL: pgtest.UncreatedDatabase(t)})
	// No API key: the examples use their mock models.
	env := append(d.env(), "OPENAI_API_KEY=")
	for i, name := range examples {
		t.Run(name, func(t *testing.T) {
			out := runIn(t, dirs[i], env, 2*time.Minute, "node", "main.mjs")
			if !strings.Contains(out, "\nok: ") {
				t.Errorf("the example exited 0 without its ok line:\n%s", out)
			}
		})
	}
	d.interrupt()
}
