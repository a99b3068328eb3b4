-- payments-mock schema, version 1.
-- Amounts are integer minor units (as on the Stripe wire); times are unix seconds
-- on the mock's clock. `seq` orders rows created within the same second.

CREATE TABLE charges (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT    NOT NULL UNIQUE,
    amount          INTEGER NOT NULL CHECK (amount >= 0),
    amount_refunded INTEGER NOT NULL DEFAULT 0 CHECK (amount_refunded >= 0),
    currency        TEXT    NOT NULL,
    customer        TEXT,
    captured        INTEGER NOT NULL,
    status          TEXT    NOT NULL,
    disputed        INTEGER NOT NULL DEFAULT 0,
    created         INTEGER NOT NULL,
    payment_method  TEXT,
    payment_intent  TEXT,
    metadata        TEXT    NOT NULL DEFAULT '{}',
    -- status given to refunds created through the API:
    -- succeeded | pending | requires_action | fail_later
    refund_profile  TEXT    NOT NULL DEFAULT 'succeeded'
);
CREATE INDEX charges_customer ON charges (customer, created, seq);

CREATE TABLE refunds (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT    NOT NULL UNIQUE,
    charge_id       TEXT    NOT NULL REFERENCES charges (id),
    amount          INTEGER NOT NULL CHECK (amount > 0),
    currency        TEXT    NOT NULL,
    status          TEXT    NOT NULL,
    reason          TEXT,
    failure_reason  TEXT,
    metadata        TEXT    NOT NULL DEFAULT '{}',
    created         INTEGER NOT NULL,
    -- 'api' (POST /v1/refunds) or 'world' (POST /__mock/world)
    origin          TEXT    NOT NULL,
    idempotency_key TEXT,
    request_id      TEXT
);
CREATE INDEX refunds_charge ON refunds (charge_id, created, seq);

-- One row per (API key, Idempotency-Key) whose endpoint began execution. The row
-- is written in the same transaction as the side effects it describes.
CREATE TABLE idempotency_keys (
    api_key         TEXT    NOT NULL,
    idempotency_key TEXT    NOT NULL,
    method          TEXT    NOT NULL,
    path            TEXT    NOT NULL,
    params          TEXT    NOT NULL,
    response_status INTEGER NOT NULL,
    response_body   TEXT    NOT NULL,
    refund_id       TEXT,
    request_id      TEXT    NOT NULL,
    created         INTEGER NOT NULL,
    PRIMARY KEY (api_key, idempotency_key)
);

CREATE TABLE events (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT    NOT NULL UNIQUE,
    type             TEXT    NOT NULL,
    created          INTEGER NOT NULL,
    payload          TEXT    NOT NULL,
    delivery_success INTEGER NOT NULL DEFAULT 0,
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  INTEGER
);

-- Single-row table: the fake clock's offset from the system clock.
CREATE TABLE clock (
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    offset_seconds INTEGER NOT NULL
);
INSERT INTO clock (id, offset_seconds) VALUES (1, 0);
