//! The ids of the product's records, each its own type: a function that takes a `CaseId`
//! cannot be handed a ticket's id. Ids are opaque text (ours look like `case_…`; a shop's
//! customer and order ids are whatever its export says), so a constructor checks only
//! what every id shares: not empty, at most `MAX_ID_CHARS`, no control character. Text
//! becomes an id at the storage and wire edges; inside, ids are these types.

use std::fmt;

/// The longest id any table stores.
pub const MAX_ID_CHARS: usize = 200;

/// Why a text is not an id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("{0} id is empty")]
    Empty(&'static str),
    #[error("{0} id is longer than {MAX_ID_CHARS} characters")]
    TooLong(&'static str),
    #[error("{0} id holds a control character")]
    Control(&'static str),
}

macro_rules! ids {
    ($($name:ident => $what:literal,)*) => {$(
        #[doc = concat!("The id of a ", $what, ".")]
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// `text` as an id, if it is one.
            pub fn parse(text: impl Into<String>) -> Result<Self, IdError> {
                let text = text.into();
                check($what, &text)?;
                Ok($name(text))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                $name::parse(text).map_err(serde::de::Error::custom)
            }
        }
    )*};
}

ids! {
    CustomerId => "customer",
    OrderId => "order",
    ChargeId => "charge",
    RefundId => "refund",
    TicketId => "ticket",
    CaseId => "case",
    RunId => "run",
}

fn check(what: &'static str, text: &str) -> Result<(), IdError> {
    if text.is_empty() {
        return Err(IdError::Empty(what));
    }
    if text.chars().count() > MAX_ID_CHARS {
        return Err(IdError::TooLong(what));
    }
    if text.chars().any(char::is_control) {
        return Err(IdError::Control(what));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_any_text_but_empty_overlong_or_with_control_characters() {
        assert_eq!(CaseId::parse("case_01").unwrap().as_str(), "case_01");
        assert_eq!(OrderId::parse("#5001 / B").unwrap(), "#5001 / B");
        assert_eq!(CustomerId::parse("顧客-7").unwrap().to_string(), "顧客-7");
        assert_eq!(CaseId::parse(""), Err(IdError::Empty("case")));
        assert_eq!(RunId::parse("r".repeat(201)), Err(IdError::TooLong("run")));
        assert!(RunId::parse("r".repeat(200)).is_ok());
        assert_eq!(TicketId::parse("t\u{0}1"), Err(IdError::Control("ticket")));
    }

    #[test]
    fn ids_cross_json_as_plain_strings_and_refuse_bad_ones() {
        let id: ChargeId = serde_json::from_str("\"ch_1\"").unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"ch_1\"");
        assert!(serde_json::from_str::<RefundId>("\"\"").is_err());
    }
}
