-- Issue 22: the policies live in the database. The files in fixtures/policies/ seed an
-- empty table; after that this is the source of truth (`refund-agent policy export`
-- writes the files back). Portable between SQLite and PostgreSQL, as 0001 is: TEXT and
-- BIGINT only, time as unix milliseconds. Writer of all three tables: `authoring`.

-- Every version the product knows, published or a draft as its front matter says. A
-- published row is immutable; a draft-status row (a seeded draft file) is replaced when
-- its version number is published. `markdown` and `rules` are the exact bytes of the
-- files (export writes them back byte for byte).
CREATE TABLE policy_versions (
    doc_id TEXT NOT NULL,
    version BIGINT NOT NULL,
    file_name TEXT NOT NULL,
    markdown TEXT NOT NULL,
    rules TEXT,
    status TEXT NOT NULL,
    -- 00:00 UTC of the effective date; 0 for a seeded version.
    effective_at BIGINT NOT NULL,
    published_by TEXT REFERENCES staff(id),
    published_at BIGINT,
    -- The what-if the publisher saw (JSON), and the draft version it checked.
    whatif TEXT,
    PRIMARY KEY (doc_id, version)
);

-- The next version of a document as its authors edit it: one draft per document.
-- `version` counts saves: a save names the version it started from (expected-version
-- write), so two authors cannot overwrite each other.
CREATE TABLE policy_drafts (
    doc_id TEXT PRIMARY KEY,
    policy_version BIGINT NOT NULL,
    markdown TEXT NOT NULL,
    rules TEXT,
    version BIGINT NOT NULL,
    updated_by TEXT NOT NULL REFERENCES staff(id),
    updated_at BIGINT NOT NULL,
    -- The last what-if run on this draft (JSON) and the draft version it ran on.
    whatif TEXT,
    whatif_version BIGINT
);

-- Everyone who saved a draft: publishing needs someone else when a second approver is
-- required (POLICY_SECOND_APPROVER=on).
CREATE TABLE policy_draft_authors (
    doc_id TEXT NOT NULL,
    staff_id TEXT NOT NULL REFERENCES staff(id),
    PRIMARY KEY (doc_id, staff_id)
);
