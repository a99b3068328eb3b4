//! Policy Markdown as HTML: rendered with pulldown-cmark (tables included),
//! raw HTML turned into text (an author's `<script>` is shown, never run), and every
//! numbered clause (a paragraph that starts `2.1`, `3.2.1`…) given an anchor `c2.1`, so a citation
//! `RP-001@2#2.1` lands on its clause. Links go only where a policy may point — a
//! relative path, `#`, `http(s):` or `mailto:` — and no image is fetched from another
//! site (a policy page is read by staff signed in to the console).

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd};

/// Whether a link target is one a policy may use: a relative path or `#fragment`, or an
/// `http:`, `https:` or `mailto:` address. Browsers ignore tabs and line breaks inside a
/// scheme (`java\tscript:`), so they are removed before looking.
fn allowed_link(dest: &str) -> bool {
    let dest: String = dest
        .chars()
        .filter(|c| !c.is_ascii_whitespace() && !c.is_control())
        .collect::<String>()
        .to_ascii_lowercase();
    if dest.starts_with("//") || dest.starts_with("\\") {
        return false;
    }
    let scheme_end = dest.find(['/', '?', '#']);
    match dest.find(':') {
        Some(colon) if scheme_end.is_none_or(|end| colon < end) => ["http:", "https:", "mailto:"]
            .iter()
            .any(|s| dest.starts_with(s)),
        _ => true,
    }
}

/// Whether an image's source is this site's own (a relative path), never another's.
fn local_image(dest: &str) -> bool {
    allowed_link(dest)
        && !dest.trim_start().to_ascii_lowercase().starts_with("http")
        && !dest.contains(':')
}

/// The event with link targets made safe and remote images shown as their text.
fn safe(event: Event<'_>) -> Event<'_> {
    match event {
        Event::Html(html) | Event::InlineHtml(html) => Event::Text(html),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) if !allowed_link(&dest_url) => Event::Start(Tag::Link {
            link_type,
            dest_url: CowStr::from("#"),
            title,
            id,
        }),
        Event::Start(Tag::Image { dest_url, .. }) if !local_image(&dest_url) => {
            Event::Text(CowStr::from("[image: "))
        }
        other => other,
    }
}

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
    // A remote image's end becomes the `]` closing its `[image: alt` text.
    let mut remote_image = Vec::new();
    // Tables on: the policies state their thresholds and periods in tables, which a
    // reader must see as tables, not rows of pipes (docs/spec/policies.md).
    let events: Vec<Event> = Parser::new_ext(markdown, Options::ENABLE_TABLES)
        .map(|event| {
            if let Event::Start(Tag::Image { dest_url, .. }) = &event {
                remote_image.push(!local_image(dest_url));
            }
            match event {
                Event::End(TagEnd::Image) if remote_image.pop() == Some(true) => {
                    Event::Text(CowStr::from("]"))
                }
                other => safe(other),
            }
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
    fn a_policy_links_only_to_relative_http_and_mailto_targets_and_fetches_no_remote_image() {
        let html = render(
            "[a](javascript:alert(1)) [b](JAVA\tSCRIPT:x) [c](data:text/html,x) [d](//evil.example/x) \
             [e](https://example.com/p) [f](mailto:x@example.com) [g](#c2.1) [h](RP-001-v2.md) \
             ![tracker](https://evil.example/p.gif) ![own](/static/logo.png)",
        );
        assert!(!html.to_ascii_lowercase().contains("javascript"), "{html}");
        assert!(
            !html.contains("data:text") && !html.contains("//evil"),
            "{html}"
        );
        for kept in [
            "https://example.com/p",
            "mailto:x@example.com",
            "#c2.1",
            "RP-001-v2.md",
        ] {
            assert!(html.contains(&format!("href=\"{kept}\"")), "{kept}: {html}");
        }
        assert!(
            html.contains("[image: tracker]") && !html.contains("<img src=\"https"),
            "{html}"
        );
        assert!(html.contains("<img src=\"/static/logo.png\""), "{html}");
    }

    #[test]
    fn a_policy_table_is_an_html_table() {
        let html = render("| currency | threshold |\n|---|---|\n| JPY | 15,000 |\n");
        assert!(html.contains("<table>"), "{html}");
        assert!(html.contains("<th>currency</th>"), "{html}");
        assert!(html.contains("<td>JPY</td><td>15,000</td>"), "{html}");
        assert!(!html.contains("|---|"), "{html}");
    }

    #[test]
    fn a_paragraph_starting_with_a_plain_number_or_a_word_is_no_clause() {
        assert_eq!(clause_number("2 items"), None);
        assert_eq!(clause_number("2026-07-01 is"), None);
        assert_eq!(clause_number("Version 2.1"), None);
        assert_eq!(clause_number("3.2.1 Deep"), Some("3.2.1"));
    }
}
