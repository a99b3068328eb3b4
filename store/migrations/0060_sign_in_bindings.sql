-- Trust only what is proven (docs/spec/roles.md, "Signing in with the identity
-- provider"): a sign-in in flight is bound to the browser that started it. The SHA-256
-- of a random value that browser holds in a short-lived HttpOnly cookie; the callback
-- is taken only with that cookie. Portable: TEXT only. Writer: `auth::oidc`.
ALTER TABLE oidc_logins ADD COLUMN browser_hash TEXT;
