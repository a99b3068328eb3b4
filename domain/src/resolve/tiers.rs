//! The customer's messages split by weight (`structure`): the new words, instructions,
//! what was forwarded or pasted — remembered per thread, since every turn of a run reads
//! the same conversation again.

use crate::structure::{self, Place};

/// What the customer's messages say, by weight: the new words, then what they forwarded
/// or pasted.
#[derive(Clone)]
pub struct Tiers {
    pub decisive: Vec<String>,
    /// Sentences that try to instruct the agent: never evidence of what is asked, but
    /// an order of someone else's they name is still looked up (RP-007: security).
    pub instructions: Vec<String>,
    pub forwarded: Vec<String>,
    pub pasted: Vec<String>,
    pub supporting: Vec<String>,
    /// A message holds a sentence that tries to instruct the agent
    /// (`structure::Parts::has_instructions`).
    pub instructed: bool,
}

/// How many conversations' tiers each thread remembers ([`Tiers::of`]).
pub(super) const TIERS_REMEMBERED: usize = 4;

thread_local! {
    /// The last conversations split on this thread, with their tiers: the investigator
    /// reads the same messages at every turn of a run (and `resolve` again within the
    /// turn), and splitting them was most of a replayed ticket's time.
    static TIERS_SEEN: std::cell::RefCell<Vec<(Vec<String>, Tiers)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

impl Tiers {
    /// The tiers of `messages`; a pure function of them, remembered for the last
    /// [`TIERS_REMEMBERED`] conversations split on this thread.
    pub fn of(messages: &[String]) -> Tiers {
        TIERS_SEEN.with(|seen| {
            let mut seen = seen.borrow_mut();
            if let Some((_, tiers)) = seen.iter().find(|(m, _)| m.as_slice() == messages) {
                return tiers.clone();
            }
            let tiers = Tiers::split(messages);
            if seen.len() >= TIERS_REMEMBERED {
                seen.remove(0);
            }
            seen.push((messages.to_vec(), tiers.clone()));
            tiers
        })
    }

    fn split(messages: &[String]) -> Tiers {
        let parts = structure::split_all(messages);
        Tiers {
            decisive: parts.iter().map(structure::Parts::new_text).collect(),
            instructions: parts
                .iter()
                .map(|p| p.text_of(&[Place::Instruction]))
                .collect(),
            forwarded: parts
                .iter()
                .map(|p| p.text_of(&[Place::Forwarded]))
                .collect(),
            pasted: parts.iter().map(|p| p.text_of(&[Place::Pasted])).collect(),
            supporting: parts
                .iter()
                .map(|p| p.text_of(&[Place::Forwarded, Place::Pasted]))
                .collect(),
            instructed: parts.iter().any(structure::Parts::has_instructions),
        }
    }
}
