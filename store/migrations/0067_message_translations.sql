-- Machine translations of customer messages for staff (docs/spec/interfaces.md, "Pages"):
-- asked of the configured model once per message and language, then read from here. The
-- original message stays in `messages`; a translation never replaces it. Its text is the
-- customer's words in another language: erased and expired with the message
-- (desk::customer_data).
CREATE TABLE message_translations (
    ticket_id TEXT NOT NULL REFERENCES tickets(id),
    seq BIGINT NOT NULL,
    language TEXT NOT NULL,
    text TEXT NOT NULL,
    model TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (ticket_id, seq, language)
);
