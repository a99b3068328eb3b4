-- Issue 18 (seed §15.1): the stuck-run watchdog. One row per stall of a run: a run
-- that made no progress since `stalled_since` (the time of its last progress event)
-- is flagged once for that stall; the primary key is what makes two instances
-- scanning at once flag it once. A run that progresses and stalls again gets a new
-- row. Written only by `watchdog`.
CREATE TABLE watchdog_flags (
    run_id TEXT NOT NULL REFERENCES runs(id),
    stalled_since BIGINT NOT NULL,
    case_id TEXT NOT NULL REFERENCES cases(id),
    waiting_on TEXT NOT NULL,
    summary TEXT NOT NULL,
    diagnosis TEXT NOT NULL,
    flagged_at BIGINT NOT NULL,
    -- Set when the run progressed (or ended) after the flag: the flag is over.
    cleared_at BIGINT,
    -- Set when the case was handed to a human after the second period.
    handed_off_at BIGINT,
    PRIMARY KEY (run_id, stalled_since)
);
CREATE INDEX watchdog_flags_open ON watchdog_flags(cleared_at, handed_off_at);
CREATE INDEX watchdog_flags_by_case ON watchdog_flags(case_id);
