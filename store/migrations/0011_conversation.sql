-- Issue 17: conversation work on a case. Portable between SQLite and PostgreSQL, as
-- 0001 is: TEXT and BIGINT only, time as unix milliseconds.

-- Internal notes: staff-only text about a case. Kept apart from `messages` (the
-- customer's conversation) so that no query behind a customer surface can ever read
-- one — a note is never a message with a flag. Writer: `cases` (`cases::notes`).
CREATE TABLE case_notes (
    id TEXT PRIMARY KEY,
    case_id TEXT NOT NULL REFERENCES cases(id),
    staff_id TEXT NOT NULL REFERENCES staff(id),
    body TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX case_notes_by_case ON case_notes(case_id, created_at);

-- The staff member who wrote a staff reply (`author = 'staff'`); NULL for the
-- customer's and the agent's messages. Writer: `tickets`.
ALTER TABLE messages ADD COLUMN staff_id TEXT REFERENCES staff(id);

-- Who works on a case (take, assign to) and why a case was closed by hand. Writer:
-- `cases`. Assignment is not a lifecycle change: it does not bump `version`.
ALTER TABLE cases ADD COLUMN assignee_id TEXT REFERENCES staff(id);
ALTER TABLE cases ADD COLUMN close_reason TEXT;
CREATE INDEX cases_by_assignee ON cases(assignee_id);
