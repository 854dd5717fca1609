-- +goose Up

-- One row per conversation key. The row is also the conversation's lock:
-- ingest and extraction both take it FOR UPDATE, so they serialise per
-- conversation and never globally. A deleted conversation keeps its row as a
-- tombstone (deleted_at set, everything else cleared).
CREATE TABLE recall_conversation (
    user_id          text        NOT NULL,
    conversation_id  text        NOT NULL,
    -- version grows by one each time the evidence changes.
    version          bigint      NOT NULL DEFAULT 0,
    -- cursor: how many leading messages are summarised.
    "cursor"         integer     NOT NULL DEFAULT 0,
    -- message_count: length of the history recall holds (longest accepted).
    message_count    integer     NOT NULL DEFAULT 0,
    -- prefix_digest: chain digest of messages [0, cursor).
    prefix_digest    bytea       NOT NULL,
    -- body: the evidence as served (evidence.AppendBody), NULL when none.
    body             bytea,
    updated_at       timestamptz,
    -- extract_requested_at: when ingest last enqueued an extraction that has
    -- not taken the lock yet (NULL: none pending). Ingest enqueues another
    -- one only when this is NULL or old, which coalesces bursts.
    extract_requested_at timestamptz,
    -- published_at: publication time of the newest event ingested, for the
    -- lag metric.
    published_at     timestamptz,
    deleted_at       timestamptz,
    PRIMARY KEY (user_id, conversation_id)
);

-- The messages recall holds until they are summarised: the history's
-- [cursor, message_count). Only what extraction needs is kept, and the text
-- only of messages that may become evidence.
CREATE TABLE recall_message (
    user_id          text     NOT NULL,
    conversation_id  text     NOT NULL,
    idx              integer  NOT NULL,
    -- digest: the message digest m_idx; chain: c_(idx+1).
    digest           bytea    NOT NULL,
    chain            bytea    NOT NULL,
    role             text     NOT NULL,
    evidential       boolean  NOT NULL,
    message_id       bytea    NOT NULL,
    text             bytea,
    PRIMARY KEY (user_id, conversation_id, idx),
    FOREIGN KEY (user_id, conversation_id) REFERENCES recall_conversation ON DELETE CASCADE
);

-- Events that could not be applied (§7), with their payload for replay.
CREATE TABLE recall_rejection (
    id               bigserial   PRIMARY KEY,
    reason           text        NOT NULL,
    detail           text        NOT NULL,
    event_id         text        NOT NULL DEFAULT '',
    user_id          text        NOT NULL DEFAULT '',
    conversation_id  text        NOT NULL DEFAULT '',
    stream           text        NOT NULL DEFAULT '',
    stream_seq       bigint      NOT NULL DEFAULT 0,
    payload          bytea,
    received_at      timestamptz NOT NULL DEFAULT now()
);
-- A redelivered event is recorded once.
CREATE UNIQUE INDEX recall_rejection_stream_seq ON recall_rejection (stream, stream_seq) WHERE stream_seq > 0;
CREATE INDEX recall_rejection_key ON recall_rejection (user_id, conversation_id);
CREATE INDEX recall_rejection_received_at ON recall_rejection (received_at);

-- +goose Down
DROP TABLE recall_rejection;
DROP TABLE recall_message;
DROP TABLE recall_conversation;
