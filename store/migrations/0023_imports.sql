-- Issue 36: a shop's own customers and orders, imported from its files. Portable between
-- SQLite and PostgreSQL, as 0001 is: TEXT and BIGINT only, time as unix milliseconds.
-- Writer: `onboarding` (`records` writes `customers` and `orders`, `import` the staging
-- tables).
--
-- An import is staged: every checked row of a file goes to its staging table under the
-- import's id; the set-wide checks (duplicate ids, unknown customers, shared emails or
-- provider customers) read it there; only when all of it is good does one transaction
-- upsert it into `customers` or `orders` and delete it. A failed or interrupted import
-- leaves nothing in `customers` or `orders`, and its staged rows are deleted (or, after a
-- crash, by the next import: rows staged more than a day ago).
CREATE TABLE import_customers (
    import_id TEXT NOT NULL,
    id TEXT NOT NULL,
    line BIGINT NOT NULL,
    name TEXT NOT NULL,
    email TEXT NOT NULL,
    -- lower-cased, trimmed: how customers are matched by email
    email_key TEXT NOT NULL,
    region TEXT NOT NULL,
    -- the provider's customer, given in the file or found by email; NULL: not linked
    provider_customer_id TEXT,
    -- given | email: how provider_customer_id was found
    linked_by TEXT,
    staged_at BIGINT NOT NULL,
    PRIMARY KEY (import_id, id)
);
CREATE INDEX import_customers_by_line ON import_customers(import_id, line);
CREATE INDEX import_customers_by_email ON import_customers(import_id, email_key);
CREATE INDEX import_customers_by_provider ON import_customers(import_id, provider_customer_id);

CREATE TABLE import_orders (
    import_id TEXT NOT NULL,
    id TEXT NOT NULL,
    line BIGINT NOT NULL,
    customer_id TEXT NOT NULL,
    product TEXT NOT NULL,
    amount_minor BIGINT NOT NULL,
    currency TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    staged_at BIGINT NOT NULL,
    PRIMARY KEY (import_id, id)
);
CREATE INDEX import_orders_by_line ON import_orders(import_id, line);

-- Customers are matched by email (a provider customer, a helpdesk requester) and by
-- provider customer (a charge's `customer`); `''` is "not linked".
CREATE INDEX customers_by_email_key ON customers(lower(email));
CREATE INDEX customers_by_provider ON customers(provider_customer_id);
