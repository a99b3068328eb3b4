//! The mail tables (docs/spec/email.md): the outbox every mail we send is
//! written to, the mail we took in, the attachments kept from it, and what we know of an
//! address (undeliverable, already told it is unknown). The one module that writes them.
//!
//! It sits on the ground floors, beside `tickets`, so that every transaction that makes a
//! customer-facing change — in `customer`, `conversation`, `approvals`, `refunds`,
//! `workflow`, `cases` — tells the customer through `channels`, whose mail channel writes
//! the row here ([`outbox::to_customer`]), so the mail commits or rolls back with the change. What it deliberately does not do: render,
//! send or parse mail (that is `mail`, floors above), or decide who wrote a mail.

pub mod addresses;
pub mod attachments;
pub mod inbound;
pub mod outbox;

pub use outbox::MailKind;

/// An address as we compare and store it: trimmed and lower-cased (docs/spec/email.md:
/// the sender is matched to the address on record case-insensitively). The local part is
/// compared case-insensitively too: every mail system a shop's customers use treats it so.
pub fn normalise_address(address: &str) -> String {
    address
        .trim()
        .trim_start_matches('<')
        .trim_end_matches('>')
        .to_lowercase()
}

/// The Message-ID of an outbox row: its id at the support address's domain, so the same
/// row always makes the same mail (docs/spec/email.md: a resend is recognisably the same).
pub fn message_id(outbox_id: &str, from_domain: &str) -> String {
    format!("{outbox_id}@{from_domain}")
}

/// The outbox row a Message-ID of ours names (`out_…@domain`), if it is one of ours.
pub fn outbox_id_of(message_id: &str) -> Option<&str> {
    let id = message_id
        .trim()
        .trim_start_matches('<')
        .trim_end_matches('>');
    let (local, _) = id.split_once('@')?;
    local.starts_with("out_").then_some(local)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_message_ids_name_their_outbox_row_and_others_name_none() {
        let id = message_id("out_1f2e", "shop.test");
        assert_eq!(id, "out_1f2e@shop.test");
        assert_eq!(outbox_id_of(&format!("<{id}>")), Some("out_1f2e"));
        assert_eq!(outbox_id_of("CAF=abc@mail.gmail.com"), None);
        assert_eq!(outbox_id_of("no-at-sign"), None);
        assert_eq!(
            normalise_address(" <Li.Wei@Example.CN> "),
            "li.wei@example.cn"
        );
    }
}
