-- Who is on a case right now (issue 38, "presence"): one row per staff member and case,
-- refreshed by their open page every few seconds; a row older than the freshness window
-- is nobody. Kept in the database, not one process's memory, so every instance behind a
-- load balancer sees the same people.
CREATE TABLE case_presence (
    case_id TEXT NOT NULL REFERENCES cases(id),
    staff_id TEXT NOT NULL REFERENCES staff(id),
    activity TEXT NOT NULL,        -- viewing | replying
    seen_at BIGINT NOT NULL,
    PRIMARY KEY (case_id, staff_id)
);
CREATE INDEX case_presence_seen ON case_presence (seen_at);
