-- Payments: provider webhooks processed once, periodic jobs claimed once per period,
-- and when an idempotency key was first sent (its age at the provider counts from then).

-- One row per provider event id, inserted in the same transaction as the state change
-- the event caused, so a duplicate delivery changes nothing (SPEC invariant 4).
CREATE TABLE webhook_events (
    event_id TEXT PRIMARY KEY,
    event_type TEXT NOT NULL,
    refund_id TEXT,
    intent_id TEXT,
    outcome TEXT NOT NULL,         -- applied | unchanged | unmatched | ignored
    received_at BIGINT NOT NULL
);

-- Periodic background jobs (reconciliation): the instance that moves `last_run_at`
-- forward runs the job; the last report is kept for the console.
CREATE TABLE job_runs (
    name TEXT PRIMARY KEY,
    last_run_at BIGINT NOT NULL,
    last_report TEXT
);

ALTER TABLE refund_intents ADD COLUMN first_submitted_at BIGINT;
