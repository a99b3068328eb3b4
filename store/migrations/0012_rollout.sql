-- Issue 21: rolling the agent out per scope (shadow → canary → assist), guarded by
-- metrics computed from the records. Portable between SQLite and PostgreSQL, as 0001
-- is: TEXT and BIGINT only, time as unix milliseconds. Writer of all three: `rollout`.

-- The mode of each scope an admin (or a tripped guard) has set. A scope is `all`,
-- `region:EU`, `product:annual_plan` or `request:duplicate_charge`; with no row the
-- start-up switch `SHADOW_MODE` decides (on → shadow, off → assist).
CREATE TABLE rollout_modes (
    scope TEXT PRIMARY KEY,
    mode TEXT NOT NULL,            -- shadow | canary | assist
    percent BIGINT,                -- canary only: 1..=99
    updated_by TEXT NOT NULL,      -- a staff id, or `guard:<name>`
    reason TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);

-- The mode in force for each case when it was opened, and whether the reviewer works
-- from the agent's proposal (assist, canary-in) or decides blind (shadow, canary-out).
CREATE TABLE rollout_cases (
    case_id TEXT PRIMARY KEY REFERENCES cases(id),
    scope TEXT NOT NULL,
    mode TEXT NOT NULL,
    percent BIGINT,
    gets_proposal BIGINT NOT NULL, -- 1 | 0
    note TEXT,                     -- why a case opened with a proposal was decided blind
    -- What the case is about, as known (region at opening; product and request kind at
    -- the decision): the guards select a scope's cases by these.
    region TEXT,
    product TEXT,
    request TEXT,
    opened_at BIGINT NOT NULL
);
CREATE INDEX rollout_cases_by_opened ON rollout_cases(opened_at);

-- Each guard's value per scope per evaluation period (the console draws them). Keyed by
-- the period, so instances sharing a database evaluate a period once.
CREATE TABLE rollout_evaluations (
    scope TEXT NOT NULL,
    guard TEXT NOT NULL,
    period_start BIGINT NOT NULL,
    value_milli BIGINT,            -- the value × 1000 (a rate, or milliseconds); NULL when no sample
    threshold_milli BIGINT NOT NULL,
    sample BIGINT NOT NULL,
    tripped BIGINT NOT NULL,       -- 1 | 0
    PRIMARY KEY (scope, guard, period_start)
);
