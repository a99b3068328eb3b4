-- Claiming the next run walks one status at a time in creation order, reading the index
-- instead of sorting every queued run on each pick (which made draining n queued
-- tickets O(n^2) on SQLite).
CREATE INDEX runs_by_status_created ON runs(status, created_at);
CREATE INDEX cases_by_status_updated ON cases(status, updated_at);
