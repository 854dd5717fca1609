-- +goose Up

-- The model lane (RECALL_EXTRACTOR=model): notes a model wrote from the
-- summarised messages, each from one message, shown beside the verbatim
-- entries of the archive. Deleted with the conversation.
CREATE TABLE recall_note (
    user_id          text     NOT NULL,
    conversation_id  text     NOT NULL,
    -- idx: the source message's index; ord: the note's place among the
    -- notes of that message.
    idx              integer  NOT NULL,
    ord              smallint NOT NULL,
    -- bucket: 0 constraints, 1 decisions, 2 open_work, 3 recent_context.
    bucket           smallint NOT NULL,
    role             text     NOT NULL,
    message_id       bytea    NOT NULL,
    text             bytea    NOT NULL,
    truncated        boolean  NOT NULL,
    PRIMARY KEY (user_id, conversation_id, idx, ord),
    FOREIGN KEY (user_id, conversation_id) REFERENCES recall_conversation ON DELETE CASCADE
);

-- What the lane's calls that failed did, without any text: the newest of
-- each conversation (their range, outcome, notes and tokens), for the
-- inspector; the calls that answered are counted in notes_calls.
-- Deleted with the conversation.
CREATE TABLE recall_model_call (
    id               bigserial        PRIMARY KEY,
    user_id          text             NOT NULL,
    conversation_id  text             NOT NULL,
    -- lo, hi: the range of messages the call covered, [lo, hi).
    lo               integer          NOT NULL,
    hi               integer          NOT NULL,
    attempt          integer          NOT NULL,
    outcome          text             NOT NULL,
    notes            integer          NOT NULL,
    dropped          integer          NOT NULL,
    tokens_in        integer          NOT NULL,
    tokens_out       integer          NOT NULL,
    seconds          double precision NOT NULL,
    called_at        timestamptz      NOT NULL DEFAULT now(),
    FOREIGN KEY (user_id, conversation_id) REFERENCES recall_conversation ON DELETE CASCADE
);
CREATE INDEX recall_model_call_key ON recall_model_call (user_id, conversation_id, id);

ALTER TABLE recall_conversation
    -- notes_cursor: the lane has had messages [0, notes_cursor); NULL where
    -- it never ran.
    ADD COLUMN notes_cursor integer,
    -- notes_hold_from: recall holds the messages from here on for the lane
    -- (the next call's pair window and new messages), beside those from
    -- the cursor on; NULL: none.
    ADD COLUMN notes_hold_from integer,
    -- notes_requested_at: when the conversation's notes job was enqueued,
    -- NULL when none is pending; extraction enqueues another only when it
    -- is NULL (or very old).
    ADD COLUMN notes_requested_at timestamptz,
    -- notes_count: rows in recall_note for the conversation.
    ADD COLUMN notes_count integer NOT NULL DEFAULT 0,
    -- notes_calls: the lane's calls that answered with notes (none, or
    -- some); those that failed are rows of recall_model_call.
    ADD COLUMN notes_calls integer NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE recall_conversation DROP COLUMN notes_calls, DROP COLUMN notes_count, DROP COLUMN notes_requested_at,
    DROP COLUMN notes_hold_from, DROP COLUMN notes_cursor;
DROP TABLE recall_model_call;
DROP TABLE recall_note;
