//! What a person is told about a change (docs/spec/email.md, "What is sent"): the
//! customer-facing changes, and staff's two. Channel-free: the customer's page shows the
//! same change as its status and thread, mail as a message of this kind; a channel added
//! later reads the same value.

/// One thing to tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Notice {
    /// A ticket was opened (page, API or mail).
    Received,
    /// A reply from the agent or a person.
    Reply,
    /// The agent needs something from the customer.
    Question,
    /// A person approved the refund (not yet at the provider: RP-005).
    Approved,
    /// The provider has the refund and it is pending.
    Submitted,
    /// The provider completed the refund.
    Completed,
    /// The outcome is being verified with the provider.
    Verifying,
    /// The provider could not complete the refund.
    Failed,
    /// A person turned the refund down.
    Rejected,
    /// The case was closed.
    Closed,
    /// A new message sent a decided case back to investigation.
    Reopened,
    /// A mail from an address that is no customer's: write from the account's address.
    UnknownSender,
    /// A mail in the customer's name that proved no sender: sign in to confirm it.
    ConfirmSender,
    /// Staff: a case was assigned to you.
    StaffAssigned,
    /// Staff: an escalation waits for a supervisor.
    StaffEscalation,
    /// A person invited to the team: the invitation's link, at their address.
    StaffInvited,
}

macro_rules! notices {
    ($($variant:ident => $name:literal),* $(,)?) => {
        impl Notice {
            pub const ALL: &'static [Notice] = &[$(Notice::$variant),*];

            /// Its stored name.
            pub fn as_str(self) -> &'static str {
                match self { $(Notice::$variant => $name),* }
            }

            /// The notice a stored name is, if any.
            pub fn parse(s: &str) -> Option<Notice> {
                match s {
                    $($name => Some(Notice::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

notices! {
    Received => "received", Reply => "reply", Question => "question", Approved => "approved",
    Submitted => "submitted", Completed => "completed", Verifying => "verifying",
    Failed => "failed", Rejected => "rejected", Closed => "closed", Reopened => "reopened",
    UnknownSender => "unknown_sender", ConfirmSender => "confirm_sender",
    StaffAssigned => "staff_assigned", StaffEscalation => "staff_escalation",
    StaffInvited => "staff_invited",
}

#[cfg(test)]
mod tests {
    use super::Notice;

    #[test]
    fn every_notice_is_parsed_back_from_its_name_and_nothing_else_is() {
        for notice in Notice::ALL {
            assert_eq!(Notice::parse(notice.as_str()), Some(*notice));
        }
        assert_eq!(Notice::parse("Reply"), None);
        assert_eq!(Notice::parse(""), None);
    }
}
