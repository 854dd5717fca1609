package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/recallhq/recall/assemble"
	"github.com/recallhq/recall/checkpoint"
)

func init() {
	register("context", "assemble the bounded prompt of a model call from a request body, offline", runContext)
}

const contextUsage = `Usage: recall context [flags] FILE

Assemble the bounded prompt of a model call from a request body, offline.

Does what the context endpoint does, without a server: FILE (or standard input when FILE is "-") holds the
endpoint's request body,
  {"messages":[...], "system":"...", "tools":[{...}],
   "budget":{"context_window":32768,"prompt":16000,...}, "evidence":{...}}
and the command prints the assembled messages with their estimates, what was
dropped and what was compacted. There is no evidence unless the file carries
one: an evidence message {"role":"assistant","content":"..."} or a read API
response (recall state USER CONV prints one).

Examples:
  recall context request.json
  recall context --prompt 4000 request.json   # try a smaller budget
  recall context --json - < request.json      # the endpoint's response

Flags:
`

func runContext(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "context", "FILE")
	asJSON := fs.Bool("json", false, "print the endpoint's JSON response instead of a summary")
	prompt := fs.Int("prompt", 0, "override budget.prompt (estimated tokens; 0: the file's)")
	window := fs.Int("context-window", 0, "override budget.context_window (0: the file's)")
	fs.Usage = func() {
		fmt.Fprint(env.Stderr, contextUsage)
		fs.PrintDefaults()
	}
	positional, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(positional) != 1 {
		fmt.Fprintf(env.Stderr, "recall context: want FILE (or - for standard input), got %d arguments\n", len(positional))
		fs.Usage()
		return errUsage
	}
	data, err := readPublishInput(env, positional[0])
	if err != nil {
		return err
	}
	body, err := assemble.DecodeBody(data)
	if err != nil {
		return err
	}
	req := &body.Request
	if *prompt != 0 {
		req.Budget.Prompt = *prompt
	}
	if *window != 0 {
		req.Budget.ContextWindow = *window
	}
	res, err := assemble.Build(req)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeIndented(env.Stdout, res.AppendJSON(nil))
	}
	return printContext(env.Stdout, req, res)
}

// writeIndented writes a JSON document, indented, and a newline.
func writeIndented(w io.Writer, doc []byte) error {
	var out bytes.Buffer
	if err := json.Indent(&out, doc, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err := w.Write(out.Bytes())
	return err
}

// printContext prints the assembled view: its estimates, then one line
// per message.
func printContext(w io.Writer, req *assemble.Request, res *assemble.Result) error {
	t := res.Tokens
	fmt.Fprintf(w, "%d of %d estimated tokens: system %d, tools %d (%d schemas), evidence %d, history %d, current turn %d\n",
		t.Total, res.Limit, t.System, t.Tools, len(req.Tools), t.Evidence, t.History, t.Current)
	ev := "no evidence in the request"
	switch {
	case res.Evidence.Included:
		ev = fmt.Sprintf("evidence included (version %d, cursor %d)", res.Evidence.Version, res.Evidence.Cursor)
	case req.Evidence != nil && req.Evidence.Message != nil:
		ev = "evidence left out: it does not fit beside the system text, tools and current turn"
	}
	kept := len(res.Messages)
	if t.System > 0 {
		kept--
	}
	if res.Evidence.Included {
		kept--
	}
	fmt.Fprintf(w, "%d of %d checkpoint messages kept, %d older turns dropped, %d tool results compacted; %s\n\n",
		kept, len(req.Messages), res.DroppedTurns, res.CompactedToolResults, ev)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tROLE\tID\tTOKENS\tCONTENT")
	for i := range res.Messages {
		m := &res.Messages[i]
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\n", i, m.Role, m.ID, m.Tokens, summarise(m))
	}
	return tw.Flush()
}

// summarise is one line of a message: its text, shortened, and its calls.
func summarise(m *assemble.Message) string {
	var text string
	if json.Unmarshal(m.Content, &text) != nil {
		if dm, err := checkpoint.DecodeMessage(m.AppendJSON(nil)); err == nil {
			text = dm.Text
		}
	}
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > 72 {
		text = string(r[:71]) + "…"
	}
	for _, c := range m.ToolCalls {
		text += fmt.Sprintf(" [calls %s %s]", c.Name, c.ID)
	}
	return strings.TrimSpace(text)
}
