-- Failed console logins, for rate limiting across instances.
CREATE TABLE login_failures (
    email TEXT NOT NULL,
    at BIGINT NOT NULL
);
CREATE INDEX login_failures_by_email ON login_failures(email, at);
