-- Team accounts (docs/spec/roles.md): staff invited, deactivated and provisioned by the
-- company's identity provider; tokens that are named, expire and can be listed and
-- revoked. Portable between SQLite and PostgreSQL: TEXT and BIGINT only. Writer of every
-- table and column here: `auth`.

-- A deactivated person holds no session or token and cannot sign in; the row stays, so
-- their approvals and audit lines keep their name.
ALTER TABLE staff ADD COLUMN deactivated_at BIGINT;
-- How the identity provider knows them: its `iss` and `sub` (OpenID Connect), and the
-- SCIM client's own id for the person.
ALTER TABLE staff ADD COLUMN oidc_subject TEXT;
ALTER TABLE staff ADD COLUMN external_id TEXT;
ALTER TABLE staff ADD COLUMN display_name TEXT;
ALTER TABLE staff ADD COLUMN updated_at BIGINT;
CREATE UNIQUE INDEX staff_by_oidc_subject ON staff(oidc_subject);

-- A public id to list and revoke a token by (the hash stays the key), and its name.
ALTER TABLE auth_tokens ADD COLUMN token_id TEXT;
ALTER TABLE auth_tokens ADD COLUMN name TEXT;
UPDATE auth_tokens SET token_id = 'tok_' || substr(token_hash, 1, 24) WHERE token_id IS NULL;
CREATE UNIQUE INDEX auth_tokens_by_token_id ON auth_tokens(token_id);

-- An invitation: a single-use link for one email and role.
CREATE TABLE staff_invites (
    token_hash TEXT PRIMARY KEY,
    email TEXT NOT NULL,
    role TEXT NOT NULL,
    invited_by TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at BIGINT,
    created_at BIGINT NOT NULL
);
CREATE INDEX staff_invites_by_email ON staff_invites(email);

-- SCIM groups: a group whose name is mapped to a role (`GROUP_ROLES`) gives its members
-- that role.
CREATE TABLE scim_groups (
    id TEXT PRIMARY KEY,
    display_name TEXT NOT NULL UNIQUE,
    external_id TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
-- A member is the id the SCIM client names; one naming no staff member (yet) is kept
-- and gives nobody a role.
CREATE TABLE scim_group_members (
    group_id TEXT NOT NULL REFERENCES scim_groups(id),
    staff_id TEXT NOT NULL,
    PRIMARY KEY (group_id, staff_id)
);

-- A sign-in with the identity provider in flight: the state's hash, its nonce and PKCE
-- verifier, used once.
CREATE TABLE oidc_logins (
    state_hash TEXT PRIMARY KEY,
    nonce TEXT NOT NULL,
    pkce_verifier TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

-- A staff member the SCIM client deleted: deactivated, and no longer a SCIM resource (the
-- row stays for the audit trail and the approvals it signed).
ALTER TABLE staff ADD COLUMN scim_deleted_at BIGINT;
