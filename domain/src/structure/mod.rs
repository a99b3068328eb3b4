//! What a customer's text is made of, read the way a careful person reads a mail
//!: the new words they write now, the earlier thread they quote, a message
//! they forward (often our own receipt), a bank statement or SMS they paste, their
//! signature, and sentences that try to instruct the agent instead of describing the
//! problem. Each part has a [`Place`], and the place says how much what it contains
//! weighs as evidence ([`Weight`]): an order number in the new words decides, the same
//! number in a quoted earlier mail is only noted, a phone number in a signature is
//! nothing at all.
//!
//! The public API is small on purpose, so the ticket page, the agent and the mail
//! channel (docs/spec/email.md) read a text the same way:
//!
//! ```
//! use domain::structure::{split, Place};
//!
//! let mail = "Please refund order 65169, it was charged twice.\n\
//!             \n\
//!             Best regards,\nAnna Weber\nTel. +49 30 1234567\n\
//!             \n\
//!             On Mon, 3 Mar 2026 at 10:00, Shop <help@shop.example> wrote:\n\
//!             > Your order 51110 has shipped.";
//! let parts = split(mail);
//! assert!(parts.new_text().contains("65169"));
//! assert!(!parts.new_text().contains("51110"));
//! assert!(parts.text_of(&[Place::Quoted]).contains("51110"));
//! assert!(parts.text_of(&[Place::Signature]).contains("1234567"));
//! ```
//!
//! [`split`] takes a plain-text body (HTML remnants — tags, `&nbsp;`, `<blockquote>` —
//! are cleaned first) and returns [`Parts`]: its blocks in the order they stand. It is
//! linear in the length of the text, never fails and is deterministic.
//!
//! Pure: no I/O, no clock, no allocation beyond the parts. What it deliberately does
//! not do: decide anything. It knows mail layout and a few words per language (the
//! markers of quoted and forwarded mail, sign-offs, instruction phrases); it knows
//! nothing of orders, charges or the policy. Decoding MIME (charsets, quoted-printable,
//! multipart) is the mail channel's job before it calls [`split`].

mod fold;
mod html;
mod instructions;
mod lines;
mod markers;
pub(crate) mod pasted;
mod person;

use serde::{Deserialize, Serialize};

pub use fold::fold_words;
pub use person::asks_for_a_person;

/// Where a block of text stands in the customer's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Place {
    /// What the customer writes now.
    New,
    /// A message they forward: a receipt, an earlier mail of theirs.
    Forwarded,
    /// A bank statement, card SMS or receipt lines pasted into the new words.
    Pasted,
    /// The earlier thread of a reply (`>` lines, "On … wrote:", "-----Original
    /// Message-----", "Von:/Gesendet:", "发件人:", "差出人:" …).
    Quoted,
    /// The signature: name, phone, address, VAT number, "Sent from my phone".
    Signature,
    /// Sentences that try to instruct the agent ("ignore the rules", "the manager
    /// approved", 【システム通知】 …) rather than describe the problem (RP-007).
    Instruction,
}

/// How much what a place holds weighs as evidence of what the customer asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Weight {
    /// Never evidence: signatures, instructions.
    Ignored,
    /// Noted, never deciding: the quoted earlier thread.
    Noted,
    /// Identifies an order when the new words do not (a forwarded receipt, a pasted
    /// statement line), but says nothing of what the customer asks.
    Supports,
    /// The customer's own new words: what they ask and about which order.
    Decides,
}

impl Place {
    pub const ALL: [Place; 6] = [
        Place::New,
        Place::Forwarded,
        Place::Pasted,
        Place::Quoted,
        Place::Signature,
        Place::Instruction,
    ];

    pub fn weight(self) -> Weight {
        match self {
            Place::New => Weight::Decides,
            Place::Forwarded | Place::Pasted => Weight::Supports,
            Place::Quoted => Weight::Noted,
            Place::Signature | Place::Instruction => Weight::Ignored,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Place::New => "new",
            Place::Forwarded => "forwarded",
            Place::Pasted => "pasted",
            Place::Quoted => "quoted",
            Place::Signature => "signature",
            Place::Instruction => "instruction",
        }
    }
}

/// One block of a message: consecutive lines of one place, quote markers removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Block {
    pub place: Place,
    pub text: String,
}

/// A message split by place, its blocks in the order they stand.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Parts {
    blocks: Vec<Block>,
}

impl Parts {
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// The customer's new words, blocks joined by a line break.
    pub fn new_text(&self) -> String {
        self.text_of(&[Place::New])
    }

    /// The text of the blocks in `places`, in the order they stand.
    pub fn text_of(&self, places: &[Place]) -> String {
        self.blocks
            .iter()
            .filter(|b| places.contains(&b.place))
            .map(|b| b.text.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The text of the blocks weighing at least `weight`.
    pub fn text_weighing(&self, weight: Weight) -> String {
        let places: Vec<Place> = Place::ALL
            .into_iter()
            .filter(|p| p.weight() >= weight)
            .collect();
        self.text_of(&places)
    }

    /// Whether any sentence tries to instruct the agent (RP-007).
    pub fn has_instructions(&self) -> bool {
        self.blocks.iter().any(|b| b.place == Place::Instruction)
    }

    fn push(&mut self, place: Place, line: &str) {
        match self.blocks.last_mut() {
            Some(last) if last.place == place => {
                last.text.push('\n');
                last.text.push_str(line);
            }
            _ => self.blocks.push(Block {
                place,
                text: line.to_string(),
            }),
        }
    }

    /// Blank blocks dropped, each block's outer blank lines trimmed.
    fn tidy(mut self) -> Parts {
        for b in &mut self.blocks {
            b.text = b.text.trim_matches(|c| c == '\n' || c == '\r').to_string();
        }
        self.blocks.retain(|b| !b.text.trim().is_empty());
        self
    }
}

/// Splits a customer's text (a ticket message or a plain-text mail body) by place: see
/// the module comment. Deterministic and linear in the text's length.
pub fn split(text: &str) -> Parts {
    let cleaned = html::clean(text);
    let placed = lines::place_lines(&cleaned);
    let mut parts = Parts::default();
    for (place, line) in placed {
        parts.push(place, &line);
    }
    instructions::mark(parts.tidy())
}

/// [`split`] of each message, for a conversation: the parts of every message, in order.
pub fn split_all(messages: &[String]) -> Vec<Parts> {
    messages.iter().map(|m| split(m)).collect()
}

#[cfg(test)]
mod tests;
