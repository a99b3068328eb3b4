-- Issue 40 (docs/spec/data.md): customers erased, and the gate a restore closes.

-- One row per erased customer: the pseudonym their money records are kept under, who
-- erased them and when. Erasing again reuses the row (harmless twice).
CREATE TABLE erasures (
    customer_id TEXT PRIMARY KEY,
    pseudonym TEXT NOT NULL,
    erased_by TEXT NOT NULL,
    first_erased_at BIGINT NOT NULL,
    last_erased_at BIGINT NOT NULL
);

-- Written by `restore`: every refund intent that was not final in the backup. No refund
-- is sent while a row here is unchecked; reconciliation against the provider checks it.
CREATE TABLE restore_checks (
    intent_id TEXT PRIMARY KEY,
    restored_at BIGINT NOT NULL,
    -- when the provider's records were read for this intent; NULL: the gate is closed
    checked_at BIGINT,
    -- what the provider held: adopted (its refund taken as ours) | absent
    outcome TEXT
);
