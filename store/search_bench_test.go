package store_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/recallhq/recall/store"
)

// BenchmarkSearch searches a conversation whose archive holds about 6,000
// entries, one client, with the search cache (the default) and without it
// (SearchCache -1: every search reads all its candidates). recall bench's
// scenario 6 measures the endpoint under concurrent load.
func BenchmarkSearch(b *testing.B) {
	tb := setup(b, 0)
	pool, writer := tb.pool, tb.store
	var h []json.RawMessage
	for i := range 1500 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		text := fmt.Sprintf("Kemal%d reviewed the budget for venue %d. The caterer %d holds %d people. We must keep ticket %d open. Thanks for item %d.", i, i%97, i%89, i*3, i*7, i%83)
		m, _ := json.Marshal(map[string]any{"id": fmt.Sprint(i), "role": role, "content": text})
		h = append(h, m)
	}
	m, _ := json.Marshal(map[string]any{"id": "last", "role": "user", "content": "Where do we stand?"})
	h = append(h, m)
	if _, err := writer.Ingest(b.Context(), snapshot(b, "big", h), store.Meta{}); err != nil {
		b.Fatal(err)
	}
	if _, err := writer.Extract(b.Context(), "u", "c"); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(b.Context(), `ANALYZE recall_archive`); err != nil {
		b.Fatal(err)
	}
	queries := make([]string, 64)
	for i := range queries {
		queries[i] = fmt.Sprintf("the budget of venue %d and Kemal%d", i, i*23)
	}
	for _, tt := range []struct {
		name  string
		cache int
	}{{"cache", 0}, {"nocache", -1}} {
		b.Run(tt.name, func(b *testing.B) {
			st, err := store.New(pool, &store.Config{SearchCache: tt.cache})
			if err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				if _, err := st.Search(b.Context(), "u", "c", queries[i%len(queries)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
