package assemble_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/recallhq/recall/assemble"
	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/evidence"
	"github.com/recallhq/recall/internal/contextload"
)

func BenchmarkBuild(b *testing.B) {
	raw := contextload.Checkpoint()
	msgs, err := checkpoint.DecodeMessages(raw)
	if err != nil {
		b.Fatal(err)
	}
	req := &assemble.Request{
		Messages: msgs,
		System:   "You are a careful bookkeeping assistant.",
		Tools:    []json.RawMessage{json.RawMessage(`{"name":"transactions","parameters":{"type":"object","properties":{"month":{"type":"string"}}}}`)},
		Budget:   assemble.DefaultBudget(),
		Evidence: &assemble.Evidence{Message: &evidence.EvidenceMessage{Role: checkpoint.RoleAssistant, Content: strings.Repeat("x", 3000)}},
	}
	res, err := assemble.Build(req)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(raw)), "checkpoint_bytes")
	b.Logf("%d messages, %d bytes: kept %d, dropped %d turns, compacted %d, total %d of %d",
		len(msgs), len(raw), len(res.Messages), res.DroppedTurns, res.CompactedToolResults, res.Tokens.Total, res.Limit)
	b.ResetTimer()
	for b.Loop() {
		if _, err := assemble.Build(req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeAndBuild adds decoding the request body, as the endpoint
// and the command do.
func BenchmarkDecodeAndBuild(b *testing.B) {
	body := []byte(`{"system":"You are a careful bookkeeping assistant.","messages":` + string(contextload.Checkpoint()) + `}`)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		d, err := assemble.DecodeBody(body)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := assemble.Build(&d.Request); err != nil {
			b.Fatal(err)
		}
	}
}
