-- payments-mock schema, version 2: refund failures and webhook delivery tracking.

ALTER TABLE refunds ADD COLUMN failure_balance_transaction TEXT;

-- Delivery scheduling runs on the real clock in milliseconds (a compressed version of
-- Stripe's days-long retry schedule), apart from `created` which is mock time.
ALTER TABLE events ADD COLUMN next_attempt_ms INTEGER;
-- 1 once the event-level webhook faults (drop, delay, duplicate, out of order) were decided.
ALTER TABLE events ADD COLUMN faults_checked INTEGER NOT NULL DEFAULT 0;
-- webhook_drop: never delivered, so it stays delivery_success = 0.
ALTER TABLE events ADD COLUMN dropped INTEGER NOT NULL DEFAULT 0;
-- webhook_out_of_order: held until a later event has been attempted.
ALTER TABLE events ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
-- webhook_duplicate: copies sent per successful attempt.
ALTER TABLE events ADD COLUMN copies INTEGER NOT NULL DEFAULT 1;

UPDATE events SET next_attempt_ms = next_attempt_at * 1000 WHERE delivery_success = 0;

-- One row per HTTP POST of an event to the receiver (duplicates included).
CREATE TABLE webhook_deliveries (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id     TEXT    NOT NULL REFERENCES events (id),
    attempt      INTEGER NOT NULL,
    copy         INTEGER NOT NULL,
    -- mock clock, unix seconds; also the `t=` signed (except stale_ts faults)
    sent_at      INTEGER NOT NULL,
    signature    TEXT,
    -- receiver's status; NULL when the request failed (error holds why)
    status       INTEGER,
    error        TEXT,
    -- the webhook_bad_signature variant applied, if any
    fault        TEXT
);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id, seq);
