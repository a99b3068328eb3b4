-- Issue 17: saved replies (macros) per language, which staff insert into a reply and
-- edit before sending. Portable between SQLite and PostgreSQL, as 0001 is: TEXT and
-- BIGINT only, time as unix milliseconds. Writer: `saved_replies`.
CREATE TABLE saved_replies (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    -- en | zh | ja: offered on the cases whose ticket is in this language.
    language TEXT NOT NULL,
    body TEXT NOT NULL,
    created_by TEXT NOT NULL REFERENCES staff(id),
    created_at BIGINT NOT NULL,
    UNIQUE (language, name)
);
