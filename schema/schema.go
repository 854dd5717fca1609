// Package schema holds the JSON Schema (draft 2020-12) of recall's
// checkpoint events, recall.checkpoint.v1 (docs/protocol.md), for publishers that
// validate what they send and for documentation.
//
// recall itself validates events with checkpoint.ParseEvent, not with this
// schema. The two agree on the samples in schema_test.go; where a schema
// cannot say what the parser checks (ids are bounded in UTF-8 bytes while
// maxLength counts characters, the event's size, RFC 8785 canonicalisation,
// the last element of a LangChain constructor id), the schema's $comment and
// the test's documented exceptions list the difference.
package schema

import _ "embed"

// CheckpointV1ID is the $id of the checkpoint schema.
const CheckpointV1ID = "https://raw.githubusercontent.com/recallhq/recall/main/schema/checkpoint.v1.json"

// CheckpointV1 is the JSON Schema of recall.checkpoint.v1 events.
//
//go:embed checkpoint.v1.json
var CheckpointV1 string
