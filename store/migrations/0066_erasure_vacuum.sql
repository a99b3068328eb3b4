-- docs/spec/data.md, "Erasure": since this version every write zeroes the text it frees
-- (SQLite's `secure_delete` on the writer). A database that already held data may still
-- hold text freed before, in free pages and free space inside pages: the next erasure
-- rebuilds the file once (`VACUUM`) and deletes this row. A new database needs no such
-- rebuild. Writer: `customer_data::erase`.
CREATE TABLE erasure_vacuum_due (
    reason TEXT PRIMARY KEY,
    since BIGINT NOT NULL
);
INSERT INTO erasure_vacuum_due (reason, since)
SELECT 'text freed before secure_delete', 0
WHERE EXISTS (SELECT 1 FROM tickets) OR EXISTS (SELECT 1 FROM customers);
