-- Refund desk schema. Portable between SQLite and PostgreSQL: TEXT and BIGINT only,
-- no serial columns, no booleans, no JSON types. Money is integer minor units plus an
-- ISO currency; time is unix milliseconds (UTC). Mutable rows carry `version` for
-- optimistic, versioned updates.

CREATE TABLE customers (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL,
    region TEXT NOT NULL,
    provider_customer_id TEXT NOT NULL
);

CREATE TABLE orders (
    id TEXT PRIMARY KEY,
    customer_id TEXT NOT NULL REFERENCES customers(id),
    product TEXT NOT NULL,
    amount_minor BIGINT NOT NULL,
    currency TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX orders_by_customer ON orders(customer_id);

CREATE TABLE staff (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

-- Bearer tokens (staff and customers) and console sessions; only SHA-256 hashes are stored.
CREATE TABLE auth_tokens (
    token_hash TEXT PRIMARY KEY,
    kind TEXT NOT NULL,            -- api | session
    subject_kind TEXT NOT NULL,    -- staff | customer
    subject_id TEXT NOT NULL,
    csrf_token TEXT,
    expires_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE tickets (
    id TEXT PRIMARY KEY,
    customer_id TEXT NOT NULL REFERENCES customers(id),
    order_id TEXT,
    language TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX tickets_by_customer ON tickets(customer_id);

CREATE TABLE messages (
    ticket_id TEXT NOT NULL REFERENCES tickets(id),
    seq BIGINT NOT NULL,
    author TEXT NOT NULL,          -- customer | agent | staff
    body TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (ticket_id, seq)
);

CREATE TABLE cases (
    id TEXT PRIMARY KEY,
    ticket_id TEXT NOT NULL UNIQUE REFERENCES tickets(id),
    customer_id TEXT NOT NULL,
    status TEXT NOT NULL,
    version BIGINT NOT NULL,
    proposal_seq BIGINT NOT NULL,  -- bumps on every new proposal; part of the fingerprint
    run_id TEXT,
    proposal TEXT,                 -- JSON
    facts TEXT,                    -- JSON: the facts the decision used
    decision TEXT,                 -- JSON: policy_engine::Decision
    evidence_hash TEXT,
    fingerprint TEXT,
    required_role TEXT,
    reason_code TEXT,
    refund_total_minor BIGINT,
    currency TEXT,
    void_reason TEXT,              -- why the last approval or proposal was voided
    lease_owner TEXT,
    lease_expires_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX cases_by_status ON cases(status);

CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    case_id TEXT NOT NULL REFERENCES cases(id),
    status TEXT NOT NULL,
    version BIGINT NOT NULL,
    model TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    steps BIGINT NOT NULL,
    tool_calls BIGINT NOT NULL,
    lease_owner TEXT,
    lease_expires_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX runs_by_status ON runs(status);

-- Append-only event log of a run: intents before they run, results after.
CREATE TABLE run_events (
    run_id TEXT NOT NULL REFERENCES runs(id),
    seq BIGINT NOT NULL,
    kind TEXT NOT NULL,
    call_id TEXT,
    payload TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    case_id TEXT NOT NULL REFERENCES cases(id),
    proposal_seq BIGINT NOT NULL,
    fingerprint TEXT NOT NULL,
    staff_id TEXT NOT NULL REFERENCES staff(id),
    verdict TEXT NOT NULL,         -- approved | rejected
    note TEXT,
    status TEXT NOT NULL,          -- valid | void | used
    created_at BIGINT NOT NULL,
    UNIQUE (case_id, proposal_seq)
);

-- One row per logical refund. The idempotency key is derived from the business action
-- and stored before the provider is called (SPEC invariant 4).
CREATE TABLE refund_intents (
    id TEXT PRIMARY KEY,
    case_id TEXT NOT NULL REFERENCES cases(id),
    approval_id TEXT NOT NULL REFERENCES approvals(id),
    charge_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    amount_minor BIGINT NOT NULL,
    currency TEXT NOT NULL,
    idempotency_key TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL,          -- created | submitting | pending | succeeded | failed | canceled | pending_verification | needs_review
    provider_refund_id TEXT,
    attempts BIGINT NOT NULL,
    last_error TEXT,
    version BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX refund_intents_by_case ON refund_intents(case_id);

CREATE TABLE audit_log (
    id TEXT PRIMARY KEY,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    subject TEXT NOT NULL,
    detail TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
