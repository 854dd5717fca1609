package checkpointtest

import (
	"encoding/json"
	"os"
	"testing"
)

// DigestVectors is checkpoint/testdata/digest_vectors.json. The file was
// computed once by scripts/digest_vectors.py, an independent Python implementation of
// CONTRACT.md §3 (normalisation written from the contract, JCS by
// json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)).
// Regenerate it with `python3 scripts/digest_vectors.py` from the repository
// root only when the contract changes; never from the Go code.
type DigestVectors struct {
	ChainStart string `json:"chain_start"`
	Vectors    []struct {
		Group          string            `json:"group"`
		Form           string            `json:"form"`
		Messages       []json.RawMessage `json:"messages"`
		Canonical      []string          `json:"canonical"`
		MessageDigests []string          `json:"message_digests"`
		Chain          []string          `json:"chain"`
	} `json:"vectors"`
}

// LoadDigestVectors reads the digest vectors or fails the test.
func LoadDigestVectors(tb testing.TB) DigestVectors {
	tb.Helper()
	data, err := os.ReadFile(vectorsFile)
	if err != nil {
		tb.Fatal(err)
	}
	var v DigestVectors
	if err := json.Unmarshal(data, &v); err != nil {
		tb.Fatal(err)
	}
	if len(v.Vectors) == 0 {
		tb.Fatal("no digest vectors")
	}
	return v
}

// vectorsFile is the digest vectors' path from a test's directory, one
// level below the repository root (checkpoint/, evidence/).
const vectorsFile = "../checkpoint/testdata/digest_vectors.json"
