package wake

import (
	"fmt"
	"strings"

	"github.com/recallhq/recall/partition"
)

// SubjectPrefix begins every wake subject SubjectFor returns.
const SubjectPrefix = "recall.wake"

// SubjectFor returns the wake subject of the partition whose checkpoint
// events stream carries: recall.wake.STREAM. Each partition has a stream of
// its own (docs/scaling.md), so its workers and the API processes that read
// its database meet on one subject, and no process hears another
// partition's wake-ups. A stream name is a valid subject token.
func SubjectFor(stream string) string {
	return SubjectPrefix + "." + stream
}

// keySubject returns the subject of a key's wake-ups under subject.
func keySubject(subject, userID, conversationID string) string {
	return subject + "." + partition.Token(userID, conversationID)
}

// validateSubject reports a wake subject that cannot carry wake-ups: it
// must be a literal subject (no wildcards, spaces or empty tokens), which
// the key's token is appended to.
func validateSubject(subject string) error {
	if subject == "" {
		return fmt.Errorf("wake: the subject is empty: give it one, such as wake.SubjectFor(stream) (%s.RECALL_CHECKPOINTS)", SubjectPrefix)
	}
	for tok := range strings.SplitSeq(subject, ".") {
		if tok == "" || strings.ContainsAny(tok, "*> \t\r\n") {
			return fmt.Errorf("wake: the subject %q is not a literal NATS subject: use tokens without wildcards or spaces, joined by single dots", subject)
		}
	}
	return nil
}
