//! Which of a fixed list of phrases occur in a text, found in one pass over it
//! (the matchers of `structure` and the investigator's classifier asked `str::contains`
//! once per phrase, hundreds of times per sentence). A prefilter only: a phrase absent
//! here is absent from the text; one present still goes through its own matcher (word
//! edges, stems, `…`-ordered parts), so every answer is the one the matcher alone gives.

use aho_corasick::AhoCorasick;

/// A compiled list of phrases (their literal parts; an empty one is always "present").
pub struct PhraseSet {
    automaton: Option<AhoCorasick>,
    /// For each phrase, its pattern number in the automaton (`None`: empty, always kept).
    patterns: Vec<Option<usize>>,
    count: usize,
}

impl PhraseSet {
    /// The set of `phrases`, in their order.
    pub fn new<'a>(phrases: impl IntoIterator<Item = &'a str>) -> PhraseSet {
        let mut literals: Vec<&str> = Vec::new();
        let mut patterns = Vec::new();
        for phrase in phrases {
            match phrase.is_empty() {
                true => patterns.push(None),
                false => {
                    patterns.push(Some(literals.len()));
                    literals.push(phrase);
                }
            }
        }
        let count = literals.len();
        PhraseSet {
            // A build fails only past the automaton's size limits, far beyond a
            // keyword list; then every phrase counts as present (the matchers decide).
            automaton: AhoCorasick::new(&literals).ok(),
            patterns,
            count,
        }
    }

    /// For each phrase, in order, whether it occurs in `text` as a substring.
    pub fn present(&self, text: &str) -> Vec<bool> {
        let Some(automaton) = &self.automaton else {
            return vec![true; self.patterns.len()];
        };
        let mut found = vec![false; self.count];
        for hit in automaton.find_overlapping_iter(text) {
            found[hit.pattern().as_usize()] = true;
        }
        self.patterns
            .iter()
            .map(|p| p.is_none_or(|n| found[n]))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_phrase_found_as_a_substring_and_only_those() {
        let set = PhraseSet::new(["charged twice", "twice", "", "refund", "und"]);
        assert_eq!(
            set.present("i was charged twice, no refund yet"),
            vec![true, true, true, true, true]
        );
        assert_eq!(
            set.present("charged once"),
            vec![false, false, true, false, false]
        );
        // Overlapping phrases are each found ("und" inside "refund").
        assert_eq!(set.present("refund"), vec![false, false, true, true, true]);
    }
}
