package assemble_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/recallhq/recall/assemble"
	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
)

// decode decodes a JSON list of messages in any form.
func decode(t testing.TB, raw string) []checkpoint.Message {
	t.Helper()
	msgs, err := checkpoint.DecodeMessages([]byte(raw))
	if err != nil {
		t.Fatalf("DecodeMessages: %v", err)
	}
	return msgs
}

func budget(prompt int) assemble.Budget {
	b := assemble.DefaultBudget()
	b.Prompt = prompt
	return b
}

// ids lists the ids of the result's messages ("" for system and evidence).
func ids(res *assemble.Result) []string {
	var out []string
	for _, m := range res.Messages {
		out = append(out, m.ID)
	}
	return out
}

func errCode(err error) string {
	var e *assemble.Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err != nil {
		return "other: " + err.Error()
	}
	return ""
}

// contentText returns the text of an output message's content.
func contentText(t testing.TB, m *assemble.Message) string {
	t.Helper()
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	dm, err := checkpoint.DecodeMessage(m.AppendJSON(nil))
	if err != nil {
		t.Fatalf("output message does not decode: %v", err)
	}
	return dm.Text
}

// checkResult asserts what must hold of every result of req:
//   - the output is valid JSON in the flat form, and each message's estimate
//     recomputed from its output agrees with what the result says;
//   - total = the sum of the parts ≤ limit, and no tool result exceeds the
//     per-result limit;
//   - the system message, when there is one, is first and the only one with
//     the system role; the evidence message follows it as an assistant;
//   - the current request and every message after it that is kept appear
//     last, the request byte for byte;
//   - every tool call kept has exactly one result after it, every result
//     answers a kept call, and arguments are byte-identical to the input;
//   - no message of a non-chat channel type and no input system message is
//     kept;
//   - history turns are kept whole (each user message of a kept turn, and
//     the final answer, are there) and in order.
func checkResult(t testing.TB, req *assemble.Request, res *assemble.Result) {
	t.Helper()
	out := res.AppendJSON(nil)
	if !json.Valid(out) {
		t.Fatalf("response is not valid JSON")
	}
	bud := req.Budget
	sum := 0
	for i := range res.Messages {
		m := &res.Messages[i]
		raw := m.AppendJSON(nil)
		dm, err := checkpoint.DecodeMessage(raw)
		if err != nil {
			t.Fatalf("message %d does not decode: %v", i, err)
		}
		calls := 0
		if len(dm.ToolCalls) > 0 {
			var w struct {
				ToolCalls json.RawMessage `json:"tool_calls"`
			}
			_ = json.Unmarshal(raw, &w)
			calls = len(w.ToolCalls)
		}
		images := 0
		if !dm.StringContent {
			var parts []struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal(dm.Content, &parts)
			for _, p := range parts {
				if p.Type != "text" {
					images++
				}
			}
		}
		want := evidence.EstimateTokens(len(dm.Text)+calls) + images*bud.ImageTokens
		if m.Tokens != want {
			t.Errorf("message %d (%s): Tokens = %d, recomputed %d", i, m.Role, m.Tokens, want)
		}
		if m.Role == checkpoint.RoleTool && m.Tokens > bud.ToolResultTokens {
			t.Errorf("tool result %d: %d tokens over the per-result limit %d", i, m.Tokens, bud.ToolResultTokens)
		}
		if m.Role == checkpoint.RoleSystem && i != 0 {
			t.Errorf("message %d has the system role", i)
		}
		sum += m.Tokens
	}
	tk := res.Tokens
	if tk.Total != tk.System+tk.Tools+tk.Evidence+tk.History+tk.Current {
		t.Errorf("total %d is not the sum of its parts %+v", tk.Total, tk)
	}
	if sum+tk.Tools != tk.Total {
		t.Errorf("messages sum to %d + tools %d, total says %d", sum, tk.Tools, tk.Total)
	}
	if tk.Total > res.Limit {
		t.Fatalf("total %d > limit %d", tk.Total, res.Limit)
	}
	if lim, _ := bud.Limit(); lim != res.Limit {
		t.Errorf("limit %d, want %d", res.Limit, lim)
	}

	// Leading messages: system, then evidence.
	pos := 0
	if tk.System > 0 {
		if res.Messages[0].Role != checkpoint.RoleSystem {
			t.Fatalf("first message is %s, want system", res.Messages[0].Role)
		}
		pos++
	}
	if res.Evidence.Included {
		ev := res.Messages[pos]
		var s string
		// With Complement the message is the one it chose.
		if ev.Role != checkpoint.RoleAssistant || json.Unmarshal(ev.Content, &s) != nil || (req.Complement == nil && s != req.Evidence.Message.Content) {
			t.Fatalf("message %d is not the evidence message", pos)
		}
		pos++
	} else if tk.Evidence != 0 {
		t.Errorf("evidence left out but charged %d", tk.Evidence)
	}

	// Index the input by id (the generators give unique ids).
	in := map[string]*checkpoint.Message{}
	inPos := map[string]int{}
	cur := -1
	for i := range req.Messages {
		m := &req.Messages[i]
		in[m.ID], inPos[m.ID] = m, i
		if m.Role == checkpoint.RoleUser && m.IsConversation() {
			cur = i
		}
	}
	last := -1
	pendingCalls := map[string]bool{}
	seenResult := map[string]bool{}
	keptIDs := map[string]bool{}
	for i := pos; i < len(res.Messages); i++ {
		m := &res.Messages[i]
		src, ok := in[m.ID]
		if !ok {
			t.Fatalf("output message %d (id %q) is not in the input", i, m.ID)
		}
		keptIDs[m.ID] = true
		if inPos[m.ID] <= last {
			t.Errorf("output message %d (id %q) is out of order", i, m.ID)
		}
		last = inPos[m.ID]
		if !src.IsConversation() || src.Role == checkpoint.RoleSystem {
			t.Errorf("kept %s message %q of type %q", src.Role, m.ID, src.Type)
		}
		if m.Role != src.Role {
			t.Errorf("message %q: role %s, input %s", m.ID, m.Role, src.Role)
		}
		for _, c := range m.ToolCalls {
			found := false
			for _, ic := range src.ToolCalls {
				if ic.ID == c.ID {
					found = true
					if !bytes.Equal(ic.Args, c.Args) {
						t.Errorf("call %q: args %s, input %s", c.ID, c.Args, ic.Args)
					}
				}
			}
			if !found {
				t.Errorf("call %q is not in input message %q", c.ID, m.ID)
			}
			if pendingCalls[c.ID] {
				t.Errorf("call %q kept twice", c.ID)
			}
			pendingCalls[c.ID] = true
		}
		if m.Role == checkpoint.RoleTool {
			if !pendingCalls[m.ToolCallID] || seenResult[m.ToolCallID] {
				t.Errorf("result %q answers no kept call (or a call answered before)", m.ID)
			}
			seenResult[m.ToolCallID] = true
		}
		if inPos[m.ID] == cur {
			got := res.Messages[i]
			if src.StringContent {
				var s string
				if json.Unmarshal(got.Content, &s) != nil || s != src.Text {
					t.Errorf("current request changed")
				}
			} else if !bytes.Equal(got.Content, src.Content) && !(len(src.Content) == 2 && string(got.Content) == `""`) {
				t.Errorf("current request changed: %s, input %s", got.Content, src.Content)
			}
		}
	}
	for id := range pendingCalls {
		if !seenResult[id] {
			t.Errorf("call %q kept without its result", id)
		}
	}
	if cur >= 0 && !keptIDs[req.Messages[cur].ID] {
		t.Errorf("current request left out")
	}
	// Whole turns: a kept history turn keeps its user message and its
	// final assistant answer (the last assistant message without calls).
	turnStart := -1
	check := func(end int) {
		if turnStart < 0 {
			return
		}
		anyKept, userKept := false, false
		for j := turnStart; j < end; j++ {
			if keptIDs[req.Messages[j].ID] {
				anyKept = true
			}
		}
		userKept = keptIDs[req.Messages[turnStart].ID]
		if anyKept && !userKept {
			t.Errorf("turn at %d kept without its user message", turnStart)
		}
		if anyKept {
			for j := turnStart; j < end; j++ {
				m := &req.Messages[j]
				if m.IsConversation() && m.Role == checkpoint.RoleAssistant && len(m.ToolCalls) == 0 && !m.HasToolCalls && strings.TrimSpace(m.Text) != "" && !keptIDs[m.ID] {
					t.Errorf("turn at %d kept without its answer %q", turnStart, m.ID)
				}
			}
		}
	}
	for i := 0; i < cur; i++ {
		m := &req.Messages[i]
		if m.Role == checkpoint.RoleUser && m.IsConversation() {
			check(i)
			turnStart = i
		}
	}
	check(cur)
}
