-- Issue 18: sub-agents. A child run (the LLM path's `billing` and `policy` readers) is a
-- run of its own — its own row, its own event log, so a crash resumes it from that log —
-- linked to the run that spawned it. Top-level runs have no parent; the worker's claim
-- and the watchdog look only at those (a child is advanced inside its parent's step,
-- under its parent's lease). `child_name` is the child's name in its parent's join.
ALTER TABLE runs ADD COLUMN parent_run_id TEXT REFERENCES runs(id);
ALTER TABLE runs ADD COLUMN child_name TEXT;
-- One child of each name per parent (a resumed parent finds the children it spawned,
-- never spawns them twice); top-level runs have no parent, and NULLs never collide.
CREATE UNIQUE INDEX runs_by_parent ON runs(parent_run_id, child_name);
