-- Issue 17: one open case per order. Portable between SQLite and PostgreSQL, as 0001
-- is: TEXT and BIGINT only, time as unix milliseconds.

-- Which case works on a customer's order. A second ticket about an order whose claimed
-- case is still open joins that case instead of becoming a second refund case. The
-- primary key is what serialises two cases deciding on one order at once, on SQLite
-- (one writer) and on PostgreSQL (an insert waits for a conflicting one to commit).
-- Writer: `cases` (`cases::joining`).
CREATE TABLE order_claims (
    customer_id TEXT NOT NULL,
    order_id TEXT NOT NULL,
    case_id TEXT NOT NULL REFERENCES cases(id),
    claimed_at BIGINT NOT NULL,
    PRIMARY KEY (customer_id, order_id)
);

-- The case a closed case was joined into (it was about the same order). Writer: `cases`.
ALTER TABLE cases ADD COLUMN joined_into TEXT REFERENCES cases(id);
CREATE INDEX cases_by_joined_into ON cases(joined_into);
