-- +goose Up

-- The focus profile's archive: every entry extracted from a conversation's
-- summarised messages (one per sentence, list item or line), restatements
-- collapsed, bounded per conversation. The view served for a request is
-- chosen from it through the indexes below, never by reading it whole.
CREATE TABLE recall_archive (
    user_id          text     NOT NULL,
    conversation_id  text     NOT NULL,
    -- idx: the message's index in the history; span_start, span_end: the
    -- excerpt's byte range in the message's text.
    idx              integer  NOT NULL,
    span_start       integer  NOT NULL,
    span_end         integer  NOT NULL,
    role             text     NOT NULL,
    message_id       bytea    NOT NULL,
    excerpt          bytea    NOT NULL,
    truncated        boolean  NOT NULL,
    -- bucket: 0 constraints, 1 decisions, 2 open_work, 3 recent_context;
    -- tier: the view's rank (evidence.Tier).
    bucket           smallint NOT NULL,
    tier             smallint NOT NULL,
    -- weight: how many specific things the entry names (evidence.Item.Weight).
    weight           smallint NOT NULL,
    -- key_hash: hash of the restatement key; a restatement replaces the row.
    key_hash         bigint   NOT NULL,
    -- terms: the entry's search terms; term_hashes: each hashed with the
    -- conversation's key, so that the GIN index finds one conversation's
    -- entries only.
    terms            text[]   NOT NULL,
    term_hashes      bigint[] NOT NULL,
    PRIMARY KEY (user_id, conversation_id, idx, span_start),
    FOREIGN KEY (user_id, conversation_id) REFERENCES recall_conversation ON DELETE CASCADE
);
CREATE INDEX recall_archive_key ON recall_archive (user_id, conversation_id, key_hash);
CREATE INDEX recall_archive_tier ON recall_archive (user_id, conversation_id, tier, idx, span_start);
CREATE INDEX recall_archive_weight ON recall_archive (user_id, conversation_id, tier, weight DESC, idx, span_start);
CREATE INDEX recall_archive_bucket ON recall_archive (user_id, conversation_id, bucket, idx, span_start);
CREATE INDEX recall_archive_terms ON recall_archive USING gin (term_hashes);

-- archive_count: rows in recall_archive for the conversation; view: the
-- focus view's entries in priority order (JSON), for max_tokens.
ALTER TABLE recall_conversation
    ADD COLUMN archive_count integer NOT NULL DEFAULT 0,
    ADD COLUMN view bytea;

-- +goose Down
ALTER TABLE recall_conversation DROP COLUMN view, DROP COLUMN archive_count;
DROP TABLE recall_archive;
