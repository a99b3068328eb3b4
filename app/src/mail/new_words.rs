//! The seam between the mail channel and the reading of a mail's structure: which part
//! of a customer's mail is what they wrote now, and which is the quoted earlier thread or
//! their signature (issue 37 §2). The mail path calls [`split`] and nothing else, so the
//! fuller reader being built for issue 34 replaces this one function's body.
//!
//! This is the minimal reading on purpose: the first line that starts a quote (`>`, "On …
//! wrote:", an "Original Message" rule, Outlook's `From:`/`Von:`/`发件人:`/`差出人:` header
//! block) and everything after it is quoted; a signature starts at the `-- ` line. What it
//! does not do: weigh evidence, read pasted statements, or tell a forwarded receipt from a
//! quote (a forwarded message is the customer's evidence now and stays in the new words).

/// A mail's text, split.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Split {
    /// What the customer wrote now: what the investigator reads.
    pub new_words: String,
    /// The quoted thread and the signature: kept for staff, shown collapsed.
    pub quoted: String,
}

/// Splits a mail's text into its new words and the rest.
pub fn split(text: &str) -> Split {
    let lines: Vec<&str> = text.lines().collect();
    // A forwarded message is evidence the customer sends now: no quote is looked for
    // from its marker on.
    let cut = lines
        .iter()
        .take_while(|line| !is_forward_marker(line))
        .position(|line| starts_quote(line))
        .unwrap_or(lines.len());
    let mut new_part: Vec<&str> = lines[..cut].to_vec();
    let mut rest: Vec<&str> = lines[cut..].to_vec();
    // RFC 3676 §4.3: the signature starts at the line "-- ".
    if let Some(sig) = new_part.iter().position(|l| *l == "-- " || *l == "--") {
        let signature = new_part.split_off(sig);
        rest.splice(0..0, signature);
    }
    let new_words = new_part.join("\n").trim().to_string();
    if new_words.is_empty() {
        // Nothing above the quote (a bare forward, or a reply written below the quote):
        // the whole text is the message, so nothing the customer sent is hidden.
        return Split {
            new_words: text.trim().to_string(),
            quoted: String::new(),
        };
    }
    Split {
        new_words,
        quoted: rest.join("\n").trim().to_string(),
    }
}

/// The line a forwarded message starts at (Gmail's and ours).
fn is_forward_marker(line: &str) -> bool {
    let lower = line.trim().to_lowercase();
    lower.starts_with("---------- forwarded message")
        || lower.starts_with("begin forwarded message")
}

/// Whether a line opens the quoted earlier thread.
fn starts_quote(line: &str) -> bool {
    let trimmed = line.trim();
    if trimmed.starts_with('>') {
        return true;
    }
    let lower = trimmed.to_lowercase();
    (lower.starts_with("on ") && lower.ends_with("wrote:"))
        || (lower.starts_with('-') && lower.contains("original message"))
        || (lower.starts_with("from: ") && lower.contains('@'))
        || ["von:", "发件人:", "发件人：", "差出人:", "差出人："]
            .iter()
            .any(|p| lower.starts_with(p))
        || (trimmed.contains("写道") && (trimmed.ends_with('：') || trimmed.ends_with(':')))
        || (trimmed.contains("書きました") && (trimmed.ends_with('：') || trimmed.ends_with(':')))
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
        let chinese = "还没有退款。\n\n发件人: support@shop.test\n以前的内容";
        assert_eq!(super::split(chinese).new_words, "还没有退款。");
    }

    #[test]
    fn a_mail_that_is_all_quote_or_a_forward_keeps_everything_as_its_words() {
        let only_quote = "> what we said\n> before";
        assert_eq!(split(only_quote).new_words, only_quote);
        let forward = "See the receipt below.\n\n---------- Forwarded message ----------\nFrom: shop@x.test\nTotal 198.00";
        assert_eq!(split(forward).new_words, forward);
    }
}
