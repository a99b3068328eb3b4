//! Policy Markdown as HTML (issue 17): rendered with pulldown-cmark, raw HTML turned into
//! text (an author's `<script>` is shown, never run), and every numbered clause
//! (a paragraph that starts `2.1`, `3.2.1`…) given an anchor `c2.1`, so a citation
//! `RP-001@2#2.1` lands on its clause.

use pulldown_cmark::{CowStr, Event, Parser, Tag};

/// The clause number a paragraph's text starts with (`"2.1 Refund…"` → `"2.1"`).
fn clause_number(text: &str) -> Option<&str> {
    let number = text.split_whitespace().next()?.trim_end_matches('.');
    let mut parts = number.split('.');
    let all_digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let first = parts.next()?;
    let rest: Vec<&str> = parts.collect();
    (all_digits(first) && !rest.is_empty() && rest.iter().all(|p| all_digits(p))).then_some(number)
}

/// `markdown` as safe HTML with clause anchors.
pub(super) fn render(markdown: &str) -> String {
    let events: Vec<Event> = Parser::new(markdown)
        .map(|event| match event {
            Event::Html(html) | Event::InlineHtml(html) => Event::Text(html),
            other => other,
        })
        .collect();
    let mut out = Vec::with_capacity(events.len());
    for (i, event) in events.iter().enumerate() {
        let anchored = match (event, events.get(i + 1)) {
            (Event::Start(Tag::Paragraph), Some(Event::Text(text))) => clause_number(text),
            _ => None,
        };
        match anchored {
            Some(number) => {
                let open = format!("<p id=\"c{number}\" class=\"clause\">");
                out.push(Event::Html(CowStr::from(open)));
            }
            None => out.push(event.clone()),
        }
    }
    // A clause opened as raw HTML closes like any paragraph: `End(Paragraph)` is `</p>`.
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, out.into_iter());
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_clauses_get_anchors_and_raw_html_stays_text() {
        let html = render("2.1 Refund each duplicate.\n\n2.2. Then reply.\n\nPlain **text**.\n\n<script>x()</script>");
        assert!(
            html.contains("<p id=\"c2.1\" class=\"clause\">2.1 Refund"),
            "{html}"
        );
        assert!(html.contains("<p id=\"c2.2\" class=\"clause\">"), "{html}");
        assert!(
            html.contains("<p>Plain <strong>text</strong>.</p>"),
            "{html}"
        );
        assert!(
            html.contains("&lt;script&gt;") && !html.contains("<script>"),
            "{html}"
        );
    }

    #[test]
    fn a_paragraph_starting_with_a_plain_number_or_a_word_is_no_clause() {
        assert_eq!(clause_number("2 items"), None);
        assert_eq!(clause_number("2026-07-01 is"), None);
        assert_eq!(clause_number("Version 2.1"), None);
        assert_eq!(clause_number("3.2.1 Deep"), Some("3.2.1"));
    }
}
