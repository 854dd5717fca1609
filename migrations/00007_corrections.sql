-- +goose Up

-- slots: the things an archive entry names near a value (evidence.Slots);
-- slot_hashes: each hashed with the conversation's key, so that the GIN
-- index finds the earlier entries a later statement may correct among one
-- conversation's only. fix_idx, fix_span, fix_chance: the later statement
-- of the user that may correct the entry (evidence.Fix: its message, the
-- start of its span, the chance in ten thousandths); null for none.
-- Entries stored before have no slots: a later statement finds them by
-- none, and a view shows them as before.
ALTER TABLE recall_archive
    ADD COLUMN slots text[] NOT NULL DEFAULT '{}',
    ADD COLUMN slot_hashes bigint[] NOT NULL DEFAULT '{}',
    ADD COLUMN fix_idx integer,
    ADD COLUMN fix_span integer,
    ADD COLUMN fix_chance smallint;
CREATE INDEX recall_archive_slots ON recall_archive USING gin (slot_hashes);

-- +goose Down
DROP INDEX recall_archive_slots;
ALTER TABLE recall_archive DROP COLUMN fix_chance, DROP COLUMN fix_span, DROP COLUMN fix_idx,
    DROP COLUMN slot_hashes, DROP COLUMN slots;
