//! Every table of the schema, classified in one place (docs/spec/data.md): which rows
//! belong to one customer, and what each TEXT column holds — nothing personal, the
//! customer's name or email, free text they wrote (or that may quote them), or staff's
//! own data. Export, erasure and retention are all driven from [`TABLES`]; a test lists
//! the live schema and fails on any table or TEXT column missing here.
//!
//! Deliberately not here: the SQL that moves money, and the provider's own records
//! (the payment provider holds its copy of a customer; erasing there is the provider's
//! process).
//!
//! Long because it is the one list (`TABLES`) that every table must appear in, so an
//! unclassified column fails one check in one place; a list split in parts could miss a
//! table.

/// What a column holds, and so what erasure does to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Nothing personal: ids, codes, statuses, amounts (as text), times, hashes.
    Keep,
    /// The customer's name: replaced by the pseudonym.
    Name,
    /// The customer's email (or a key made from it): replaced by `pseudonym@erased.invalid`.
    Email,
    /// Free text the customer wrote, or that may quote them: replaced by [`ERASED`].
    Text,
    /// A JSON document that may quote the customer anywhere in it (a run event: the
    /// model's input, a tool's result): replaced whole by [`ERASED_JSON`].
    Payload,
    /// A JSON document whose `summary` string may quote the customer (a proposal): that
    /// string is replaced, the rest (request kind, refunds, evidence ids) is kept so
    /// statistics keep their counts.
    Summary,
    /// Staff's own data (their email, their saved templates): not a customer's.
    Staff,
    /// A Message-ID of the customer's mail (their mail client writes their host, often
    /// their name, into it): replaced by [`ERASED`] and the row's own key, so a column
    /// that must stay unique (intake once per Message-ID) still is.
    MessageId,
}

/// What replaces erased or expired text.
pub const ERASED: &str = "[erased]";
/// What replaces an erased or expired JSON payload.
pub const ERASED_JSON: &str = r#"{"erased":true}"#;

/// Which rows of a table are one customer's (`$1` is the customer id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    /// The table is about no one customer (policies, staff, provider events).
    NoCustomer,
    /// Rows matching the condition are the customer's; erasure rewrites their classified
    /// columns in place (money records stay).
    Redact(&'static str),
    /// Rows matching the condition are the customer's credentials: erasure deletes them;
    /// export leaves them out (they are secrets, not data about the person).
    Delete(&'static str),
}

#[derive(Debug)]
pub struct Table {
    pub name: &'static str,
    /// The columns that identify a row (for rewriting JSON row by row).
    pub key: &'static [&'static str],
    pub rows: Rows,
    /// Every TEXT column with its class (BIGINT columns hold no text).
    pub columns: &'static [(&'static str, Class)],
}

const CASES_OF: &str = "case_id IN (SELECT id FROM cases WHERE customer_id = $1)";

use Class::*;

/// A ticket of the customer's (the mail tables name tickets).
const TICKETS_OF: &str = "ticket_id IN (SELECT id FROM tickets WHERE customer_id = $1)";

/// The schema, table by table. In order: erasure rewrites the tables one after another,
/// so a table found through the customer's email comes before `customers`, whose email
/// it replaces.
pub const TABLES: &[Table] = &[
    Table {
        // Reports of periodic jobs: counts and ids — except reconciliation's drift,
        // which names a customer and quotes their email (ours and the provider's). A
        // report naming the customer is replaced whole; the next run writes a new one.
        name: "job_runs",
        key: &["name"],
        rows: Rows::Redact(
            "last_report IS NOT NULL AND (last_report LIKE '%' || $1 || '%'
               OR last_report LIKE '%' || (SELECT email FROM customers WHERE id = $1) || '%')",
        ),
        columns: &[("name", Keep), ("last_report", Payload)],
    },
    // What we know of an address (a bounce, the last reply to an unknown sender), keyed
    // by the address itself.
    Table {
        name: "mail_addresses",
        key: &["address"],
        rows: Rows::Redact("address IN (SELECT LOWER(email) FROM customers WHERE id = $1)"),
        columns: &[("address", Email), ("undeliverable_reason", Text)],
    },
    Table {
        name: "customers",
        key: &["id"],
        rows: Rows::Redact("id = $1"),
        columns: &[
            ("id", Keep),
            ("name", Name),
            ("email", Email),
            ("region", Keep),
            ("provider_customer_id", Keep),
        ],
    },
    Table {
        name: "orders",
        key: &["id"],
        rows: Rows::Redact("customer_id = $1"),
        columns: &[
            ("id", Keep),
            ("customer_id", Keep),
            ("product", Keep),
            ("currency", Keep),
        ],
    },
    Table {
        name: "tickets",
        key: &["id"],
        rows: Rows::Redact("customer_id = $1"),
        columns: &[
            ("id", Keep),
            ("customer_id", Keep),
            ("order_id", Keep),
            ("language", Keep),
        ],
    },
    Table {
        name: "messages",
        key: &["ticket_id", "seq"],
        rows: Rows::Redact("ticket_id IN (SELECT id FROM tickets WHERE customer_id = $1)"),
        columns: &[
            ("ticket_id", Keep),
            ("author", Keep),
            ("body", Text),
            ("staff_id", Keep),
            // `web` or `email`, and a mail's quoted thread and signature.
            ("channel", Keep),
            ("quoted", Text),
        ],
    },
    // A model's translation of a customer's message for staff: their words.
    Table {
        name: "message_translations",
        key: &["ticket_id", "seq", "language"],
        rows: Rows::Redact(TICKETS_OF),
        columns: &[
            ("ticket_id", Keep),
            ("language", Keep),
            ("text", Text),
            ("model", Keep),
        ],
    },
    Table {
        name: "csat_answers",
        key: &["ticket_id"],
        rows: Rows::Redact("ticket_id IN (SELECT id FROM tickets WHERE customer_id = $1)"),
        columns: &[
            ("ticket_id", Keep),
            ("case_id", Keep),
            ("comment", Text),
            ("resolved_by", Keep),
            ("reason_code", Keep),
        ],
    },
    // The mails we send. A customer's own (the address on record, the text of
    // their ticket) and staff's about their cases, which may quote them.
    Table {
        name: "mail_outbox",
        key: &["id"],
        rows: Rows::Redact(
            "customer_id = $1 OR ticket_id IN (SELECT id FROM tickets WHERE customer_id = $1)",
        ),
        columns: &[
            ("id", Keep),
            ("kind", Keep),
            ("recipient_kind", Keep),
            ("customer_id", Keep),
            ("staff_id", Keep),
            ("address", Email),
            ("ticket_id", Keep),
            ("case_id", Keep),
            ("language", Keep),
            ("body", Text),
            // The customer's mail this one answers.
            ("in_reply_to", MessageId),
            ("status", Keep),
            ("last_error", Text),
            ("recipient", Email),
            ("raw", Text),
            ("lease_owner", Keep),
        ],
    },
    // The mails we took in, raw.
    Table {
        name: "mail_inbound",
        key: &["id"],
        rows: Rows::Redact(
            "customer_id = $1 OR ticket_id IN (SELECT id FROM tickets WHERE customer_id = $1)",
        ),
        columns: &[
            ("id", Keep),
            ("message_key", MessageId),
            ("sender", Email),
            ("source", Keep),
            ("status", Keep),
            ("outcome", Keep),
            ("reason", Text),
            ("ticket_id", Keep),
            ("customer_id", Keep),
            ("raw", Text),
            ("confirm_link_hash", Keep),
            ("imap_uid", Keep),
        ],
    },
    // A mail's attachments (base64 text): their names and contents.
    Table {
        name: "mail_attachments",
        key: &["id"],
        rows: Rows::Redact(TICKETS_OF),
        columns: &[
            ("id", Keep),
            ("ticket_id", Keep),
            ("filename", Text),
            ("content_type", Keep),
            ("content", Text),
        ],
    },
    Table {
        name: "cases",
        key: &["id"],
        rows: Rows::Redact("customer_id = $1"),
        columns: &[
            ("id", Keep),
            ("ticket_id", Keep),
            ("customer_id", Keep),
            ("status", Keep),
            ("run_id", Keep),
            ("proposal", Summary),
            // Facts name the customer by id and region only (policy_engine::CustomerFacts).
            ("facts", Keep),
            ("decision", Keep),
            ("evidence_hash", Keep),
            ("fingerprint", Keep),
            ("required_role", Keep),
            ("reason_code", Keep),
            ("currency", Keep),
            ("void_reason", Text),
            ("lease_owner", Keep),
            ("policy_index", Keep),
            ("assignee_id", Keep),
            ("close_reason", Text),
            ("joined_into", Keep),
        ],
    },
    Table {
        name: "runs",
        key: &["id"],
        rows: Rows::Redact(CASES_OF),
        columns: &[
            ("id", Keep),
            ("case_id", Keep),
            ("status", Keep),
            ("model", Keep),
            ("prompt_version", Keep),
            ("lease_owner", Keep),
            ("tool_schema_version", Keep),
            ("parent_run_id", Keep),
            ("child_name", Keep),
        ],
    },
    Table {
        name: "run_events",
        key: &["run_id", "seq"],
        rows: Rows::Redact(
            "run_id IN (SELECT r.id FROM runs r JOIN cases c ON c.id = r.case_id WHERE c.customer_id = $1)",
        ),
        columns: &[
            ("run_id", Keep),
            ("kind", Keep),
            ("call_id", Keep),
            ("payload", Payload),
        ],
    },
    Table {
        name: "approvals",
        key: &["id"],
        rows: Rows::Redact(CASES_OF),
        columns: &[
            ("id", Keep),
            ("case_id", Keep),
            ("fingerprint", Keep),
            ("staff_id", Keep),
            ("verdict", Keep),
            ("note", Text),
            ("status", Keep),
        ],
    },
    Table {
        // Money records: kept whole (docs/spec/data.md), found through the case.
        name: "refund_intents",
        key: &["id"],
        rows: Rows::Redact(CASES_OF),
        columns: &[
            ("id", Keep),
            ("case_id", Keep),
            ("approval_id", Keep),
            ("charge_id", Keep),
            ("kind", Keep),
            ("currency", Keep),
            ("idempotency_key", Keep),
            ("status", Keep),
            ("provider_refund_id", Keep),
            ("last_error", Keep),
        ],
    },
    Table {
        name: "case_presence",
        key: &["case_id", "staff_id"],
        rows: Rows::NoCustomer,
        columns: &[("case_id", Keep), ("staff_id", Keep), ("activity", Keep)],
    },
    Table {
        name: "audit_log",
        key: &["id"],
        rows: Rows::Redact(
            "(subject = $1 OR subject IN (SELECT id FROM cases WHERE customer_id = $1)
              OR subject IN (SELECT id FROM tickets WHERE customer_id = $1))",
        ),
        columns: &[
            ("id", Keep),
            ("actor", Keep),
            ("action", Keep),
            ("subject", Keep),
            ("detail", Text),
        ],
    },
    Table {
        // Staff sign-in attempts (customers sign in by link, never by email).
        name: "login_failures",
        key: &["id"],
        rows: Rows::NoCustomer,
        columns: &[("id", Keep), ("email", Staff), ("client", Keep)],
    },
    Table {
        name: "webhook_events",
        key: &["event_id"],
        rows: Rows::NoCustomer,
        columns: &[
            ("event_id", Keep),
            ("event_type", Keep),
            ("refund_id", Keep),
            ("intent_id", Keep),
            ("outcome", Keep),
        ],
    },
    Table {
        name: "shadow_pairs",
        key: &["case_id"],
        rows: Rows::Redact(CASES_OF),
        columns: &[
            ("case_id", Keep),
            ("agent_outcome", Keep),
            ("agent_reason", Keep),
            ("agent_refunds", Keep),
            ("agent_decision", Keep),
            ("agent_proposal", Summary),
            ("human_outcome", Keep),
            ("human_reason", Keep),
            ("human_refunds", Keep),
            ("decided_by", Keep),
        ],
    },
    // Quality review (`qa`): each decision's check; codes, staff ids, and in `why` the
    // policy's own words (rule summaries with charge and order ids) — never the
    // customer's or the model's (a rejected evidence reference is only counted).
    Table {
        name: "decision_checks",
        key: &["id"],
        rows: Rows::Redact(CASES_OF),
        columns: &[
            ("id", Keep),
            ("case_id", Keep),
            ("actor", Keep),
            ("action", Keep),
            ("outcome", Keep),
            ("reason", Keep),
            ("language", Keep),
            ("policy_outcome", Keep),
            ("why", Keep),
        ],
    },
    Table {
        name: "sign_in_links",
        key: &["token_hash"],
        rows: Rows::Delete("customer_id = $1"),
        columns: &[("token_hash", Keep), ("customer_id", Keep)],
    },
    Table {
        name: "auth_tokens",
        key: &["token_hash"],
        rows: Rows::Delete("subject_kind = 'customer' AND subject_id = $1"),
        columns: &[
            ("token_hash", Keep),
            ("kind", Keep),
            ("subject_kind", Keep),
            ("subject_id", Keep),
            ("csrf_token", Keep),
            ("token_id", Keep),
            ("name", Staff),
        ],
    },
    Table {
        name: "watchdog_flags",
        key: &["run_id", "stalled_since"],
        rows: Rows::Redact(CASES_OF),
        columns: &[
            ("run_id", Keep),
            ("case_id", Keep),
            ("waiting_on", Keep),
            ("summary", Text),
            ("diagnosis", Text),
        ],
    },
    Table {
        name: "case_notes",
        key: &["id"],
        rows: Rows::Redact(CASES_OF),
        columns: &[
            ("id", Keep),
            ("case_id", Keep),
            ("staff_id", Keep),
            ("body", Text),
        ],
    },
    Table {
        name: "rollout_modes",
        key: &["scope"],
        rows: Rows::NoCustomer,
        columns: &[
            ("scope", Keep),
            ("mode", Keep),
            ("updated_by", Keep),
            ("reason", Staff),
        ],
    },
    Table {
        name: "rollout_cases",
        key: &["case_id"],
        rows: Rows::Redact(CASES_OF),
        columns: &[
            ("case_id", Keep),
            ("scope", Keep),
            ("mode", Keep),
            ("note", Keep),
            ("region", Keep),
            ("product", Keep),
            ("request", Keep),
        ],
    },
    Table {
        name: "rollout_evaluations",
        key: &["scope", "guard", "period_start"],
        rows: Rows::NoCustomer,
        columns: &[("scope", Keep), ("guard", Keep)],
    },
    Table {
        name: "policy_versions",
        key: &["doc_id", "version"],
        rows: Rows::NoCustomer,
        columns: &[
            ("doc_id", Keep),
            ("file_name", Keep),
            ("markdown", Staff),
            ("rules", Staff),
            ("status", Keep),
            ("published_by", Keep),
            // What-if results carry no names, emails or messages (docs/spec/roles.md).
            ("whatif", Keep),
        ],
    },
    Table {
        name: "policy_drafts",
        key: &["doc_id"],
        rows: Rows::NoCustomer,
        columns: &[
            ("doc_id", Keep),
            ("markdown", Staff),
            ("rules", Staff),
            ("updated_by", Keep),
            ("whatif", Keep),
        ],
    },
    Table {
        name: "policy_draft_authors",
        key: &["doc_id", "staff_id"],
        rows: Rows::NoCustomer,
        columns: &[("doc_id", Keep), ("staff_id", Keep)],
    },
    Table {
        name: "policy_draft_saves",
        key: &["doc_id", "draft_version"],
        rows: Rows::NoCustomer,
        columns: &[("doc_id", Keep), ("staff_id", Keep)],
    },
    Table {
        name: "order_claims",
        key: &["customer_id", "order_id"],
        rows: Rows::Redact("customer_id = $1"),
        columns: &[
            ("customer_id", Keep),
            ("order_id", Keep),
            ("case_id", Keep),
        ],
    },
    Table {
        name: "saved_replies",
        key: &["id"],
        rows: Rows::NoCustomer,
        columns: &[
            ("id", Keep),
            ("name", Staff),
            ("language", Keep),
            ("body", Staff),
            ("created_by", Keep),
        ],
    },
    Table {
        name: "import_customers",
        key: &["import_id", "id"],
        rows: Rows::Redact("id = $1"),
        columns: &[
            ("import_id", Keep),
            ("id", Keep),
            ("name", Name),
            ("email", Email),
            ("email_key", Email),
            ("region", Keep),
            ("provider_customer_id", Keep),
            ("linked_by", Keep),
        ],
    },
    Table {
        name: "import_orders",
        key: &["import_id", "id"],
        rows: Rows::Redact("customer_id = $1"),
        columns: &[
            ("import_id", Keep),
            ("id", Keep),
            ("customer_id", Keep),
            ("product", Keep),
            ("currency", Keep),
        ],
    },
    Table {
        name: "unlinked_charges",
        key: &["charge_id"],
        rows: Rows::Redact("customer_id = $1"),
        columns: &[
            ("charge_id", Keep),
            ("provider_customer_id", Keep),
            ("customer_id", Keep),
            ("currency", Keep),
            ("status", Keep),
            ("named_order", Keep),
        ],
    },
    Table {
        name: "charge_links",
        key: &["charge_id"],
        rows: Rows::NoCustomer,
        columns: &[("charge_id", Keep), ("order_id", Keep), ("linked_by", Keep)],
    },
    Table {
        name: "staff",
        key: &["id"],
        rows: Rows::NoCustomer,
        columns: &[
            ("id", Keep),
            ("email", Staff),
            ("role", Keep),
            ("password_hash", Keep),
            ("oidc_subject", Staff),
            ("external_id", Staff),
            ("display_name", Staff),
        ],
    },
    Table {
        name: "staff_invites",
        key: &["token_hash"],
        rows: Rows::NoCustomer,
        columns: &[
            ("token_hash", Keep),
            ("email", Staff),
            ("role", Keep),
            ("invited_by", Keep),
        ],
    },
    Table {
        name: "scim_groups",
        key: &["id"],
        rows: Rows::NoCustomer,
        columns: &[
            ("id", Keep),
            ("display_name", Staff),
            ("external_id", Staff),
        ],
    },
    Table {
        name: "scim_group_members",
        key: &["group_id", "staff_id"],
        rows: Rows::NoCustomer,
        columns: &[("group_id", Keep), ("staff_id", Keep)],
    },
    Table {
        name: "oidc_logins",
        key: &["state_hash"],
        rows: Rows::NoCustomer,
        columns: &[
            ("state_hash", Keep),
            ("nonce", Keep),
            ("pkce_verifier", Keep),
        ],
    },
    Table {
        // The pseudonym is what the money records are kept under; the id is the shop's.
        name: "erasures",
        key: &["customer_id"],
        rows: Rows::NoCustomer,
        columns: &[
            ("customer_id", Keep),
            ("pseudonym", Keep),
            ("erased_by", Keep),
        ],
    },
    Table {
        name: "restore_checks",
        key: &["intent_id"],
        rows: Rows::NoCustomer,
        columns: &[("intent_id", Keep), ("outcome", Keep)],
    },
    Table {
        // What an adoption after a restore found: counts and ids.
        name: "restores",
        key: &["id"],
        rows: Rows::NoCustomer,
        columns: &[("id", Keep), ("report", Keep)],
    },
    Table {
        name: "erasure_vacuum_due",
        key: &["reason"],
        rows: Rows::NoCustomer,
        columns: &[("reason", Keep)],
    },
];

/// Where customer data lives besides the tables' rows, and what erasure does there
/// (docs/spec/data.md, "Erasure"). The tests search every one of these after erasing.
pub const FILES: &[(&str, &str)] = &[
    (
        "database free space (SQLite)",
        "zeroed as it is freed (secure_delete on every writer); a database older than that is rebuilt once (VACUUM)",
    ),
    (
        "write-ahead log (SQLite -wal)",
        "folded into the database and truncated to nothing after the erasure",
    ),
    (
        "dead row versions (PostgreSQL)",
        "left to VACUUM: docs/guides/customer-data.md says what the operator runs",
    ),
    (
        "policy index (index/)",
        "holds policies only, never a customer's words",
    ),
    (
        "attachments and files",
        "kept in mail_attachments (a table above), never as files",
    ),
    (
        "payments provider (payments/ under the embedded mock)",
        "the provider's own copy; the desk keeps a tombstone under the pseudonym",
    ),
];

/// Tables the schema holds that are not the product's data (sqlx's migration record).
pub const NOT_DATA: &[&str] = &["_sqlx_migrations"];

/// The classification of `table`, if it has one.
pub fn table(name: &str) -> Option<&'static Table> {
    TABLES.iter().find(|t| t.name == name)
}

/// What the live schema holds that [`TABLES`] does not classify, given each table with
/// its TEXT columns: `table` for an unknown table, `table.column` for an unknown column.
pub fn unclassified(schema: &[(String, Vec<String>)]) -> Vec<String> {
    let mut missing = Vec::new();
    for (name, text_columns) in schema {
        if NOT_DATA.contains(&name.as_str()) {
            continue;
        }
        let Some(known) = table(name) else {
            missing.push(name.clone());
            continue;
        };
        for column in text_columns {
            if !known.columns.iter().any(|(c, _)| c == column) {
                missing.push(format!("{name}.{column}"));
            }
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_table_or_text_column_is_reported_as_unclassified() {
        let schema = vec![
            (
                "customers".to_string(),
                vec!["name".to_string(), "nickname".to_string()],
            ),
            ("outbox".to_string(), vec!["body".to_string()]),
            (
                "_sqlx_migrations".to_string(),
                vec!["description".to_string()],
            ),
        ];
        assert_eq!(unclassified(&schema), vec!["customers.nickname", "outbox"]);
    }

    #[test]
    fn every_table_names_each_column_once() {
        for t in TABLES {
            let mut names: Vec<_> = t.columns.iter().map(|(c, _)| *c).collect();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), t.columns.len(), "{} repeats a column", t.name);
            assert_eq!(TABLES.iter().filter(|o| o.name == t.name).count(), 1);
        }
    }
}
