//! Whether an answer the agent is about to send repeats one it already sent on the same
//! ticket (the customer is heard). A customer who gets the same words twice is
//! going round in a circle with the agent; the workflow then hands the case to a person
//! instead of sending them. What it does not do: decide where the case goes, or read
//! anything — it compares texts it is given.

/// A paragraph at least this long that appears again is the same answer, even inside a
/// different greeting: a policy paragraph, not a "thank you".
const SAME_PARAGRAPH_CHARS: usize = 40;

/// The words that count, spacing and case aside.
fn normal(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

fn paragraphs(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split("\n\n")
        .map(normal)
        .filter(|p| p.chars().count() >= SAME_PARAGRAPH_CHARS)
}

/// Whether `next` says what one of `earlier` (the agent's earlier replies on the ticket)
/// already said: the same text, or one of the same long paragraphs (a policy paragraph
/// quoted again).
pub fn repeats_an_earlier_answer(earlier: &[String], next: &str) -> bool {
    let whole = normal(next);
    if whole.is_empty() {
        return false;
    }
    earlier.iter().any(|before| {
        normal(before) == whole || {
            let before: Vec<String> = paragraphs(before).collect();
            paragraphs(next).any(|p| before.contains(&p))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(texts: &[&str]) -> Vec<String> {
        texts.iter().map(|t| t.to_string()).collect()
    }

    #[test]
    fn the_same_words_again_are_a_repeat_whatever_their_spacing_or_case() {
        let earlier = said(&["Which order do you mean?  Please tell us its number."]);
        assert!(repeats_an_earlier_answer(
            &earlier,
            "which order do you mean? Please tell us its number."
        ));
    }

    #[test]
    fn the_same_policy_paragraph_inside_another_greeting_is_a_repeat() {
        let policy =
            "Refunds for a change of mind are possible within 14 days of purchase (policy RP-001).";
        let earlier = said(&[&format!("Hello!\n\n{policy}")]);
        assert!(repeats_an_earlier_answer(
            &earlier,
            &format!("Thanks for writing again.\n\n{policy}")
        ));
    }

    #[test]
    fn a_different_answer_or_a_shared_short_greeting_is_not_a_repeat() {
        let earlier = said(&["Thanks!\n\nYour refund of 198.00 CNY is under review."]);
        assert!(!repeats_an_earlier_answer(
            &earlier,
            "Thanks!\n\nWhich order do you mean?"
        ));
        assert!(!repeats_an_earlier_answer(&[], "Which order do you mean?"));
        assert!(!repeats_an_earlier_answer(&earlier, "   "));
    }
}
