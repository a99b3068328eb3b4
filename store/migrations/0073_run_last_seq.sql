-- The sequence number of a run's last event, kept on the run's row. A step's versioned
-- update advances it and the step's events take their numbers from the row that update
-- locked, so appending to a run's log never scans its events for MAX(seq) and a step
-- on PostgreSQL is one statement (a data-modifying WITH). Runs from before this column
-- take the number of their last stored event.
ALTER TABLE runs ADD COLUMN last_seq BIGINT NOT NULL DEFAULT 0;
UPDATE runs SET last_seq = COALESCE((SELECT MAX(e.seq) FROM run_events e WHERE e.run_id = runs.id), 0);
