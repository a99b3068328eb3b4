//! Shapes of policy-engine types as the OpenAPI document describes them: the engine
//! knows no utoipa, so the request and response types that carry its values name these
//! in `#[schema(value_type = …)]`. Never constructed.
//!
//! Each enum here repeats the engine's variants (a pair the `duplicates` count shows, on
//! purpose: the engine and `domain` stay free of
//! utoipa); the tests below fail the day they differ.

use utoipa::ToSchema;

/// docs/spec/interfaces.md case outcomes, as a reviewer decides them by hand.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum Outcome {
    Refund,
    NoRefund,
    RequestInfo,
    Escalate,
}

/// docs/spec/domain.md reason codes.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum ReasonCode {
    DuplicateCharge,
    Overcharge,
    RepeatPurchase,
    CoolingOff,
    AuthorizationHold,
    AlreadyRefunded,
    NotDuplicate,
    OutsideWindow,
    OwnershipMismatch,
    DisputeOpen,
    InsufficientInfo,
    NotEligible,
    Other,
}

/// ISO 4217 currencies the product supports.
#[derive(ToSchema)]
#[allow(dead_code, clippy::upper_case_acronyms)]
pub enum Currency {
    CNY,
    USD,
    EUR,
    JPY,
}

/// One refund a reviewer decides: the charge, a decimal amount in the currency's scale.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct RefundLine {
    pub charge_id: String,
    /// `"198.00"`, `"1980"` for JPY.
    pub amount: String,
    pub currency: Currency,
}

/// The languages of tickets and replies (`domain::replies::Language`), as ISO 639-1 codes.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum Language {
    En,
    Zh,
    Ja,
    De,
    Fr,
    Es,
    It,
    Nl,
    Pt,
    Ko,
}

/// A refund as the customer may see it, in RP-005's words
/// (`domain::replies::CustomerRefundView`).
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct CustomerRefundView {
    pub amount: String,
    pub currency: String,
    /// `in_review`, `submitted`, `completed`, `being_verified`, `not_completed`.
    pub status: String,
}

#[cfg(test)]
mod tests {
    use utoipa::PartialSchema;

    /// The values the OpenAPI document lists for a mirrored enum.
    fn documented<T: PartialSchema>() -> Vec<String> {
        let schema = serde_json::to_value(T::schema()).unwrap();
        let values = schema["enum"].as_array().cloned().unwrap_or_default();
        values
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    }

    /// What the engine writes on the wire for each value.
    fn wire<T: serde::Serialize>(values: &[T]) -> Vec<String> {
        let text = |v| {
            serde_json::to_value(v)
                .unwrap()
                .as_str()
                .unwrap()
                .to_string()
        };
        values.iter().map(text).collect()
    }

    #[test]
    fn the_documented_reason_codes_outcomes_and_currencies_are_the_engines() {
        use policy_engine::{Currency, ReasonCode};
        assert_eq!(documented::<super::ReasonCode>(), wire(&ReasonCode::ALL));
        let outcomes = domain::verdict::CaseOutcome::ALL;
        assert_eq!(documented::<super::Outcome>(), wire(&outcomes));
        let currencies = [Currency::CNY, Currency::USD, Currency::EUR, Currency::JPY];
        assert_eq!(documented::<super::Currency>(), wire(&currencies));
        let languages = domain::replies::Language::ALL;
        assert_eq!(documented::<super::Language>(), wire(&languages));
    }

    #[test]
    fn the_documented_customer_refund_view_has_the_domains_fields() {
        let schema =
            serde_json::to_value(<super::CustomerRefundView as utoipa::PartialSchema>::schema())
                .unwrap();
        let mut documented: Vec<&String> =
            schema["properties"].as_object().unwrap().keys().collect();
        documented.sort();
        let view = domain::replies::CustomerRefundView {
            amount: "1.00".into(),
            currency: "USD".into(),
            status: "completed".into(),
        };
        let wire = serde_json::to_value(view).unwrap();
        let mut fields: Vec<&String> = wire.as_object().unwrap().keys().collect();
        fields.sort();
        assert_eq!(documented, fields);
    }
}
