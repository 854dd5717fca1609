-- +goose Up
-- The sweep finds conversations whose requested extraction has not run.
CREATE INDEX recall_conversation_extract_requested_at ON recall_conversation (extract_requested_at)
    WHERE extract_requested_at IS NOT NULL;

-- +goose Down
DROP INDEX recall_conversation_extract_requested_at;
