-- Each run records the tool schemas' version beside the model and the prompt's version
-- (issue 18), so shadow and eval reports can break agreement down by all three. Runs
-- created before this column existed say so.
ALTER TABLE runs ADD COLUMN tool_schema_version TEXT NOT NULL DEFAULT 'unrecorded';
