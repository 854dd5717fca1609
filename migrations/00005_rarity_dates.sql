-- +goose Up

-- traits: what an archive entry's weight owes to the specific things it
-- names (evidence.Traits), so that a view weighs it again by the rarity of
-- those things in its conversation now; 0 for entries stored before.
-- date: the date the history last named at or before the entry's message
-- (a session's date line, a message's timestamp), shown with the entry.
ALTER TABLE recall_archive
    ADD COLUMN traits integer NOT NULL DEFAULT 0,
    ADD COLUMN date text;

-- carry: what the focus fold carries from one message to the next besides
-- the archive (evidence.Carry, JSON): how many entries name each kind of
-- specific thing, and the date the history last named.
ALTER TABLE recall_conversation ADD COLUMN carry bytea;

-- +goose Down
ALTER TABLE recall_conversation DROP COLUMN carry;
ALTER TABLE recall_archive DROP COLUMN date, DROP COLUMN traits;
