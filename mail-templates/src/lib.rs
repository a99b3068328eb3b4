//! The two bodies of one mail, rendered from its words: the plain-text part
//! (`templates/mail.txt`, nothing escaped) and the HTML part (`templates/mail.html`,
//! every word askama-escaped, so a customer's own text never becomes markup).
//!
//! A crate of its own below `desk` so the workflow renders no template itself
//! (`app/tests/it/layers.rs`: `desk` does not use askama directly) while its mail sender
//! still turns an outbox row into a mail. What it does not do: choose the words (the
//! language's, in `desk::mail::render`), build headers, or send anything.

use askama::Template;

/// The words of one mail, shared by its two parts.
#[derive(Debug, Clone)]
pub struct Words {
    /// The language tag of the words (`en`, `zh`, …), the HTML part's `lang`.
    pub lang: &'static str,
    pub headline: String,
    pub paragraphs: Vec<String>,
    /// The sign-in (customers) or console (staff) address, when the mail has one.
    pub link: Option<String>,
    pub open_label: String,
    pub link_note: String,
    pub reply_note: String,
    pub ticket_line: String,
}

/// A mail's two bodies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parts {
    pub text: String,
    pub html: String,
}

#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("a mail template did not render: {0}")]
    Render(#[from] askama::Error),
}

/// The HTML part of a mail: the same words as the text part, askama-escaped.
#[derive(Template)]
#[template(path = "mail.html")]
struct HtmlPart<'a> {
    w: &'a Words,
}

/// The plain-text part of a mail.
#[derive(Template)]
#[template(path = "mail.txt")]
struct TextPart<'a> {
    w: &'a Words,
}

/// Both bodies of the mail that says `words`.
pub fn render(words: &Words) -> Result<Parts, TemplateError> {
    Ok(Parts {
        text: TextPart { w: words }.render()?,
        html: HtmlPart { w: words }.render()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(paragraph: &str, link: Option<&str>) -> Words {
        Words {
            lang: "en",
            headline: "Your refund".into(),
            paragraphs: vec![paragraph.into()],
            link: link.map(str::to_string),
            open_label: "Open your ticket".into(),
            link_note: "The link works once.".into(),
            reply_note: "Reply to this mail to write to us.".into(),
            ticket_line: "Ticket: tkt_1".into(),
        }
    }

    #[test]
    fn a_customers_markup_is_escaped_in_the_html_part_and_kept_in_the_text_part() {
        let parts = render(&words("<b>charged twice</b> & upset", None)).expect("renders");
        assert!(parts
            .html
            .contains("&#60;b&#62;charged twice&#60;/b&#62; &#38; upset"));
        assert!(!parts.html.contains("<b>"));
        assert!(parts.text.contains("<b>charged twice</b> & upset"));
    }

    #[test]
    fn the_link_and_its_note_appear_only_when_the_mail_has_a_link() {
        let with = render(&words("Hello", Some("https://desk.test/s/abc"))).expect("renders");
        assert!(with
            .text
            .contains("Open your ticket: https://desk.test/s/abc\nThe link works once."));
        assert!(with.html.contains("href=\"https://desk.test/s/abc\""));
        let without = render(&words("Hello", None)).expect("renders");
        assert!(!without.text.contains("The link works once."));
        assert!(!without.html.contains("href="));
    }

    #[test]
    fn both_parts_carry_the_headline_the_reply_note_and_the_ticket_line() {
        let parts = render(&words("Hello", None)).expect("renders");
        for part in [&parts.text, &parts.html] {
            assert!(part.contains("Your refund"));
            assert!(part.contains("Reply to this mail to write to us."));
            assert!(part.contains("Ticket: tkt_1"));
        }
        assert!(parts.html.contains("<html lang=\"en\">"));
    }
}
