-- +goose Up

-- A stream recreated with the database kept numbers its messages from 1
-- again: a rejection is one stream message of one incarnation of the
-- stream, told apart by the stream's creation time. Rows recorded before
-- this column existed keep NULL and never collide.
ALTER TABLE recall_rejection
    ADD COLUMN stream_created timestamptz,
    -- The payload is kept up to its first 64 KiB; the SHA-256 and size of
    -- the whole stay beside it.
    ADD COLUMN payload_sha256 bytea,
    ADD COLUMN payload_bytes  bigint;
DROP INDEX recall_rejection_stream_seq;
-- A redelivered event is recorded once.
CREATE UNIQUE INDEX recall_rejection_stream_message ON recall_rejection (stream, stream_created, stream_seq)
    WHERE stream_seq > 0;
UPDATE recall_rejection
SET payload_sha256 = sha256(payload), payload_bytes = length(payload), payload = substring(payload FROM 1 FOR 65536)
WHERE payload IS NOT NULL;

-- Tombstones expire after the rejection retention; the prune finds them.
CREATE INDEX recall_conversation_deleted_at ON recall_conversation (deleted_at) WHERE deleted_at IS NOT NULL;

-- +goose Down
DROP INDEX recall_conversation_deleted_at;
DROP INDEX recall_rejection_stream_message;
-- Older rows may now collide; keep the newest of each.
DELETE FROM recall_rejection a USING recall_rejection b
WHERE a.stream = b.stream AND a.stream_seq = b.stream_seq AND a.stream_seq > 0 AND a.id < b.id;
CREATE UNIQUE INDEX recall_rejection_stream_seq ON recall_rejection (stream, stream_seq) WHERE stream_seq > 0;
ALTER TABLE recall_rejection DROP COLUMN stream_created, DROP COLUMN payload_sha256, DROP COLUMN payload_bytes;
