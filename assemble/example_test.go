package assemble_test

import (
	"encoding/json"
	"fmt"

	"github.com/recallhq/recall/assemble"
	"github.com/recallhq/recall/checkpoint"
)

func ExampleBuild() {
	msgs, err := checkpoint.DecodeMessages([]byte(`[
		{"id":"m0","role":"user","content":"We must ship by Friday."},
		{"id":"m1","role":"assistant","content":"Noted: Friday."},
		{"id":"m2","role":"user","content":"Draft the schema."}
	]`))
	if err != nil {
		panic(err)
	}
	res, err := assemble.Build(&assemble.Request{
		Messages: msgs,
		System:   "You are a careful engineer.",
		Budget:   assemble.DefaultBudget(),
	})
	if err != nil {
		panic(err)
	}
	for _, m := range res.Messages {
		fmt.Printf("%s %s\n", m.Role, m.Content)
	}
	fmt.Printf("total %d of %d, dropped %d\n", res.Tokens.Total, res.Limit, res.DroppedTurns)
	// Output:
	// system "You are a careful engineer."
	// user "We must ship by Friday."
	// assistant "Noted: Friday."
	// user "Draft the schema."
	// total 44 of 16000, dropped 0
}

// A budget too small for the oldest turn drops it whole.
func ExampleBuild_droppedTurn() {
	msgs, _ := checkpoint.DecodeMessages([]byte(`[
		{"id":"m0","role":"user","content":"Tell me about the 2019 migration, in detail, with every step we took."},
		{"id":"m1","role":"assistant","content":"It took three weekends."},
		{"id":"m2","role":"user","content":"And the rollback?"}
	]`))
	budget := assemble.DefaultBudget()
	budget.Prompt = 40
	res, _ := assemble.Build(&assemble.Request{Messages: msgs, Budget: budget})
	for _, m := range res.Messages {
		fmt.Printf("%s %s\n", m.Role, m.Content)
	}
	fmt.Printf("history %d, current %d, total %d of %d, dropped %d\n",
		res.Tokens.History, res.Tokens.Current, res.Tokens.Total, res.Limit, res.DroppedTurns)
	// Output:
	// user "And the rollback?"
	// history 0, current 10, total 10 of 40, dropped 1
}

// A mandatory part over the limit is an error, never a cut request.
func ExampleBuild_budgetTooSmall() {
	msgs, _ := checkpoint.DecodeMessages([]byte(`[{"role":"user","content":"Summarise the quarterly report for the board."}]`))
	budget := assemble.DefaultBudget()
	budget.Prompt = 10
	_, err := assemble.Build(&assemble.Request{Messages: msgs, Budget: budget})
	fmt.Println(err)
	// Output:
	// budget_too_small: the system text (0 estimated tokens), the tool schemas (0) and the current turn (19) need 19; the limit is 10: raise budget.prompt or budget.context_window, or send fewer tools
}

func ExampleDecodeBody() {
	body, err := assemble.DecodeBody([]byte(`{
		"messages": [{"type":"human","data":{"id":"h1","content":"Hello"}}],
		"budget": {"prompt": 8000},
		"evidence": {"role":"assistant","content":"[memory] Earlier turns exist in this conversation's history but are not currently in context."}
	}`))
	if err != nil {
		panic(err)
	}
	res, err := assemble.Build(&body.Request)
	if err != nil {
		panic(err)
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	// Output:
	// {"messages":[{"role":"assistant","content":"[memory] Earlier turns exist in this conversation's history but are not currently in context."},{"role":"user","id":"h1","content":"Hello"}],"estimated_tokens":{"system":0,"tools":0,"evidence":35,"history":0,"current":6,"total":41},"limit":8000,"dropped_turns":0,"compacted_tool_results":0,"evidence":{"included":true,"version":0,"cursor":0,"lagging":false}}
}
