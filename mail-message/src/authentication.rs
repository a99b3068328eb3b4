//! Who a mail proves it is from (docs/spec/email.md, "Who wrote"): the
//! `Authentication-Results` field (RFC 8601) of the one receiving server the team trusts
//! (`MAIL_AUTHSERV_ID`), read properly — comments, spacing, versions, several results,
//! properties — and the DMARC rule (RFC 7489 §3.1) for when a result counts.
//!
//! A mail proves its sender only by a DMARC `pass` for its From domain, or an SPF or DKIM
//! `pass` whose domain is aligned with the From domain. Everything else — no field, a
//! field of another server, `none`, `neutral`, `temperror`, `permerror`, `fail`, a
//! `dmarc=fail` beside an SPF pass, a field we cannot read — proves nothing. Only a
//! positive proof is ever believed: whatever a sender may forge can only make its mail
//! look unproven, never proven.
//!
//! **Which field.** The receiving server prepends its own field above everything the
//! sender wrote, and RFC 8601 §5 has it delete any field that already claims its
//! authserv-id. So the field read is the topmost one carrying the trusted authserv-id;
//! any field below it (a sender's copy that slipped through) and fields of other servers
//! are never read. `Received-SPF` is never read: it carries no authserv-id.
//!
//! **Alignment** (our choice, stricter than RFC 7489's relaxed mode where that needs the
//! public suffix list, which the product does not ship): an SPF (`smtp.mailfrom`) or DKIM
//! (`header.d`, else the domain of `header.i`) domain aligns when it equals the From
//! domain or is a parent of it (`example.cn` for `mail.example.cn`), with at least two
//! labels. A subdomain of the From domain (`bounces.example.cn` for `example.cn`) does not
//! align here; the receiving server's own DMARC check, with the list, covers it: its
//! `dmarc=pass` counts when its `header.from` is the From domain.
//!
//! Pure: no I/O. What it does not do: decide what an unproven mail does (`inbound`).

/// What the trusted server's field says about a mail's sender.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SenderProof {
    /// The sender is proven: by `dmarc`, `spf` or `dkim` (the method named).
    Proven(&'static str),
    /// Nothing proves the sender; why, for the mail's record and the logs.
    Unproven(String),
}

impl SenderProof {
    pub fn is_proven(&self) -> bool {
        matches!(self, SenderProof::Proven(_))
    }
}

/// One `method=result` of a field, with its properties (`ptype.property`, lower case).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodResult {
    pub method: String,
    pub result: String,
    pub properties: Vec<(String, String)>,
}

impl MethodResult {
    fn property(&self, name: &str) -> Option<&str> {
        self.properties
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One field, read: its authserv-id and its results (none for the `none` form).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub authserv_id: String,
    pub results: Vec<MethodResult>,
}

/// Whether `fields` (the raw values of every `Authentication-Results` field, topmost
/// first) prove that `from` (the From address) sent the mail, by the server
/// `trusted_id` names. `None` for `trusted_id`: no server is trusted, nothing is proven.
pub fn sender_proof(fields: &[String], trusted_id: Option<&str>, from: &str) -> SenderProof {
    let Some(trusted_id) = trusted_id.map(str::trim).filter(|id| !id.is_empty()) else {
        return SenderProof::Unproven("no receiving server is trusted (MAIL_AUTHSERV_ID)".into());
    };
    let Some(from_domain) = from.rsplit_once('@').map(|(_, d)| domain(d)) else {
        return SenderProof::Unproven("no From domain".into());
    };
    let trusted_lower = trusted_id.to_ascii_lowercase();
    for raw in fields {
        match read_field(raw) {
            Some(field) if field.authserv_id.eq_ignore_ascii_case(trusted_id) => {
                return proof_of(&field.results, &from_domain);
            }
            Some(_) => {}
            // A field we cannot read that may be the trusted server's stops the search:
            // reading on would reach the fields below it.
            None if raw.to_ascii_lowercase().contains(&trusted_lower) => {
                return SenderProof::Unproven(format!(
                    "an Authentication-Results of {trusted_id} that cannot be read"
                ));
            }
            None => {}
        }
    }
    SenderProof::Unproven(format!("no Authentication-Results of {trusted_id}"))
}

/// The DMARC rule over one field's results.
fn proof_of(results: &[MethodResult], from_domain: &str) -> SenderProof {
    let named = |method: &'static str| results.iter().filter(move |r| r.method == method);
    for dmarc in named("dmarc") {
        match dmarc.result.as_str() {
            "pass" if dmarc.property("header.from").map(domain).as_deref() == Some(from_domain) => {
                return SenderProof::Proven("dmarc")
            }
            // No policy published: SPF and DKIM below may still prove the sender.
            "none" => {}
            other => return SenderProof::Unproven(format!("dmarc={other}")),
        }
    }
    let aligned = |value: Option<&str>| value.map(domain).is_some_and(|d| aligns(&d, from_domain));
    if named("spf").any(|r| r.result == "pass" && aligned(r.property("smtp.mailfrom"))) {
        return SenderProof::Proven("spf");
    }
    let dkim_domain = |r: &MethodResult| {
        r.property("header.d")
            .or_else(|| r.property("header.i"))
            .map(str::to_string)
    };
    if named("dkim").any(|r| r.result == "pass" && aligned(dkim_domain(r).as_deref())) {
        return SenderProof::Proven("dkim");
    }
    let seen: Vec<String> = results
        .iter()
        .map(|r| format!("{}={}", r.method, r.result))
        .collect();
    SenderProof::Unproven(if seen.is_empty() {
        "no results".into()
    } else {
        format!("no aligned pass ({})", seen.join(" "))
    })
}

/// A domain (or an address's domain) as compared: lower case, no trailing dot.
fn domain(value: &str) -> String {
    let value = value.rsplit_once('@').map_or(value, |(_, d)| d);
    value.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// Whether an authenticated domain aligns with the From domain (see the module comment).
fn aligns(authenticated: &str, from_domain: &str) -> bool {
    if authenticated.is_empty() || !authenticated.contains('.') {
        return false;
    }
    authenticated == from_domain || from_domain.ends_with(&format!(".{authenticated}"))
}

/// Reads one field's value; `None` when it cannot be read whole (then it proves
/// nothing: only a field read whole is believed).
pub fn read_field(raw: &str) -> Option<Field> {
    let text = without_comments(raw)?;
    let mut segments = split_outside_quotes(&text, ';').into_iter();
    let head: Vec<&str> = segments.next()?.split_whitespace().collect();
    let authserv_id = match head.as_slice() {
        [id] => unquoted(id)?,
        // RFC 8601 §2.2: an optional version after the id; only version 1 is known.
        [id, "1"] => unquoted(id)?,
        _ => return None,
    };
    let rest: Vec<&str> = segments.map(str::trim).collect();
    if let [none] = rest.as_slice() {
        if none.eq_ignore_ascii_case("none") {
            return Some(Field {
                authserv_id,
                results: Vec::new(),
            });
        }
    }
    let results = rest
        .into_iter()
        .map(read_result)
        .collect::<Option<Vec<_>>>()?;
    Some(Field {
        authserv_id,
        results,
    })
}

/// An authserv-id as written: a token, or a quoted string.
fn unquoted(id: &str) -> Option<String> {
    match id.strip_prefix('"') {
        Some(rest) => rest.strip_suffix('"').map(str::to_string),
        None => Some(id.to_string()),
    }
}

/// `method[/version] = result [reason = value] [ptype.property = value]…`, spacing
/// allowed around `/`, `=` and the property's dot. A value runs to the next space: real
/// servers write DKIM's `header.b` unquoted, `/`, `+` and `=` included.
fn read_result(segment: &str) -> Option<MethodResult> {
    let mut chars = segment.trim().chars().peekable();
    let method: String = take_until(&mut chars, |c| c == '=' || c == '/');
    if chars.peek() == Some(&'/') {
        chars.next();
        take_until(&mut chars, |c| c == '=');
    }
    if chars.next() != Some('=') || method.is_empty() {
        return None;
    }
    skip_spaces(&mut chars);
    let result = value(&mut chars)?;
    let mut properties = Vec::new();
    loop {
        skip_spaces(&mut chars);
        if chars.peek().is_none() {
            break;
        }
        let name = take_until(&mut chars, |c| c == '=');
        if chars.next() != Some('=') || name.is_empty() {
            return None;
        }
        skip_spaces(&mut chars);
        properties.push((name.to_ascii_lowercase(), value(&mut chars)?));
    }
    Some(MethodResult {
        method: method.to_ascii_lowercase(),
        result: result.to_ascii_lowercase(),
        properties,
    })
}

type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

/// The characters up to `stop` (not taken), white space dropped.
fn take_until(chars: &mut Chars<'_>, stop: impl Fn(char) -> bool) -> String {
    let mut taken = String::new();
    while let Some(&c) = chars.peek() {
        if stop(c) {
            break;
        }
        chars.next();
        if !c.is_whitespace() {
            taken.push(c);
        }
    }
    taken
}

fn skip_spaces(chars: &mut Chars<'_>) {
    while chars.peek().is_some_and(|c| c.is_whitespace()) {
        chars.next();
    }
}

/// A value: a quoted string, or the characters up to the next white space.
fn value(chars: &mut Chars<'_>) -> Option<String> {
    if chars.peek() == Some(&'"') {
        chars.next();
        let mut text = String::new();
        loop {
            match chars.next()? {
                '\\' => text.push(chars.next()?),
                '"' => return Some(text),
                c => text.push(c),
            }
        }
    }
    let word = take_until(chars, char::is_whitespace);
    (!word.is_empty()).then_some(word)
}

/// The field without its comments (nested, with `\` escapes; RFC 5322 §3.2.2), each
/// replaced by a space; quoted strings kept whole. `None` when a comment or a string
/// is never closed.
fn without_comments(raw: &str) -> Option<String> {
    let mut text = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    let mut depth = 0usize;
    let mut in_quotes = false;
    while let Some(c) = chars.next() {
        match (c, depth, in_quotes) {
            ('\\', _, _) => {
                let escaped = chars.next()?;
                if depth == 0 {
                    text.push(c);
                    text.push(escaped);
                }
            }
            ('"', 0, _) => {
                in_quotes = !in_quotes;
                text.push(c);
            }
            ('(', _, false) => depth += 1,
            (')', 1.., false) => {
                depth -= 1;
                if depth == 0 {
                    text.push(' ');
                }
            }
            (c, 0, _) => text.push(c),
            _ => {}
        }
    }
    (depth == 0 && !in_quotes).then_some(text)
}

/// `text` split at `separator` where it is not inside a quoted string.
fn split_outside_quotes(text: &str, separator: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut in_quotes, mut escaped) = (0, false, false);
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => in_quotes = !in_quotes,
            c if c == separator && !in_quotes => {
                parts.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

#[cfg(test)]
mod tests;
