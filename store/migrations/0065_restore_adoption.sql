-- docs/spec/data.md, "Backups": a restore is not finished until the refunds the provider
-- made on the restored charges since the backup are adopted into their cases. One row
-- per `restore`; while a row's `adopted_at` is NULL nothing is served or executed
-- (`serve` adopts first, the worker refuses to work). Writer: `customer_data::restore`.
CREATE TABLE restores (
    id TEXT PRIMARY KEY,
    restored_at BIGINT NOT NULL,
    -- when every restored charge was read at the provider and what it held adopted
    adopted_at BIGINT,
    -- what the adoption found, as JSON (counts and ids; never a name or a message)
    report TEXT
);
