//! What a reading of a customer's messages found, stated for the person who checks it
//! (docs/spec/domain.md, "Reading a customer's words"): the orders the words name and
//! whose they are, the days, products and amounts they point with, the kinds of request
//! they name and where, words about someone else, sentences aimed at the agent, and where
//! the readings disagree. It decides nothing: the investigator reads, the workflow
//! resolves against the records, the policy engine decides; this is the record of the
//! first step, carried with the proposal so a reviewer sees why the case was read so.
//!
//! Pure data and its plain-English lines; no I/O.

use serde::{Deserialize, Serialize};

use crate::structure::Place;

/// Where a thing was read: the new words, a forwarded message, a pasted statement, a
/// sentence aimed at the agent.
pub type Where = Place;

/// Whose an order the words name is, as far as the customer's own records tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Whose {
    /// One of the customer's own orders.
    Theirs,
    /// None of theirs: another customer's or nobody's, which only the workflow looks up
    /// (and which the customer is never told, RP-007).
    NotTheirs,
}

/// An order the words name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamedOrder {
    /// As the customer wrote it (an own order: its id).
    pub text: String,
    pub whose: Whose,
    #[serde(rename = "where")]
    pub place: Where,
}

/// A kind of request the words name, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindNamed {
    /// `duplicate_charge`, `overcharge`, `cancellation`, `authorization_hold`.
    pub kind: String,
    #[serde(rename = "where")]
    pub place: Where,
}

/// Everything one reading found. Each list is in the order the messages hold it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reading {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub orders: Vec<NamedOrder>,
    /// Kinds of request named, the first of the new words the one read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<KindNamed>,
    /// Days named ("saturday", "3 days ago"), as read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub days: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub products: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub amounts: Vec<String>,
    /// Words that point at one charge among several ("the second charge").
    #[serde(default)]
    pub charge_pointed_at: bool,
    /// Words that say something was bought by mistake.
    #[serde(default)]
    pub by_mistake: bool,
    /// Words about another person's account or order ("my wife's account", "他的账号").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub someone_else: Vec<String>,
    /// How many messages carry sentences aimed at the agent (claimed approvals, hidden
    /// text): read, never obeyed. Counted, not quoted: the proposal is the model's
    /// answer, and an approval claim quoted in it would be refused as the model's own
    /// (the thread shows them to the reviewer).
    #[serde(default)]
    pub instructions: usize,
    /// Where the words read more than one way, said plainly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disagreements: Vec<String>,
}

impl Reading {
    /// The reading in plain sentences, for the case page.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for o in &self.orders {
            let whose = match o.whose {
                Whose::Theirs => "one of the customer's orders",
                Whose::NotTheirs => "none of the customer's orders",
            };
            out.push(format!(
                "Order {} named in {}: {whose}.",
                o.text,
                place(o.place)
            ));
        }
        if !self.kinds.is_empty() {
            let all: Vec<String> = self
                .kinds
                .iter()
                .map(|k| format!("{} ({})", k.kind.replace('_', " "), place(k.place)))
                .collect();
            out.push(format!("Asks about: {}.", all.join(", ")));
        }
        let pointers = [
            ("Days named", &self.days),
            ("Products named", &self.products),
            ("Amounts named", &self.amounts),
        ];
        for (label, list) in pointers {
            if !list.is_empty() {
                out.push(format!("{label}: {}.", list.join(", ")));
            }
        }
        if self.charge_pointed_at {
            out.push("Points at one charge among several (\"the second charge\").".into());
        }
        if self.by_mistake {
            out.push("Says something was bought by mistake.".into());
        }
        if !self.someone_else.is_empty() {
            out.push(format!(
                "Speaks of someone else: {}.",
                self.someone_else.join(", ")
            ));
        }
        if self.instructions > 0 {
            out.push(format!(
                "Sentences aimed at the agent (a claimed approval, hidden text) in {} message(s): \
                 read, not followed.",
                self.instructions
            ));
        }
        out.extend(self.disagreements.iter().cloned());
        out
    }
}

fn place(place: Where) -> &'static str {
    match place {
        Place::New => "the customer's words",
        Place::Forwarded => "a forwarded message",
        Place::Pasted => "a pasted statement",
        Place::Quoted => "the quoted thread",
        Place::Signature => "the signature",
        Place::Instruction => "a sentence aimed at the agent",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_is_said_in_plain_sentences() {
        let reading = Reading {
            orders: vec![
                NamedOrder {
                    text: "O-1001".into(),
                    whose: Whose::Theirs,
                    place: Place::New,
                },
                NamedOrder {
                    text: "88812".into(),
                    whose: Whose::NotTheirs,
                    place: Place::Instruction,
                },
            ],
            kinds: vec![KindNamed {
                kind: "duplicate_charge".into(),
                place: Place::New,
            }],
            days: vec!["saturday".into()],
            instructions: 1,
            disagreements: vec!["Read two ways.".into()],
            ..Reading::default()
        };
        let lines = reading.lines();
        assert_eq!(
            lines[..3],
            [
                "Order O-1001 named in the customer's words: one of the customer's orders.",
                "Order 88812 named in a sentence aimed at the agent: none of the customer's orders.",
                "Asks about: duplicate charge (the customer's words).",
            ]
        );
        assert!(lines.contains(&"Days named: saturday.".to_string()));
        assert!(
            lines.iter().any(|l| l.ends_with("read, not followed.")),
            "{lines:?}"
        );
        assert_eq!(lines.last().unwrap(), "Read two ways.");
        let json = serde_json::to_value(&reading).unwrap();
        assert_eq!(json["orders"][1]["where"], "instruction");
        assert_eq!(serde_json::from_value::<Reading>(json).unwrap(), reading);
    }
}
