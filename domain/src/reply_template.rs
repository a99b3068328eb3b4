//! A saved reply's variables: `{first_name}`, `{order_id}`, `{refund_amount}`
//! and `{ticket_link}` in its text, filled for one case before staff edit and send it.
//! `{{` and `}}` write a brace itself.
//!
//! `check` is what saving a saved reply runs: an unknown variable or a brace that opens
//! or closes nothing is refused, with where it is. `fill` puts a case's values in and
//! leaves a variable without a value as it was written, so the sender sees it, and
//! `placeholders` finds what is left: a customer never receives a literal `{name}`.
//!
//! Pure: the values come from the caller; nothing here reads a record or knows a case.

/// One variable a saved reply may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variable {
    /// The customer's first name (the first word of their name).
    FirstName,
    /// The order the ticket is about.
    OrderId,
    /// The refund the case decided, as the customer's language writes money.
    RefundAmount,
    /// The customer's ticket page, on the desk's public address.
    TicketLink,
}

impl Variable {
    pub const ALL: [Variable; 4] = [
        Variable::FirstName,
        Variable::OrderId,
        Variable::RefundAmount,
        Variable::TicketLink,
    ];

    /// The name written between braces.
    pub fn name(self) -> &'static str {
        match self {
            Variable::FirstName => "first_name",
            Variable::OrderId => "order_id",
            Variable::RefundAmount => "refund_amount",
            Variable::TicketLink => "ticket_link",
        }
    }

    fn named(name: &str) -> Option<Variable> {
        Variable::ALL.into_iter().find(|v| v.name() == name)
    }
}

/// Why a saved reply's text is refused. Positions are in characters, from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("unknown variable {{{name}}} at character {at}; the variables are {{first_name}}, {{order_id}}, {{refund_amount}} and {{ticket_link}} (write {{{{ for a brace)")]
    UnknownVariable { name: String, at: usize },
    #[error("the brace at character {at} is never closed (write {{{{ for a brace)")]
    Unclosed { at: usize },
    #[error("the '}}' at character {at} closes nothing (write }}}} for a brace)")]
    StrayClose { at: usize },
}

/// A piece of a template: words as they are, or a variable.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Var(Variable),
}

fn parse(text: &str) -> Result<Vec<Piece>, TemplateError> {
    let chars: Vec<char> = text.chars().collect();
    let mut pieces = Vec::new();
    let mut words = String::new();
    let mut i = 0;
    while i < chars.len() {
        match (chars[i], chars.get(i + 1)) {
            ('{', Some('{')) | ('}', Some('}')) => {
                words.push(chars[i]);
                i += 2;
            }
            ('}', _) => return Err(TemplateError::StrayClose { at: i + 1 }),
            ('{', _) => {
                let close = chars[i + 1..]
                    .iter()
                    .position(|c| *c == '}' || *c == '{')
                    .map(|p| p + i + 1)
                    .filter(|p| chars[*p] == '}')
                    .ok_or(TemplateError::Unclosed { at: i + 1 })?;
                let name: String = chars[i + 1..close].iter().collect();
                let var = Variable::named(name.trim()).ok_or(TemplateError::UnknownVariable {
                    name: name.clone(),
                    at: i + 1,
                })?;
                pieces.push(Piece::Text(std::mem::take(&mut words)));
                pieces.push(Piece::Var(var));
                i = close + 1;
            }
            (c, _) => {
                words.push(c);
                i += 1;
            }
        }
    }
    pieces.push(Piece::Text(words));
    Ok(pieces)
}

/// Refuses a text with an unknown variable or a brace that opens or closes nothing.
pub fn check(text: &str) -> Result<(), TemplateError> {
    parse(text).map(|_| ())
}

/// A template filled for one case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filled {
    pub text: String,
    /// The variables the case had no value for, left written as `{name}` in `text`.
    pub missing: Vec<Variable>,
}

/// `text` with each variable replaced by `value(variable)`; one without a value stays
/// `{name}` and is listed in `missing`. A text that does not `check` is returned as
/// written (it was never saved so; nothing is dropped).
pub fn fill(text: &str, value: impl Fn(Variable) -> Option<String>) -> Filled {
    let Ok(pieces) = parse(text) else {
        return Filled {
            text: text.to_string(),
            missing: Vec::new(),
        };
    };
    let mut filled = Filled {
        text: String::new(),
        missing: Vec::new(),
    };
    for piece in pieces {
        match piece {
            Piece::Text(words) => filled.text.push_str(&words),
            Piece::Var(var) => match value(var) {
                Some(v) => filled.text.push_str(&v),
                None => {
                    filled.text.push_str(&format!("{{{}}}", var.name()));
                    if !filled.missing.contains(&var) {
                        filled.missing.push(var);
                    }
                }
            },
        }
    }
    filled
}

/// Every `{word}` left in a message about to reach a customer (a variable never filled,
/// or one typed by hand such as `{name}`): letters, digits and `_`, 1 to 40 of them.
pub fn placeholders(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let word_end = after
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let word = &after[..word_end];
        if after[word_end..].starts_with('}') && (1..=40).contains(&word.chars().count()) {
            found.push(format!("{{{word}}}"));
        }
        rest = after;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(var: Variable) -> Option<String> {
        match var {
            Variable::FirstName => Some("Mia".into()),
            Variable::OrderId => Some("O-1001".into()),
            Variable::RefundAmount => Some("¥19,800".into()),
            Variable::TicketLink => None,
        }
    }

    #[test]
    fn known_variables_are_filled_and_braces_can_be_written() {
        let filled = fill(
            "Hi {first_name}, {refund_amount} for {order_id} {{ok}}",
            values,
        );
        assert_eq!(filled.text, "Hi Mia, ¥19,800 for O-1001 {ok}");
        assert!(filled.missing.is_empty());
    }

    #[test]
    fn a_variable_without_a_value_stays_visible_and_is_named() {
        let filled = fill("See {ticket_link} and {ticket_link}", values);
        assert_eq!(filled.text, "See {ticket_link} and {ticket_link}");
        assert_eq!(filled.missing, [Variable::TicketLink]);
        assert_eq!(
            placeholders(&filled.text),
            ["{ticket_link}", "{ticket_link}"]
        );
    }

    #[test]
    fn unknown_variables_and_lone_braces_are_refused_with_their_place() {
        let table = [
            (
                "Hi {name},",
                TemplateError::UnknownVariable {
                    name: "name".into(),
                    at: 4,
                },
            ),
            ("Hi {first_name", TemplateError::Unclosed { at: 4 }),
            ("Hi {first_{name}", TemplateError::Unclosed { at: 4 }),
            ("Hi first_name}", TemplateError::StrayClose { at: 14 }),
        ];
        for (text, error) in table {
            assert_eq!(check(text), Err(error), "{text}");
        }
        assert_eq!(check("Hi {first_name}, {{ }} é {order_id}"), Ok(()));
    }

    #[test]
    fn placeholders_finds_typed_words_in_braces_but_not_other_braces() {
        assert_eq!(
            placeholders("Hi {name}, {} { x } {名前}"),
            ["{name}", "{名前}"]
        );
        assert!(placeholders("a {b c} d").is_empty());
    }
}
