//! The seam between the mail channel and the reading of a mail's structure: which part
//! of a customer's mail is what they wrote now, and which is the quoted earlier thread or
//! their signature. The mail path calls [`split`] and nothing else; the
//! reading itself is the domain's (`domain::structure::split`, the same one the ticket page
//! and the investigator use), so a mail and a page message are read alike.
//!
//! What stays in the new words: the customer's new words, what they paste and forward (a
//! forwarded receipt is their evidence now: `structure` weighs it as supporting) and any
//! instruction-like sentence (so RP-007's check still sees it). What goes apart, for staff
//! to open: the quoted earlier thread and the signature. It decides nothing and drops
//! nothing: the two parts together hold every block of the text.

use domain::structure::{self, Place};

/// A mail's text, split.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Split {
    /// What the customer wrote now: what the investigator reads.
    pub new_words: String,
    /// The quoted thread and the signature: kept for staff, shown collapsed.
    pub quoted: String,
}

/// The places kept apart from the message (noted or ignored as evidence).
const APART: [Place; 2] = [Place::Quoted, Place::Signature];

/// Splits a mail's text into its new words and the rest.
pub fn split(text: &str) -> Split {
    let parts = structure::split(text);
    let kept: Vec<Place> = Place::ALL
        .into_iter()
        .filter(|p| !APART.contains(p))
        .collect();
    let new_words = parts.text_of(&kept).trim().to_string();
    if new_words.is_empty() {
        // Nothing but quote or signature (a reply written inside the quote): the whole
        // text is the message, so nothing the customer sent is hidden.
        return Split {
            new_words: text.trim().to_string(),
            quoted: String::new(),
        };
    }
    Split {
        new_words,
        quoted: parts.text_of(&APART).trim().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_above_a_quoted_thread_keeps_only_the_new_words() {
        let text = "Still not refunded, see order O-1001.\n\nOn Mon, 1 Dec 2026, Support <support@shop.test> wrote:\n> We received your request about O-2002.\n> Ticket tkt_1";
        let split = split(text);
        assert_eq!(split.new_words, "Still not refunded, see order O-1001.");
        assert!(split.quoted.contains("O-2002"), "{split:?}");
    }

    #[test]
    fn the_signature_and_outlook_headers_are_not_new_words() {
        let text = "Please refund the duplicate.\n-- \nLi Wei\n+86 138 0000 0000\n";
        let split = split(text);
        assert_eq!(split.new_words, "Please refund the duplicate.");
        assert!(split.quoted.contains("+86"));
        let outlook = "Any news?\n\n-----Original Message-----\nFrom: support@shop.test\nOld text";
        assert_eq!(super::split(outlook).new_words, "Any news?");
        // Outlook's header block of the mail replied to (a From line and two more).
        let chinese = "还没有退款。\n\n发件人: support@shop.test\n发送时间: 2026年12月1日 10:00\n收件人: li.wei@example.cn\n主题: 重复扣款\n以前的内容";
        let split = super::split(chinese);
        assert_eq!(split.new_words, "还没有退款。");
        assert!(split.quoted.contains("以前的内容"), "{split:?}");
    }

    #[test]
    fn a_mail_that_is_all_quote_or_a_forward_keeps_everything_as_its_words() {
        let only_quote = "> what we said\n> before";
        assert_eq!(split(only_quote).new_words, only_quote);
        let forward = "See the receipt below.\n\n---------- Forwarded message ----------\nFrom: shop@x.test\nTotal 198.00";
        let kept = split(forward);
        assert!(
            kept.new_words.starts_with("See the receipt below."),
            "{kept:?}"
        );
        assert!(kept.new_words.contains("Total 198.00"), "{kept:?}");
        assert_eq!(kept.quoted, "");
        // What is stored is read again the same way: the forward is still a forward to
        // the investigator (supporting evidence), not the customer's new words.
        let again = structure::split(&kept.new_words);
        assert_eq!(again.new_text(), "See the receipt below.");
        assert!(again.text_of(&[Place::Forwarded]).contains("Total 198.00"));
    }

    #[test]
    fn an_order_named_only_in_the_quoted_thread_never_reaches_the_new_words() {
        let text = "I was charged twice for my annual plan.\n\nOn Mon, Shop <shop@x.test> wrote:\n> Thank you for your order O-9999";
        let split = split(text);
        assert_eq!(split.new_words, "I was charged twice for my annual plan.");
        assert!(split.quoted.contains("O-9999"), "{split:?}");
    }
}
