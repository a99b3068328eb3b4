//! The varied style's mail forms: what surrounds a customer's new
//! words in real mail — a quoted earlier thread naming another order of the same
//! customer, a forwarded receipt, a signature, a pasted bank statement or card SMS,
//! HTML remnants, numbers that are not orders, a paragraph that tries to instruct the
//! agent — written from the mail-form banks of `evals/history/mail/` in ten languages.
//!
//! What it deliberately does not do: know how the app reads mail. Nothing here imports
//! or mirrors the parser's words; the only rule it keeps is the one a careful person
//! relies on: no filled decoy, statement, SMS, signature, header or injection equals or
//! contains an order id of the world (any customer's) read as letters and digits only.

use std::collections::BTreeMap;

use desk::world::WorldOrder;
use serde::Deserialize;
use time::{Duration, OffsetDateTime};

use super::super::rng::SplitMix64;
use super::vocabulary::Bank;
use super::writing::{letters_and_digits, write_amount, write_date};

/// The mail-form banks, in the order of the phrase banks (`vocabulary::BANKS`).
const MAIL_BANKS: [&str; 10] = [
    include_str!("../../../history/mail/en.json"),
    include_str!("../../../history/mail/zh.json"),
    include_str!("../../../history/mail/ja.json"),
    include_str!("../../../history/mail/de.json"),
    include_str!("../../../history/mail/fr.json"),
    include_str!("../../../history/mail/es.json"),
    include_str!("../../../history/mail/it.json"),
    include_str!("../../../history/mail/nl.json"),
    include_str!("../../../history/mail/pt.json"),
    include_str!("../../../history/mail/ko.json"),
];

/// One language's mail forms (the keys are described in `evals/history/mail/README.md`).
#[derive(Debug, Deserialize)]
pub(super) struct MailBank {
    pub(super) language: String,
    weekdays: Vec<String>,
    weekdays_abbr: Vec<String>,
    months: Vec<String>,
    months_abbr: Vec<String>,
    reply_headers: Vec<String>,
    outlook_headers: Vec<Vec<String>>,
    original_banners: Vec<String>,
    forward_banners: Vec<String>,
    forward_headers: Vec<Vec<String>>,
    subjects: Vec<String>,
    shop_replies: Vec<String>,
    customer_earlier: Vec<String>,
    receipts: Vec<Vec<String>>,
    sign_offs: Vec<String>,
    signatures: Vec<Vec<String>>,
    sent_from: Vec<String>,
    statement_intros: Vec<String>,
    statement_lines: Vec<String>,
    merchants: Vec<String>,
    sms: Vec<String>,
    decoys: Vec<String>,
    injections: Vec<String>,
    formats: BTreeMap<String, Vec<String>>,
}

pub(super) fn mail_banks() -> Vec<MailBank> {
    MAIL_BANKS
        .iter()
        .map(|text| serde_json::from_str(text).expect("the mail banks ship as valid JSON"))
        .collect()
}

/// What a mail is written about: the world's facts the forms may name.
pub(super) struct Subject<'a> {
    pub(super) bank: &'a Bank,
    pub(super) mail: &'a MailBank,
    /// Every order id of the world, read as letters and digits only.
    pub(super) id_keys: Vec<String>,
    /// Every order amount of the world (a statement never shows one of them).
    pub(super) amounts: Vec<String>,
    /// The order the complaint is about, if it is one of the customer's.
    pub(super) target: Option<WorldOrder>,
    /// The customer's orders other than the target.
    pub(super) others: Vec<WorldOrder>,
    pub(super) currency: &'static str,
    pub(super) at: OffsetDateTime,
    pub(super) customer_name: String,
    pub(super) customer_email: String,
}

/// A mail around the new words: each part is rendered in place by [`Letter::render`].
pub(super) struct Letter {
    pub(super) new_words: String,
    pub(super) html: bool,
    pub(super) blocks: Vec<String>,
    pub(super) injection: Option<String>,
    pub(super) signature: Option<String>,
    pub(super) below: Option<String>,
    /// The forms used, for the per-form report (`features.mail`).
    pub(super) forms: Vec<&'static str>,
    /// The order a quoted or forwarded earlier mail names, if any.
    pub(super) quoted_order: Option<String>,
}

impl Letter {
    /// The mail as the customer sent it; the injection only where `inject` (a ticket
    /// the records or the words decide: the spec says an injection is a reason to decline
    /// or escalate, never to ask, so it is not put where the label is to ask).
    pub(super) fn render(&self, inject: bool) -> String {
        let mut parts = vec![if self.html {
            html(&self.new_words)
        } else {
            self.new_words.clone()
        }];
        parts.extend(self.blocks.iter().cloned());
        if inject {
            parts.extend(self.injection.iter().cloned());
        }
        parts.extend(self.signature.iter().cloned());
        parts.extend(self.below.iter().cloned());
        parts.join("\n\n")
    }
}

/// New words as an HTML mail converted by a careless client leaves them.
fn html(text: &str) -> String {
    let spaced = text.replace(". ", ".&nbsp; ");
    let lines: Vec<&str> = spaced.lines().collect();
    match text.len() % 3 {
        0 => lines
            .iter()
            .map(|l| format!("<div dir=\"ltr\">{l}</div>"))
            .collect::<Vec<_>>()
            .join("\n"),
        1 => format!("{}<br>", lines.join("<br>\n")),
        _ => format!("<p>{}</p>", lines.join("</p>\n<p>")),
    }
}

/// Dresses `new_words` as a mail: each form drawn with its own chance, in one fixed order.
pub(super) fn letter(rng: &mut SplitMix64, s: &Subject, new_words: String) -> Letter {
    let mut l = Letter {
        new_words,
        html: false,
        blocks: Vec::new(),
        injection: None,
        signature: None,
        below: None,
        forms: Vec::new(),
        quoted_order: None,
    };
    let vars = vars(rng, s);
    if rng.chance(40) {
        quote(rng, s, &vars, &mut l);
    } else if rng.chance(25) {
        forward(rng, s, &vars, &mut l);
    }
    if rng.chance(15) {
        let intro = rng.pick_str(&s.mail.statement_intros).to_string();
        let lines: Vec<String> = (0..rng.range(2, 4))
            .filter_map(|_| {
                let mut line_vars = vars.clone();
                let amount = loose_amount(rng, s);
                line_vars.insert("amount", write_amount(rng, s.bank, &amount, s.currency));
                safe_fill(rng, s, &line_vars, &s.mail.statement_lines, &[])
            })
            .collect();
        l.blocks.push(format!("{intro}\n{}", lines.join("\n")));
        l.forms.push("statement");
    }
    if rng.chance(12) {
        if let Some(sms) = safe_fill(rng, s, &vars, &s.mail.sms, &[]) {
            l.blocks.push(sms);
            l.forms.push("sms");
        }
    }
    if rng.chance(30) {
        let decoys: Vec<String> = (0..rng.range(1, 2))
            .filter_map(|_| safe_fill(rng, s, &vars, &s.mail.decoys, &[]))
            .collect();
        if !decoys.is_empty() {
            l.blocks.push(decoys.join(" "));
            l.forms.push("decoys");
        }
    }
    if rng.chance(45) {
        let lines = rng.pick_vec(&s.mail.signatures);
        if let Some(block) = safe_block(rng, s, &vars, lines) {
            let sign_off = rng.pick_str(&s.mail.sign_offs).to_string();
            let mut signature = format!("{sign_off}\n{block}");
            if rng.chance(40) {
                signature = format!("{signature}\n\n{}", rng.pick_str(&s.mail.sent_from));
            }
            l.signature = Some(signature);
            l.forms.push("signature");
        }
    }
    if rng.chance(10) {
        l.html = true;
        l.forms.push("html");
    }
    if rng.chance(10) {
        l.injection = safe_fill(rng, s, &vars, &s.mail.injections, &[]);
    }
    l
}

/// An earlier mail quoted under the new words, naming another order of the customer
/// (their only order when they have one).
fn quote(rng: &mut SplitMix64, s: &Subject, vars: &Vars, l: &mut Letter) {
    let order = match (s.others.is_empty(), &s.target) {
        (false, _) => &s.others[rng.below(s.others.len() as u64) as usize],
        (true, Some(target)) => target,
        (true, None) => return,
    };
    let body_bank = if rng.chance(70) {
        &s.mail.shop_replies
    } else {
        &s.mail.customer_earlier
    };
    let Some(body) = safe_fill(rng, s, vars, body_bank, &[]) else {
        return;
    };
    let body = body.replace("{id}", &order.id);
    let Some(subject) = safe_fill(rng, s, vars, &s.mail.subjects, &[]) else {
        return;
    };
    let subject = subject.replace("{id}", &order.id);
    let below = if rng.chance(55) {
        let Some(header) = safe_fill(rng, s, vars, &s.mail.reply_headers, &[]) else {
            return;
        };
        let quoted: Vec<String> = body.lines().map(|line| format!("> {line}")).collect();
        l.forms.push("quoted_reply");
        format!("{header}\n{}", quoted.join("\n>\n"))
    } else {
        let headers = rng.pick_vec(&s.mail.outlook_headers);
        let Some(headers) = safe_block(rng, s, vars, headers) else {
            return;
        };
        let banner = if rng.chance(50) {
            rng.pick_str(&s.mail.original_banners).to_string()
        } else {
            "________________________________".to_string()
        };
        l.forms.push("quoted_outlook");
        format!(
            "{banner}\n{}\n\n{body}",
            headers.replace("{subject}", &subject)
        )
    };
    l.quoted_order = Some(order.id.clone());
    l.below = Some(below);
}

/// A receipt of the target order forwarded under the new words.
fn forward(rng: &mut SplitMix64, s: &Subject, vars: &Vars, l: &mut Letter) {
    let Some(target) = &s.target else {
        return;
    };
    let mut vars = vars.clone();
    vars.insert(
        "amount",
        write_amount(rng, s.bank, &target.amount, s.currency),
    );
    vars.insert("date", write_date(rng, s.bank, target.created_at.date()));
    vars.insert("product", product_name(target).to_string());
    let receipt = rng.pick_vec(&s.mail.receipts);
    let headers = rng.pick_vec(&s.mail.forward_headers);
    let Some(subject) = safe_fill(rng, s, &vars, &s.mail.subjects, &[]) else {
        return;
    };
    let own_amount = [target.amount.clone()];
    let (Some(receipt), Some(headers)) = (
        safe_block_allowing(rng, s, &vars, receipt, &own_amount),
        safe_block(rng, s, &vars, headers),
    ) else {
        return;
    };
    let banner = rng.pick_str(&s.mail.forward_banners);
    let headers = headers.replace("{subject}", &subject);
    l.below = Some(format!("{banner}\n{headers}\n\n{receipt}").replace("{id}", &target.id));
    l.quoted_order = Some(target.id.clone());
    l.forms.push("forwarded_receipt");
}

fn product_name(order: &WorldOrder) -> &'static str {
    match order.product.as_str() {
        "annual_plan" => "Annual Plan",
        "monthly_plan" => "Monthly Plan",
        _ => "Add-on Pack",
    }
}

type Vars = BTreeMap<&'static str, String>;

/// The values every form of one mail shares: an earlier date and time, the shop and
/// the customer, an amount no order of the world has, a reference that is no order.
fn vars(rng: &mut SplitMix64, s: &Subject) -> Vars {
    let earlier = s.at - Duration::days(rng.range(2, 40)) - Duration::minutes(rng.range(0, 900));
    let (m, wd) = (
        u8::from(earlier.month()) as usize - 1,
        earlier.weekday().number_days_from_monday() as usize,
    );
    let amount = loose_amount(rng, s);
    let mut v = Vars::new();
    v.insert("day", earlier.day().to_string());
    v.insert("mm_num", format!("{:02}", m + 1));
    v.insert("year", earlier.year().to_string());
    v.insert(
        "time",
        format!("{:02}:{:02}", earlier.hour(), earlier.minute()),
    );
    v.insert("weekday", s.mail.weekdays[wd].clone());
    v.insert("wd", s.mail.weekdays_abbr[wd].clone());
    v.insert("month", s.mail.months[m].clone());
    v.insert("mon", s.mail.months_abbr[m].clone());
    v.insert("from_name", "Example Shop".into());
    v.insert("from_email", "support@shop.example".into());
    v.insert("to_name", s.customer_name.clone());
    v.insert("name", s.customer_name.clone());
    v.insert("to_email", s.customer_email.clone());
    v.insert("amount", write_amount(rng, s.bank, &amount, s.currency));
    v.insert("amount_plain", amount);
    v.insert("date", write_date(rng, s.bank, earlier.date()));
    v.insert("decoy_id", decoy_id(rng, s));
    v
}

/// An amount in the ticket's currency that no order of the world has.
fn loose_amount(rng: &mut SplitMix64, s: &Subject) -> String {
    loop {
        let minor = rng.range(300, 25_000);
        let amount = if s.currency == "JPY" {
            format!("{minor}")
        } else {
            format!("{}.{:02}", minor / 100, minor % 100)
        };
        if !s.amounts.contains(&amount) {
            return amount;
        }
    }
}

/// An order-like reference that is no order: one of the world's ids with its digits
/// drawn again, until it neither equals nor contains nor is contained in any id.
fn decoy_id(rng: &mut SplitMix64, s: &Subject) -> String {
    let shape = s
        .target
        .as_ref()
        .or(s.others.first())
        .map(|o| o.id.clone())
        .unwrap_or_else(|| "A-000000".into());
    loop {
        let id: String = shape
            .chars()
            .map(|c| match c {
                '0'..='9' => char::from(b'0' + rng.below(10) as u8),
                _ => c,
            })
            .collect();
        let key = letters_and_digits(&id);
        if s.id_keys
            .iter()
            .all(|k| !key.contains(k) && !k.contains(&key))
        {
            return id;
        }
    }
}

/// One of `templates` filled, redrawn until it names no order of the world (`{id}` is
/// left for the caller); `None` if twenty draws could not avoid one.
fn safe_fill(
    rng: &mut SplitMix64,
    s: &Subject,
    vars: &Vars,
    templates: &[String],
    allowed: &[String],
) -> Option<String> {
    (0..20).find_map(|_| {
        let template = rng.pick_str(templates);
        let text = fill(rng, s.mail, template, vars);
        safe(s, &text, allowed).then_some(text)
    })
}

fn safe_block(rng: &mut SplitMix64, s: &Subject, vars: &Vars, lines: &[String]) -> Option<String> {
    safe_block_allowing(rng, s, vars, lines, &[])
}

/// A multi-line block filled, redrawn until it names no order of the world.
fn safe_block_allowing(
    rng: &mut SplitMix64,
    s: &Subject,
    vars: &Vars,
    lines: &[String],
    allowed: &[String],
) -> Option<String> {
    (0..20).find_map(|_| {
        let text: Vec<String> = lines.iter().map(|l| fill(rng, s.mail, l, vars)).collect();
        let text = text.join("\n");
        safe(s, &text, allowed).then_some(text)
    })
}

/// The rule decoys keep : read as letters and digits only, the text
/// equals or contains no order id of the world. `allowed` parts (the target's own
/// amount on its receipt) are taken out first; `{id}` slots are not filled yet.
fn safe(s: &Subject, text: &str, allowed: &[String]) -> bool {
    let mut text = text.replace("{id}", " ");
    for part in allowed {
        text = text.replace(part.as_str(), " ");
    }
    let key = letters_and_digits(&text);
    s.id_keys.iter().all(|id| !key.contains(id.as_str()))
}

/// Fills `{placeholders}`: `{dN}` N random digits, the forms of `formats`, a merchant
/// and `vars`; `{id}` and `{subject}` are left for the caller.
fn fill(rng: &mut SplitMix64, mail: &MailBank, template: &str, vars: &Vars) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            out.push_str(&rest[open..]);
            return out;
        };
        let key = &rest[open + 1..open + close];
        out.push_str(&value(rng, mail, key, vars));
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    out
}

fn value(rng: &mut SplitMix64, mail: &MailBank, key: &str, vars: &Vars) -> String {
    if let Some(n) = key.strip_prefix('d').and_then(|n| n.parse::<u32>().ok()) {
        return (0..n)
            .map(|_| char::from(b'0' + rng.below(10) as u8))
            .collect();
    }
    if let Some(v) = vars.get(key) {
        return v.clone();
    }
    if let Some(forms) = mail.formats.get(key) {
        let form = rng.pick_str(forms).to_string();
        return fill(rng, mail, &form, vars);
    }
    match key {
        "merchant" => {
            let m = rng.pick_str(&mail.merchants).to_string();
            fill(rng, mail, &m, vars)
        }
        other => format!("{{{other}}}"),
    }
}

impl SplitMix64 {
    pub(super) fn pick_vec<'a>(&mut self, items: &'a [Vec<String>]) -> &'a [String] {
        &items[self.below(items.len() as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::super::vocabulary::banks;
    use super::*;

    fn order(id: &str, amount: &str) -> WorldOrder {
        WorldOrder {
            id: id.into(),
            customer_id: "C-1".into(),
            product: policy_engine::Product::ALL[0],
            amount: amount.into(),
            currency: policy_engine::Currency::USD,
            created_at: time::macros::datetime!(2026-05-02 10:00 UTC),
        }
    }

    #[test]
    fn no_decoy_statement_sms_signature_or_injection_equals_or_contains_an_order_id() {
        // Short ids that digits drawn at random would often contain: every block a mail
        // carries must still name none of them.
        let ids = ["#1023", "7000024", "MX5H38", "O-55"];
        let (phrases, mails) = (banks(), mail_banks());
        let mut rng = SplitMix64::new(34);
        let mut checked = 0;
        for _ in 0..300 {
            let k = rng.below(10) as usize;
            let subject = Subject {
                bank: &phrases[k],
                mail: &mails[k],
                id_keys: ids.iter().map(|id| letters_and_digits(id)).collect(),
                amounts: vec!["12.00".into(), "99.00".into()],
                target: Some(order("#1023", "12.00")),
                others: vec![order("7000024", "99.00")],
                currency: "USD",
                at: time::macros::datetime!(2026-06-01 12:00 UTC),
                customer_name: "Anna Miller".into(),
                customer_email: "anna@example.us".into(),
            };
            let l = letter(&mut rng, &subject, "new words".into());
            let parts = l.blocks.iter().chain(&l.signature).chain(&l.injection);
            for text in parts {
                let key = letters_and_digits(text);
                for id in &subject.id_keys {
                    assert!(!key.contains(id.as_str()), "{id} in {text}");
                }
                checked += 1;
            }
        }
        assert!(checked > 300, "only {checked} blocks were drawn");
    }

    #[test]
    fn every_mail_bank_fills_without_a_placeholder_left() {
        let mut rng = SplitMix64::new(7);
        let vars: Vars = [
            "day",
            "mm_num",
            "year",
            "time",
            "weekday",
            "wd",
            "month",
            "mon",
            "from_name",
            "from_email",
            "to_name",
            "to_email",
            "amount",
            "amount_plain",
            "date",
            "decoy_id",
            "product",
            "name",
        ]
        .into_iter()
        .map(|k| (k, "x".to_string()))
        .collect();
        for mail in mail_banks() {
            let texts = mail
                .decoys
                .iter()
                .chain(&mail.sms)
                .chain(&mail.statement_lines)
                .chain(&mail.injections)
                .chain(&mail.reply_headers)
                .chain(mail.signatures.iter().flatten())
                .chain(mail.receipts.iter().flatten())
                .chain(mail.outlook_headers.iter().flatten())
                .chain(mail.forward_headers.iter().flatten());
            for t in texts {
                let filled = fill(&mut rng, &mail, t, &vars)
                    .replace("{id}", "")
                    .replace("{subject}", "");
                assert!(!filled.contains('{'), "{}: {filled}", mail.language);
            }
        }
    }
}
