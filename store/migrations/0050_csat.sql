-- Customer satisfaction (docs/spec/interfaces.md, "CSAT"): one answer per ticket, given
-- by its customer after the case came to a resolution. Who resolved it and why are
-- copied at answer time, so the report does not change when the case later does.
CREATE TABLE csat_answers (
    ticket_id TEXT PRIMARY KEY REFERENCES tickets(id),
    case_id TEXT NOT NULL REFERENCES cases(id),
    rating BIGINT NOT NULL,
    comment TEXT,
    -- the staff member who decided (the approver or rejecter, else the case's owner);
    -- NULL when no person did: the agent resolved it alone
    resolved_by TEXT,
    reason_code TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX csat_answers_created ON csat_answers (created_at);
