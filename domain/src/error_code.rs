//! Every error code a caller of the API, a page or the MCP tools can meet, in one enum: the
//! machine-readable half of `{"error": {"code", "message"}}` (docs/spec/interfaces.md).
//! The wire carries `as_str()`; code names and matches the variant, so a misspelt code
//! does not compile and the list below is the whole vocabulary.
//!
//! SCIM's own `scimType` values (RFC 7644) are the SCIM surface's, not codes of ours.

macro_rules! error_codes {
    ($($variant:ident => $text:literal,)*) => {
        /// An error code; `as_str` is its wire form.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ErrorCode {
            $($variant,)*
        }

        impl ErrorCode {
            /// Every code, in the order above.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)*];

            /// The code as the wire carries it (`snake_case`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $text,)*
                }
            }
        }
    };
}

error_codes! {
    // The kind of failure itself, when nothing more precise is said.
    Unauthorized => "unauthorized",
    Forbidden => "forbidden",
    NotFound => "not_found",
    PayloadTooLarge => "payload_too_large",
    RateLimited => "rate_limited",
    ProviderError => "provider_error",
    DatabaseUnavailable => "database_unavailable",
    Internal => "internal",
    // Bad input (400) and conflicts (409), by what went wrong.
    AlreadyClosed => "already_closed",
    AlreadyDecided => "already_decided",
    AlreadyPublished => "already_published",
    AlreadyRated => "already_rated",
    AlreadyStaff => "already_staff",
    AssigneeCannotWorkCases => "assignee_cannot_work_cases",
    CaseChanged => "case_changed",
    CaseInProgress => "case_in_progress",
    ChargeAlreadyLinked => "charge_already_linked",
    ChargeOwnerMismatch => "charge_owner_mismatch",
    ConfirmMismatch => "confirm_mismatch",
    ConfirmationRequired => "confirmation_required",
    CustomerConflict => "customer_conflict",
    DraftChanged => "draft_changed",
    DraftNotSaved => "draft_not_saved",
    DuplicateMail => "duplicate_mail",
    EffectiveDateInPast => "effective_date_in_past",
    EmptyMessage => "empty_message",
    IdMismatch => "id_mismatch",
    InvalidAmount => "invalid_amount",
    InvalidBody => "invalid_body",
    InvalidCursor => "invalid_cursor",
    InvalidDate => "invalid_date",
    InvalidDays => "invalid_days",
    InvalidDecision => "invalid_decision",
    InvalidDraft => "invalid_draft",
    InvalidEmail => "invalid_email",
    InvalidEvent => "invalid_event",
    InvalidExpiry => "invalid_expiry",
    InvalidFilter => "invalid_filter",
    InvalidHistory => "invalid_history",
    InvalidJson => "invalid_json",
    InvalidRating => "invalid_rating",
    InvalidLanguage => "invalid_language",
    InvalidLimit => "invalid_limit",
    InvalidMode => "invalid_mode",
    InvalidName => "invalid_name",
    InvalidNote => "invalid_note",
    InvalidOrderId => "invalid_order_id",
    InvalidOutcome => "invalid_outcome",
    InvalidPercent => "invalid_percent",
    InvalidQuery => "invalid_query",
    InvalidReason => "invalid_reason",
    InvalidRecord => "invalid_record",
    InvalidRole => "invalid_role",
    InvalidScope => "invalid_scope",
    InvalidSignature => "invalid_signature",
    InvalidSort => "invalid_sort",
    InvalidState => "invalid_state",
    InvalidStatus => "invalid_status",
    InvalidTokenKind => "invalid_token_kind",
    InvalidTemplate => "invalid_template",
    InvalidTokenName => "invalid_token_name",
    InvalidValue => "invalid_value",
    InvalidWhatif => "invalid_whatif",
    MailChanged => "mail_changed",
    MissingReason => "missing_reason",
    NotAMail => "not_a_mail",
    NotOffered => "not_offered",
    NotResolved => "not_resolved",
    NothingToWithdraw => "nothing_to_withdraw",
    NotWithTheAgent => "not_with_the_agent",
    NoteTooLong => "note_too_long",
    OrderOwnerChanged => "order_owner_changed",
    OwnAccount => "own_account",
    PersonRequested => "person_requested",
    PolicyAllowsNoRefund => "policy_allows_no_refund",
    PolicyTextDisagrees => "policy_text_disagrees",
    ReasonTooLong => "reason_too_long",
    RefundAlreadySubmitted => "refund_already_submitted",
    RefundInFlight => "refund_in_flight",
    RunChanged => "run_changed",
    SavedReplyExists => "saved_reply_exists",
    ShadowDecisionPending => "shadow_decision_pending",
    StaleFingerprint => "stale_fingerprint",
    Uniqueness => "uniqueness",
    UnfilledVariable => "unfilled_variable",
    UnknownCurrency => "unknown_currency",
    UnknownCustomer => "unknown_customer",
    UnknownHistory => "unknown_history",
    UnknownStaff => "unknown_staff",
    UnsupportedMediaType => "unsupported_media_type",
    WeakPassword => "weak_password",
    WhatifFailed => "whatif_failed",
    WhatifRequired => "whatif_required",
    WithinYourAuthority => "within_your_authority",
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A code equals its wire form: tests and clients compare with the text they receive.
impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl serde::Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn every_code_is_snake_case_and_said_once() {
        let mut seen = std::collections::BTreeSet::new();
        for code in ErrorCode::ALL {
            let text = code.as_str();
            assert!(
                text.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{text}"
            );
            assert!(seen.insert(text), "{text} is said twice");
        }
    }
}
