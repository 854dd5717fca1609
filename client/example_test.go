package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/recallhq/recall/client"
)

// The examples run against the recall TestMain starts: apiURL is its
// address, as RECALL_API_URL would be, and token signs what `recall token`
// prints.

func Example() {
	ctx := context.Background()
	c, err := client.New(apiURL, token("alice", false))
	if err != nil {
		log.Fatal(err)
	}
	// A conversation recall has not seen yet has version 0 and no message.
	ev, err := c.Evidence(ctx, "alice", "conversation-1", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("version:", ev.Version, "message:", ev.Message != nil)

	page, err := c.ListConversations(ctx, "alice", &client.ListOptions{Limit: 10})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("conversations:", len(page.Conversations))
	// Output:
	// version: 0 message: false
	// conversations: 0
}

func ExampleAPIError() {
	ctx := context.Background()
	// alice's token may not read bob's conversations.
	c, err := client.New(apiURL, token("alice", false))
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.Evidence(ctx, "bob", "conversation-1", nil)
	if apiErr, ok := errors.AsType[*client.APIError](err); ok {
		fmt.Println(apiErr.Status, apiErr.Code)
	}
	// Output:
	// 403 forbidden
}

func ExampleClient_Export() {
	ctx := context.Background()
	c, err := client.New(apiURL, token("carol", false))
	if err != nil {
		log.Fatal(err)
	}
	for line, err := range c.Export(ctx, "carol") {
		if err != nil {
			log.Fatal(err) // refused, or cut short: ask again
		}
		if line.End != nil {
			fmt.Println("end:", line.End.Conversations, "conversations")
		}
	}
	// Output:
	// end: 0 conversations
}
