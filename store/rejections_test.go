package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/recallhq/recall/checkpoint"
	"github.com/recallhq/recall/store"
)

func TestRejections(t *testing.T) {
	t.Parallel()
	tb := setup(t, 0)
	ctx := t.Context()
	rows := []store.Rejection{
		{Reason: checkpoint.ReasonInvalid, Detail: "field \"user_id\" is required", EventID: "e1", Stream: "S", StreamSeq: 1, Payload: []byte(`{"x":1}`)},
		{Reason: checkpoint.ReasonGap, Detail: "gap", EventID: "e2", UserID: "u-42", ConversationID: "c-7", Stream: "S", StreamSeq: 2, Payload: []byte(`{"y":2}`)},
		{Reason: checkpoint.ReasonDeleted, Detail: "deleted", EventID: "e3", UserID: "u-42", ConversationID: "c-8", Stream: "S", StreamSeq: 3, Payload: []byte(`{"z":3}`)},
	}
	for _, r := range rows {
		if err := tb.store.Reject(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(rs []store.RecordedRejection) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.EventID)
		}
		return out
	}
	tests := []struct {
		name string
		f    store.RejectionFilter
		want []string
	}{
		{"all, newest first", store.RejectionFilter{}, []string{"e3", "e2", "e1"}},
		{"by reason", store.RejectionFilter{Reason: checkpoint.ReasonGap}, []string{"e2"}},
		{"by user", store.RejectionFilter{UserID: "u-42"}, []string{"e3", "e2"}},
		{"by key", store.RejectionFilter{UserID: "u-42", ConversationID: "c-8"}, []string{"e3"}},
		{"by event", store.RejectionFilter{EventID: "e1"}, []string{"e1"}},
		{"since the future", store.RejectionFilter{Since: time.Now().Add(time.Hour)}, nil},
		{"limit", store.RejectionFilter{Limit: 1}, []string{"e3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tb.store.Rejections(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if g := ids(got); !slices.Equal(g, tt.want) {
				t.Errorf("event ids %v, want %v", g, tt.want)
			}
			for _, r := range got {
				if r.Payload != nil {
					t.Errorf("row %s carries its payload without Payloads", r.EventID)
				}
			}
		})
	}
	got, err := tb.store.Rejections(ctx, store.RejectionFilter{Payloads: true})
	if err != nil {
		t.Fatal(err)
	}
	payloads := map[string]string{}
	for _, r := range got {
		payloads[r.EventID] = string(r.Payload)
		if r.ReceivedAt.IsZero() || r.ID == 0 || r.Detail == "" {
			t.Errorf("row %+v lacks its id, time or detail", r)
		}
	}
	if payloads["e1"] != `{"x":1}` || payloads["e3"] != "" {
		t.Errorf("payloads %v: want e1's, and none for the deleted key's e3", payloads)
	}
}
