-- Issue 37: email in and out (docs/spec/email.md). Portable between SQLite and
-- PostgreSQL, as 0001 is: TEXT and BIGINT only, time as unix milliseconds, bytes as
-- base64 text.

-- Every mail the product sends, written in the same transaction as the change it
-- reports. Its Message-ID is derived from `id`, so a resend is the same mail. `raw` holds
-- the rendered message from its first attempt until it is sent (a resend after a crash
-- sends the same bytes), then is cleared: it carries a sign-in link. Writer: `mailbox`.
CREATE TABLE mail_outbox (
    id TEXT PRIMARY KEY,
    -- received | reply | question | approved | submitted | completed | verifying |
    -- failed | rejected | closed | reopened | unknown_sender | confirm_sender |
    -- staff_assigned | staff_escalation
    kind TEXT NOT NULL,
    -- customer (the address on record) | staff | sender (an unknown sender's address)
    recipient_kind TEXT NOT NULL,
    customer_id TEXT,
    staff_id TEXT,
    address TEXT,
    ticket_id TEXT,
    case_id TEXT,
    language TEXT NOT NULL,
    body TEXT NOT NULL,
    -- The inbound mail this one answers (its Message-ID), for the customer's threading.
    in_reply_to TEXT,
    -- pending | sent | undeliverable | expired
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL,
    next_attempt_at BIGINT NOT NULL,
    last_error TEXT,
    recipient TEXT,
    raw TEXT,
    lease_owner TEXT,
    lease_expires_at BIGINT,
    version BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    -- The order the rows were written in (one transaction writes several with the same
    -- clock): a customer's mails go out, and are listed, in the order of their changes.
    seq BIGINT NOT NULL,
    sent_at BIGINT
);
CREATE INDEX mail_outbox_due ON mail_outbox(status, next_attempt_at);
CREATE INDEX mail_outbox_by_ticket ON mail_outbox(ticket_id);

-- Every mail taken in (API or IMAP), once by its Message-ID (or the SHA-256 of its bytes
-- when it has none). `raw` (base64) is kept only while the mail is held — by the
-- per-sender rate limit or until an unverified sender confirms through a link — and
-- cleared once it is processed. Writer: `mailbox`.
CREATE TABLE mail_inbound (
    id TEXT PRIMARY KEY,
    message_key TEXT NOT NULL UNIQUE,
    sender TEXT NOT NULL,
    source TEXT NOT NULL,
    -- held | unverified | done
    status TEXT NOT NULL,
    outcome TEXT,
    reason TEXT,
    ticket_id TEXT,
    customer_id TEXT,
    raw TEXT,
    -- The SHA-256 of the sign-in link that releases an unverified mail.
    confirm_link_hash TEXT,
    imap_uid TEXT,
    received_at BIGINT NOT NULL,
    process_after BIGINT NOT NULL,
    processed_at BIGINT,
    -- The order the mails came in (several may share a millisecond): held mail is taken
    -- in this order, so a customer's messages reach the ticket as they wrote them.
    seq BIGINT NOT NULL
);
CREATE INDEX mail_inbound_waiting ON mail_inbound(status, process_after);
CREATE INDEX mail_inbound_by_sender ON mail_inbound(sender, received_at);
CREATE INDEX mail_inbound_by_ticket ON mail_inbound(ticket_id);

-- Attachments of customer mail, served to staff as downloads only. Writer: `mailbox`.
CREATE TABLE mail_attachments (
    id TEXT PRIMARY KEY,
    ticket_id TEXT NOT NULL REFERENCES tickets(id),
    message_seq BIGINT NOT NULL,
    filename TEXT NOT NULL,
    content_type TEXT NOT NULL,
    size BIGINT NOT NULL,
    content TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX mail_attachments_by_ticket ON mail_attachments(ticket_id, message_seq);

-- What we know of an address: a bounce (or a refusal by the receiving server) marks it
-- undeliverable, shown to staff; the last reply to an unknown sender, so they get one.
-- Writer: `mailbox`.
CREATE TABLE mail_addresses (
    address TEXT PRIMARY KEY,
    undeliverable_at BIGINT,
    undeliverable_reason TEXT,
    unknown_sender_reply_at BIGINT
);

-- The channel a message came by (`web` when NULL, or `email`), and the part of a mail
-- that is not its new words — the quoted thread and the signature — which staff see
-- collapsed. Writer: `tickets`.
ALTER TABLE messages ADD COLUMN channel TEXT;
ALTER TABLE messages ADD COLUMN quoted TEXT;
