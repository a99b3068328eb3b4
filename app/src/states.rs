//! The lifecycle states of a case (SPEC §5) as a type, on the ground floor: the replies
//! speak of them, `cases` stores them, the workflow moves them.

use serde::{Deserialize, Serialize};

use crate::error::{AppError, AppResult};

macro_rules! statuses {
    ($($variant:ident => $name:literal),* $(,)?) => {
        /// Case lifecycle states, named as in SPEC §5.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum CaseStatus { $($variant),* }

        impl CaseStatus {
            pub fn as_str(self) -> &'static str {
                match self { $(CaseStatus::$variant => $name),* }
            }

            pub fn parse(s: &str) -> AppResult<CaseStatus> {
                match s {
                    $($name => Ok(CaseStatus::$variant),)*
                    _ => Err(AppError::bad_request("invalid_status", format!("unknown case status '{s}'"))),
                }
            }
        }
    };
}

statuses! {
    Open => "open",
    Investigating => "investigating",
    AwaitingCustomer => "awaiting_customer",
    Proposed => "proposed",
    Decided => "decided",
    Denied => "denied",
    Escalated => "escalated",
    AwaitingApproval => "awaiting_approval",
    Approved => "approved",
    Executing => "executing",
    PendingVerification => "pending_verification",
    RefundPending => "refund_pending",
    RefundSucceeded => "refund_succeeded",
    RefundFailed => "refund_failed",
    Replied => "replied",
    Closed => "closed",
    Cancelled => "cancelled",
    Rejected => "rejected",
}
