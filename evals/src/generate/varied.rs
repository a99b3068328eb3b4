//! `generate-history --style varied`: historical tickets that vary independently of the
//! investigator, for measuring it on tickets it has never seen.
//!
//! Each ticket starts from a world of the plain generator (its scenario, its intended
//! request and order) and is then varied: unrelated older orders (1–6 orders per
//! customer), an id scheme per world (`O-0001-2`, `#10234`, `ORD-2025-000123`,
//! `7000024`, `MX5H38`, `O-1001`, with ids that are prefixes of one another), and the
//! customer's text rewritten from phrase banks kept as data in `evals/history/phrases/`
//! (ten languages; the investigator never reads them): how the order is identified (its
//! id after any order word in one of the id forms customers write — spaced, broken over a
//! line, any dash, thousands separators, inside a URL — in any case or width, the ticket
//! form, a product, an amount, a date, only the records, or nothing), follow-ups (a vague
//! first message, the order in the second), greetings, typos, mixed languages, lower
//! case, full width; the order field on about half; and the last message dressed as a
//! mail from the banks of `evals/history/mail/` (`mail`: quoted threads, forwarded
//! receipts, signatures, statements, SMS, HTML remnants, decoys, injections).
//!
//! Labels come from the policy engine on the world's facts for the intended request and
//! order, as in the plain style (see the parent module: policy-correct by construction);
//! a ticket whose text identifies no order among several is labelled on no order. Each
//! line carries a `features` field (an extra field, docs/spec/interfaces.md) for per-feature reports.

use policy_engine::PolicySet;
use serde::Deserialize;
use serde_json::json;
use shadow::replay::HistoricalTicket;

mod mail;
mod orders;
mod vocabulary;
mod writing;

use super::draft::Draft;
use super::mix::Scenario;
use super::rng::SplitMix64;
use mail::{letter, mail_banks, Letter, MailBank, Subject};
use orders::{add_unrelated_orders, rename_orders};
use vocabulary::{banks, Bank, Ident, SCHEMES};
use writing::{full_width, letters_and_digits, with_typo, write_amount, write_date, write_id};

/// `n` varied tickets from `seed`, labelled under the fixture policies (panics if they
/// cannot be read: a generator for tests and benches run from a checkout).
pub fn varied_history(seed: u64, n: usize) -> Vec<HistoricalTicket> {
    let dir = desk::config::default_fixtures_dir().join("policies");
    let policies = desk::policies::load_policy_set(&dir)
        .expect("the fixture policies ship with the repository");
    varied_history_with(&policies, seed, n)
}

/// `n` varied tickets from `seed`, labelled under `policies`.
pub fn varied_history_with(policies: &PolicySet, seed: u64, n: usize) -> Vec<HistoricalTicket> {
    varied_history_from(policies, seed, n, ComplaintBank::Own)
}

/// Where the complaint sentences of the varied style come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComplaintBank {
    /// The phrase banks of `evals/history/phrases/`.
    Own,
    /// `evals/history/external/dev.jsonl`: sentences by a writer who never saw the
    /// code, which the investigator's vocabulary was tuned against.
    ExternalDev,
    /// `evals/history/external/heldout.jsonl`: the same writer's sentences that are only
    /// ever measured, never read or tuned against.
    ExternalHeldout,
}

/// One externally written sentence (`{kind, lang, text}`).
#[derive(Debug, Deserialize)]
struct ExternalSentence {
    kind: String,
    lang: String,
    text: String,
}

fn external_sentences(bank: ComplaintBank) -> Vec<ExternalSentence> {
    let text = match bank {
        ComplaintBank::Own => return Vec::new(),
        ComplaintBank::ExternalDev => include_str!("../../history/external/dev.jsonl"),
        ComplaintBank::ExternalHeldout => {
            include_str!("../../history/external/heldout.jsonl")
        }
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("the external sentences ship as JSON lines"))
        .collect()
}

/// The external label of a complaint bank (`unclear` sentences have no world: the
/// labels come from the engine on a world built for a kind).
fn external_kind(complaint: &str) -> &'static str {
    match complaint {
        "duplicate" => "duplicate_charge",
        "repeat" => "repeat_purchase",
        "overcharge" => "overcharge",
        "cancel" => "cooling_off",
        _ => "authorization_hold",
    }
}

/// `n` varied tickets from `seed` whose complaints come from `bank`. With an external
/// bank the sentence names no order, so an order the customer identifies is named in a
/// follow-up message (`follow_up` of the language's phrase bank).
pub fn varied_history_from(
    policies: &PolicySet,
    seed: u64,
    n: usize,
    bank: ComplaintBank,
) -> Vec<HistoricalTicket> {
    varied_history_iter(policies, seed, n, bank).collect()
}

/// [`varied_history_from`], one ticket at a time.
pub fn varied_history_iter(
    policies: &PolicySet,
    seed: u64,
    n: usize,
    bank: ComplaintBank,
) -> impl Iterator<Item = HistoricalTicket> + '_ {
    let banks = banks();
    let mails = mail_banks();
    let external = external_sentences(bank);
    let mut rng = SplitMix64::new(seed ^ 0x7A21_ED00_0000_0015);
    (0..n).map(move |i| {
        let mut draft = Draft::new(&mut rng, seed, i);
        let (mut features, letter) = vary(&mut draft, &mut rng, &banks, &mails, &external);
        let mut ticket = draft.finish(policies);
        if let (Some(letter), Some(last)) = (letter, ticket.messages.last_mut()) {
            // Labels come from the engine on the records alone; an injection goes where
            // the label is not to ask (see `Letter::render`).
            let inject = letter.injection.is_some()
                && ticket.human.outcome != shadow::replay::CaseOutcome::RequestInfo;
            last.text = letter.render(inject);
            let mut forms = letter.forms.clone();
            if inject {
                forms.push("injection");
            }
            features["mail"] = json!(forms);
            features["quoted_order"] = json!(letter.quoted_order);
        }
        ticket.extra.insert("features".into(), features);
        ticket
    })
}

/// The complaint bank for a scenario.
fn complaint(scenario: Scenario) -> &'static str {
    match scenario {
        Scenario::Duplicate
        | Scenario::Dispute
        | Scenario::AlreadyRefunded
        | Scenario::NotDuplicate
        | Scenario::Ownership => "duplicate",
        Scenario::RepeatPurchase => "repeat",
        Scenario::Overcharge | Scenario::Other => "overcharge",
        Scenario::Cancellation | Scenario::Ambiguous => "cancel",
        Scenario::Hold => "hold",
    }
}

/// Whether the records alone single out the order (its charges show the problem).
fn records_show_it(scenario: Scenario) -> bool {
    !matches!(
        scenario,
        Scenario::Cancellation | Scenario::Ambiguous | Scenario::NotDuplicate | Scenario::Ownership
    )
}

fn pick_ident(rng: &mut SplitMix64, scenario: Scenario) -> Ident {
    match scenario {
        Scenario::Ownership => return Ident::Id,
        Scenario::Ambiguous => return Ident::Nothing,
        _ => {}
    }
    let twins = matches!(scenario, Scenario::RepeatPurchase);
    match rng.below(100) {
        0..=54 => Ident::Id,
        55..=64 => Ident::Form,
        65..=74 if !twins => Ident::Product,
        75..=81 if !twins => Ident::Amount,
        82..=86 if !twins => Ident::Date,
        87..=99 if records_show_it(scenario) => Ident::Records,
        _ => Ident::Id,
    }
}

/// Whether a product, amount or date singles out the target among the customer's
/// orders (the plain scenarios can hold two orders of one price).
fn fits_alone(draft: &Draft, ident: Ident, target: Option<&str>) -> bool {
    let own: Vec<&desk::world::WorldOrder> = draft
        .world
        .orders
        .iter()
        .filter(|o| o.customer_id == draft.customer_id)
        .collect();
    let Some(order) = own.iter().find(|o| Some(o.id.as_str()) == target) else {
        return !matches!(ident, Ident::Product | Ident::Amount | Ident::Date);
    };
    let count =
        |same: &dyn Fn(&desk::world::WorldOrder) -> bool| own.iter().filter(|o| same(o)).count();
    match ident {
        Ident::Product => count(&|o| o.product == order.product) == 1,
        Ident::Amount => count(&|o| o.amount == order.amount) == 1,
        Ident::Date => count(&|o| o.created_at.date() == order.created_at.date()) == 1,
        _ => true,
    }
}

/// Rewrites the draft's orders, ids and text; returns the ticket's features.
// Over 100 lines on purpose: its random draws happen in one fixed order, which the
// committed dev set (`evals/history/varied-dev.jsonl`) records byte for byte; kept whole
// so that order reads top to bottom.
fn vary(
    draft: &mut Draft,
    rng: &mut SplitMix64,
    banks: &[Bank],
    mails: &[MailBank],
    external: &[ExternalSentence],
) -> (serde_json::Value, Option<Letter>) {
    let scenario = draft.scenario;
    let mut ident = pick_ident(rng, scenario);
    let target = draft.order_id.clone();
    add_unrelated_orders(draft, rng, ident);
    let own = draft
        .world
        .orders
        .iter()
        .filter(|o| o.customer_id == draft.customer_id)
        .count();
    if own == 1
        && matches!(
            ident,
            Ident::Records | Ident::Product | Ident::Amount | Ident::Date
        )
    {
        ident = Ident::Only;
    }
    if !fits_alone(draft, ident, target.as_deref()) {
        ident = Ident::Id;
    }
    let (scheme, scheme_name) = rng.pick(&SCHEMES);
    let renamed = rename_orders(draft, rng, scheme);
    let target = target.map(|id| renamed.get(&id).cloned().unwrap_or(id));
    draft.order_id = target.clone();
    draft.repeat_of = (draft.repeat_of.take()).map(|id| renamed.get(&id).cloned().unwrap_or(id));
    draft.form_order_id = (ident == Ident::Form).then(|| target.clone()).flatten();

    let language = pick_language(rng, draft, !external.is_empty());
    let bank = &banks[language];
    let target_order = target
        .as_ref()
        .and_then(|id| draft.world.orders.iter().find(|o| &o.id == id))
        .cloned();
    let other_ids: Vec<String> = draft
        .world
        .orders
        .iter()
        .filter(|o| Some(&o.id) != target.as_ref())
        .map(|o| o.id.clone())
        .collect();
    let mut id_form = None;
    let reference = match (ident, &target_order) {
        (Ident::Id, Some(o)) => {
            let (written, form) = write_id(rng, bank, &o.id, &other_ids);
            id_form = Some(form);
            written
        }
        (Ident::Product, Some(o)) => rng
            .pick_str(&bank.refs.product[o.product.as_str()])
            .to_string(),
        (Ident::Amount, Some(o)) => rng.pick_str(&bank.refs.amount).replace(
            "{amount}",
            &write_amount(rng, bank, &o.amount, o.currency.code()),
        ),
        (Ident::Date, Some(o)) => rng
            .pick_str(&bank.refs.date)
            .replace("{date}", &write_date(rng, bank, o.created_at.date())),
        _ => rng.pick_str(&bank.refs.generic).to_string(),
    };
    let generic = rng.pick_str(&bank.refs.generic).to_string();
    let template = rng
        .pick_str(&bank.complaint[complaint(scenario)])
        .to_string();
    // Drawn after the own template, so the own bank's sets stay what they were.
    let template =
        pick_external(rng, external, complaint(scenario), &bank.language).unwrap_or(template);
    let typo = bank.language == "en" && rng.chance(8);
    let template = if typo {
        with_typo(rng, &template)
    } else {
        template
    };
    let identifies = matches!(
        ident,
        Ident::Id | Ident::Product | Ident::Amount | Ident::Date
    );
    let follow_up = rng.chance(25);
    let mut messages = Vec::new();
    if follow_up && identifies && rng.chance(50) {
        // The complaint first, the order in a second message.
        messages.push(template.replace("{ref}", &generic));
        messages.push(rng.pick_str(&bank.follow_up).replace("{ref}", &reference));
    } else if follow_up {
        // A vague first message, then the complaint with the order.
        messages.push(rng.pick_str(&bank.vague).to_string());
        messages.push(template.replace("{ref}", &reference));
    } else {
        messages.push(template.replace("{ref}", &reference));
    }
    if identifies && !messages.iter().any(|m| m.contains(&reference)) {
        // An external sentence has no `{ref}`: the order follows in a second message.
        messages.push(rng.pick_str(&bank.follow_up).replace("{ref}", &reference));
    }
    let first = 0;
    if rng.chance(30) {
        let greeting = rng.pick_str(&bank.greeting);
        messages[first] = format!("{greeting} {}", messages[first]);
    }
    let mixed = rng.chance(8);
    let last = messages.len() - 1;
    if mixed {
        let other = &banks[(language + 1 + rng.below(2) as usize) % banks.len()];
        messages[last] = format!("{} {}", messages[last], rng.pick_str(&other.extra));
    } else if rng.chance(25) {
        messages[last] = format!("{} {}", messages[last], rng.pick_str(&bank.extra));
    }
    let lower = bank.language == "en" && rng.chance(6);
    let wide = bank.language != "en" && rng.chance(8);
    for m in &mut messages {
        if lower {
            *m = m.to_lowercase();
        }
        if wide {
            *m = full_width(m);
        }
    }
    // Naming nothing leaves the order to the records; "I bought it again" names the later
    // of the two identical orders all the same (docs/spec/domain.md, "One thing bought
    // twice"), so that ticket keeps its order and the one it repeats.
    if ident == Ident::Nothing && !matches!(scenario, Scenario::RepeatPurchase) {
        draft.order_id = None;
    }
    // Half the tickets carry the order in the ticket form; an email never does.
    let field = ident == Ident::Form
        || (ident != Ident::Nothing
            && draft.order_id.is_some()
            && !matches!(scenario, Scenario::Ownership)
            && rng.chance(45));
    draft.form_order_id = field.then(|| draft.order_id.clone()).flatten();
    let last_words = messages.pop().unwrap_or_default();
    let letter = letter(rng, &subject(draft, bank, &mails[language]), last_words);
    messages.push(String::new());
    draft.messages = messages;
    let features = json!({
        "id_scheme": scheme_name,
        "language": bank.language,
        "ident": ident.as_str(),
        "follow_up": follow_up,
        "orders": own,
        "typo": typo,
        "mixed_language": mixed,
        "lower_case": lower,
        "full_width": wide,
        // What the label is about; replay never reads extra fields.
        "intended_order": draft.order_id,
        "order_field": field,
        "id_form": id_form,
        "mail": [],
    });
    (features, Some(letter))
}

/// What the mail forms may name: the world's ids and amounts, the target and the
/// customer's other orders.
fn subject<'a>(draft: &Draft, bank: &'a Bank, mail: &'a MailBank) -> Subject<'a> {
    let own = |o: &&desk::world::WorldOrder| o.customer_id == draft.customer_id;
    let target = draft
        .world
        .orders
        .iter()
        .filter(own)
        .find(|o| Some(&o.id) == draft.order_id.as_ref())
        .cloned();
    let customer = draft.world.customers.first();
    debug_assert_eq!(bank.language, mail.language, "the banks are in one order");
    Subject {
        bank,
        mail,
        id_keys: draft
            .world
            .orders
            .iter()
            .map(|o| letters_and_digits(&o.id))
            .collect(),
        amounts: draft
            .world
            .orders
            .iter()
            .map(|o| o.amount.clone())
            .collect(),
        others: draft
            .world
            .orders
            .iter()
            .filter(own)
            .filter(|o| Some(&o.id) != draft.order_id.as_ref())
            .cloned()
            .collect(),
        target,
        currency: draft.currency.code(),
        at: draft.created_at,
        customer_name: customer.map(|c| c.name.clone()).unwrap_or_default(),
        customer_email: customer.map(|c| c.email.clone()).unwrap_or_default(),
    }
}

/// An external sentence of this kind and language, if the bank is external.
fn pick_external(
    rng: &mut SplitMix64,
    external: &[ExternalSentence],
    complaint: &str,
    language: &str,
) -> Option<String> {
    let kind = external_kind(complaint);
    let fitting: Vec<&ExternalSentence> = external
        .iter()
        .filter(|s| s.kind == kind && s.lang == language)
        .collect();
    if fitting.is_empty() {
        return None;
    }
    Some(
        fitting[rng.below(fitting.len() as u64) as usize]
            .text
            .clone(),
    )
}

/// The language of the ticket: with an external complaint bank one of the three it is
/// written in (as the first phrase banks drew them); else half the time a language of the region's
/// customers, half the time any of the ten (a shop sells abroad).
fn pick_language(rng: &mut SplitMix64, draft: &Draft, external: bool) -> usize {
    let native = match draft.region {
        policy_engine::Region::CN => 1,
        policy_engine::Region::JP => 2,
        _ => 0,
    };
    if external {
        return if native != 0 && rng.chance(70) {
            native
        } else if rng.chance(6) {
            rng.below(3) as usize
        } else {
            0
        };
    }
    let regional: &[usize] = match draft.region {
        policy_engine::Region::CN => &[1],
        policy_engine::Region::JP => &[2, 2, 9],
        policy_engine::Region::EU => &[3, 4, 5, 6, 7, 8],
        _ => &[0, 0, 5],
    };
    if rng.chance(50) {
        rng.pick(regional)
    } else {
        rng.below(10) as usize
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn the_varied_style_is_deterministic_and_covers_every_scheme_language_and_order_count() {
        let a = super::super::to_jsonl(&varied_history(11, 400));
        assert_eq!(a, super::super::to_jsonl(&varied_history(11, 400)));
        let tickets = varied_history(11, 400);
        let feature = |name: &str| -> BTreeSet<String> {
            tickets
                .iter()
                .map(|t| t.extra["features"][name].to_string())
                .collect()
        };
        assert_eq!(feature("id_scheme").len(), 6);
        assert_eq!(feature("language").len(), 10);
        assert!(feature("orders").len() >= 6, "{:?}", feature("orders"));
        assert_eq!(feature("follow_up").len(), 2);
        assert!(tickets
            .iter()
            .all(|t| { (1..=6).contains(&t.extra["features"]["orders"].as_u64().unwrap_or(0)) }));
    }

    #[test]
    fn a_typo_swaps_two_letters_of_one_word() {
        let mut rng = SplitMix64::new(1);
        let typo = with_typo(&mut rng, "I was charged twice");
        assert_ne!(typo, "I was charged twice");
        assert_eq!(typo.len(), "I was charged twice".len());
    }

    #[test]
    fn what_the_customer_writes_to_identify_the_order_fits_that_order_alone() {
        for t in varied_history(5, 400) {
            let f = &t.extra["features"];
            let Some(target) = f["intended_order"].as_str() else {
                assert_eq!(f["ident"], "nothing", "{}", t.id);
                continue;
            };
            let own: Vec<_> = t
                .world
                .orders
                .iter()
                .filter(|o| o.customer_id == t.customer_id)
                .collect();
            let Some(order) = t.world.orders.iter().find(|o| o.id == target) else {
                panic!("{}: the intended order {target} is in the world", t.id);
            };
            let same = |same_as: &dyn Fn(&desk::world::WorldOrder) -> bool| {
                own.iter().filter(|o| same_as(o)).count()
            };
            match f["ident"].as_str() {
                Some("amount") => assert_eq!(same(&|o| o.amount == order.amount), 1, "{}", t.id),
                Some("product") => assert_eq!(same(&|o| o.product == order.product), 1, "{}", t.id),
                Some("date") => assert_eq!(
                    same(&|o| o.created_at.date() == order.created_at.date()),
                    1,
                    "{}",
                    t.id
                ),
                Some("only_order") => assert_eq!(own.len(), 1, "{}", t.id),
                Some("form") => assert_eq!(t.order_id.as_deref(), Some(target)),
                _ => {}
            }
        }
    }
}
