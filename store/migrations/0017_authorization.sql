-- Roles checked in one place, four eyes that hold, reads that never stall writes
-- (docs/spec/roles.md). Portable between SQLite and PostgreSQL: TEXT and BIGINT only.

-- Who saved each version of a draft. The draft row keeps only the latest text; this
-- keeps every save of the next version of a document (`policy_version`), so publishing
-- can ask who last changed it and who changed it since the last publish. Writer:
-- `authoring::drafts`.
CREATE TABLE policy_draft_saves (
    doc_id TEXT NOT NULL,
    policy_version BIGINT NOT NULL,
    draft_version BIGINT NOT NULL,
    staff_id TEXT NOT NULL REFERENCES staff(id),
    saved_at BIGINT NOT NULL,
    PRIMARY KEY (doc_id, policy_version, draft_version)
);

-- `/metrics` counts rows by status: covering indexes make each count a scan of a
-- small index instead of the table (runs are counted apart by `parent_run_id`).
CREATE INDEX runs_by_parent_status ON runs(parent_run_id, status);
CREATE INDEX approvals_by_status_verdict ON approvals(status, verdict);
CREATE INDEX refund_intents_by_status ON refund_intents(status);

-- When the customer asked for a person: such a case stays with a person, whatever the
-- customer writes next (it is not handed back to the agent). Writer: `cases`.
ALTER TABLE cases ADD COLUMN person_requested_at BIGINT;
