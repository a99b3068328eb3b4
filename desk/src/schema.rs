//! Shapes of policy-engine types as the OpenAPI document describes them: the engine
//! knows no utoipa, so the request and response types that carry its values name these
//! in `#[schema(value_type = …)]`. Never constructed.

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
