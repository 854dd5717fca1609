package publisher_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/recallhq/recall/publisher"
)

// An agent backend publishes the conversation's whole history after each
// turn; recall's workers turn it into evidence.
func Example() {
	url, stop := runServer() // an in-process NATS JetStream server
	defer stop()

	nc, err := nats.Connect(url)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		log.Fatal(err)
	}
	pub, err := publisher.New(js)
	if err != nil {
		log.Fatal(err)
	}

	history := []publisher.Message{
		{ID: "m0", Role: "user", Content: "We must ship by Friday."},
		{ID: "m1", Role: "assistant", Content: "Agreed: we'll use Postgres."},
		{ID: "m2", Role: "user", Content: "Next, draft the schema."},
	}
	ack, err := pub.PublishMessages(context.Background(), "u-42", "c-7", history)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: offset %d, %d messages, stream %s, sequence %d\n", ack.Kind, ack.Offset, ack.Sent, ack.Stream, ack.Sequence)
	// Output:
	// snapshot: offset 0, 3 messages, stream RECALL_CHECKPOINTS, sequence 1
}

// In append mode the publisher sends only what is new since the last event
// of the conversation, with the chain digest of what came before. A history
// that no longer starts with what was sent goes out as a full snapshot.
func ExampleWithMode() {
	js, _, stop := runJetStream() // a JetStream client, connected as in Example
	defer stop()

	n := 0
	pub, err := publisher.New(js,
		publisher.WithMode(publisher.Append),
		publisher.WithEventIDs(func() string { n++; return "evt-" + strconv.Itoa(n) }),
	)
	if err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	// Messages may come in any of the three forms, here LangChain's stored form.
	history := []json.RawMessage{
		json.RawMessage(`{"type":"human","data":{"id":"m0","content":"We must ship by Friday."}}`),
		json.RawMessage(`{"type":"ai","data":{"id":"m1","content":"Agreed: we'll use Postgres."}}`),
		json.RawMessage(`{"type":"human","data":{"id":"m2","content":"Next, draft the schema."}}`),
	}
	publish := func(h []json.RawMessage) {
		ack, err := pub.Publish(ctx, "u-42", "c-7", h)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: offset %d, %d messages\n", ack.EventID, ack.Offset, ack.Sent)
	}
	publish(history[:1]) // first event of the conversation: a snapshot
	publish(history)     // the history grew: an append

	edited := append([]json.RawMessage{
		json.RawMessage(`{"type":"human","data":{"id":"m0","content":"We must ship by Monday."}}`),
	}, history[1:]...)
	publish(edited) // the history changed: a snapshot again
	// Output:
	// evt-1: offset 0, 1 messages
	// evt-2: offset 1, 2 messages
	// evt-3: offset 0, 3 messages
}

// Delete publishes a delete event: recall deletes the conversation's evidence
// and messages and rejects later events for it.
func ExamplePublisher_Delete() {
	js, _, stop := runJetStream() // a JetStream client, connected as in Example
	defer stop()

	pub, err := publisher.New(js)
	if err != nil {
		log.Fatal(err)
	}
	ack, err := pub.Delete(context.Background(), "u-42", "c-7")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ack.Kind, ack.Sequence)
	// Output:
	// delete 1
}
