-- payments-mock schema, version 3: customers (`GET /v1/customers`, for linking a shop's
-- customers by email) and disputes (`charge.dispute.*` events).

CREATE TABLE customers (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    id       TEXT    NOT NULL UNIQUE,
    email    TEXT,
    name     TEXT,
    created  INTEGER NOT NULL,
    metadata TEXT    NOT NULL DEFAULT '{}'
);
CREATE INDEX customers_email ON customers (email, created, seq);

CREATE TABLE disputes (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    id       TEXT    NOT NULL UNIQUE,
    charge_id TEXT   NOT NULL REFERENCES charges (id),
    amount   INTEGER NOT NULL,
    currency TEXT    NOT NULL,
    -- warning_needs_response | needs_response | under_review | won | lost | ...
    status   TEXT    NOT NULL,
    reason   TEXT    NOT NULL,
    created  INTEGER NOT NULL
);
CREATE INDEX disputes_charge ON disputes (charge_id, created, seq);
