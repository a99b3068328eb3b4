//! An email address as the product compares and stores it, wherever it comes from (a mail's
//! `From`, the customer's record, the outbox).

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_compared_trimmed_unbracketed_and_lower_cased() {
        assert_eq!(
            normalise_address(" <Li.Wei@Example.CN> "),
            "li.wei@example.cn"
        );
    }
}
