-- Issue 16: login throttling per address and per account, single-use customer sign-in
-- links, and the indexes that revoking and purging credentials read.

-- Each login attempt is written here before its password is checked (so parallel
-- guesses count each other) and kept only if it failed. `client` is the peer address.
DROP TABLE login_failures;
CREATE TABLE login_failures (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL,
    client TEXT NOT NULL,
    at BIGINT NOT NULL
);
CREATE INDEX login_failures_by_email ON login_failures(email, at);
CREATE INDEX login_failures_by_client ON login_failures(client, at);

-- A customer sign-in link: single use, 15 minutes, never an API token. Only the
-- SHA-256 of the link's token is stored.
CREATE TABLE sign_in_links (
    token_hash TEXT PRIMARY KEY,
    customer_id TEXT NOT NULL REFERENCES customers(id),
    expires_at BIGINT NOT NULL,
    used_at BIGINT,
    created_at BIGINT NOT NULL
);
CREATE INDEX sign_in_links_by_expiry ON sign_in_links(expires_at);

CREATE INDEX auth_tokens_by_subject ON auth_tokens(subject_kind, subject_id);
CREATE INDEX auth_tokens_by_expiry ON auth_tokens(expires_at);
