//! Which order a ticket is about, resolved against the customer's own records rather
//! than against a pattern of what order ids look like (docs/spec/domain.md:
//! ids are opaque strings chosen by the shop).
//!
//! Each message is first split by place (`structure`): the customer's new words
//! decide, a forwarded receipt or pasted statement line supports, the quoted earlier
//! thread is only noted, signatures and instructions are not read at all. Order of
//! evidence, strongest first:
//! 1. the order the customer picked in the ticket form (`form`), when it is theirs;
//! 2. their own order ids written in the new words, else in what they forwarded or
//!    pasted (`message`), in every form `ids` reads — spaced, broken over a line, with
//!    any dash, thousands separators, inside a URL, any case and width; the longest id
//!    wins where ids are prefixes of one another;
//! 3. secondary evidence they wrote (`message`): product names, amounts, currencies,
//!    explicit dates, in the ten languages we answer in;
//! 4. the billing records (`records`): their only order, or the one order whose charges
//!    show the problem described;
//! 5. otherwise no order, and [`Resolution::missing`] says what to ask (RP-002 §4).
//!    Several orders that could fit are asked about, never guessed between.
//!
//! Reference-like tokens that match none of their orders never stop the records: they
//! are noted ([`Resolution::unmatched`], the named ones first) for the workflow to look
//! up among all orders (RP-007: someone else's order goes to security; the model is
//! never trusted with that). When the customer *names* as an order something that is
//! none of theirs, only records showing the problem decide (one order with the
//! duplicated charge, the hold…): their only order or a product they name is not taken,
//! since that would guess between a typo and someone else's order, and what the
//! customer sees must not tell the two apart (RP-007).
//!
//! Pure functions over plain data: no I/O, no clock, deterministic, and bounded (every
//! scan is linear in the text, each id tried over at most its own length). Nothing a
//! customer writes is obeyed here; text only selects among records that exist.

mod evidence;
mod ids;
mod matching;
mod normalise;
mod product_words;
mod reference_words;
mod references;
mod said_days;
mod someone_else;
mod tiers;
mod when;

use policy_engine::RequestKind;
use serde::{Deserialize, Serialize};

use crate::structure;

pub use evidence::{mentioned_amounts, mentioned_products, says_by_mistake};
pub use matching::{
    near_pair, repeat_purchase, repeats, shows_problem, ChargeSummary, OrderCandidate,
    REPEAT_WITHIN,
};
pub use normalise::{contains_phrase, fold};
pub use references::{
    lookup_spellings, mentioned_ids, mentioned_ids_counted, named_ids, unmatched_references,
    Reference, MAX_REFERENCES,
};
pub use said_days::mentioned_days;
pub use someone_else::mentions_someone_else;
pub use tiers::Tiers;
use tiers::TIERS_REMEMBERED;
pub use when::{Day, Moment};

use matching::{by_secondary_evidence, Secondary};

/// Where the order of a decision came from, recorded with the case so a reviewer sees
/// why this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderSource {
    /// Picked by the customer in the ticket form.
    Form,
    /// Written by the customer (an id, or a product, amount or date that singles it out).
    Message,
    /// The billing records single it out (the only order, the one showing the problem).
    Records,
    /// Named by the model and found to be another customer's order (RP-007); the model
    /// never chooses among the customer's own orders (never guess).
    Agent,
}

impl OrderSource {
    pub fn as_str(self) -> &'static str {
        match self {
            OrderSource::Form => "form",
            OrderSource::Message => "message",
            OrderSource::Records => "records",
            OrderSource::Agent => "agent",
        }
    }

    /// The customer named it (form or words), rather than the records showing it.
    pub fn named_by_customer(self) -> bool {
        matches!(self, OrderSource::Form | OrderSource::Message)
    }
}

/// Where the request kind of a proposal came from, recorded next to [`OrderSource`] so a
/// reviewer sees why the case was read as this kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestSource {
    /// The customer's words name the kind.
    Text,
    /// The words left it unclear or the order's charges contradict them, and the
    /// charges fit exactly one kind (`request::records`).
    Records,
}

impl RequestSource {
    pub fn as_str(self) -> &'static str {
        match self {
            RequestSource::Text => "text",
            RequestSource::Records => "records",
        }
    }
}

/// What resolution needs to know about the ticket.
pub struct ResolveInput<'a> {
    /// Every customer message, oldest first, as written (split by place here).
    pub messages: &'a [String],
    /// The order picked in the ticket form.
    pub form_order: Option<&'a str>,
    pub request: RequestKind,
    pub orders: &'a [OrderCandidate],
    /// When the ticket was opened and the customer's region: the frame the days they
    /// name are counted in (`when`). Without it only written dates with a year narrow.
    pub moment: Option<Moment>,
}

/// The outcome of resolution.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Resolution {
    pub order_id: Option<String>,
    pub source: Option<OrderSource>,
    /// Reference-like tokens matching none of the customer's orders: noted, the named
    /// ones first, at most [`MAX_REFERENCES`]. They never stop the records deciding.
    pub unmatched: Vec<Reference>,
    /// Orders whose charges must be read before the records can settle it.
    pub needs_charges: Vec<String>,
    /// What the customer must tell us when no order could be chosen.
    pub missing: Option<&'static str>,
    /// The number the customer's words name as an order that is none of theirs, as
    /// written: the workflow looks it up (another customer's is escalated, RP-007) and
    /// otherwise asks about it as named (RP-002 §4), never deciding on their own records.
    pub named_not_theirs: Option<String>,
    /// The earlier order the chosen one repeats, when the customer bought one thing
    /// twice (`repeat_purchase`) or named two orders in a duplicate complaint: the
    /// engine decides whether that is an accidental repeat purchase, a cancellation of
    /// the later order, or two purchases (RP-001 §1 and §4.1, RP-002).
    pub repeat_of: Option<String>,
}

/// Resolves the order of a ticket against the customer's orders (see the module
/// comment for the order of evidence).
pub fn resolve(input: &ResolveInput<'_>) -> Resolution {
    let ids: Vec<&str> = input.orders.iter().map(|o| o.id.as_str()).collect();
    if let Some(form) = input.form_order.filter(|f| ids.contains(f)) {
        let duplicate = input.request == RequestKind::DuplicateCharge;
        return Resolution {
            order_id: Some(form.to_string()),
            source: Some(OrderSource::Form),
            repeat_of: duplicate
                .then(|| repeated_earlier(input.orders, Some(form)))
                .flatten(),
            ..Resolution::default()
        };
    }
    let reading = reading_of(input.messages, &ids);
    let moment = input.moment.map(|m| m.written_in(input.messages));
    let Reading {
        unmatched,
        evidence,
        named_in,
        ..
    } = &*reading;
    let unmatched = unmatched.clone();
    if let Some(mentioned) = named_in.iter().find(|m| !m.is_empty()) {
        let named: Vec<&OrderCandidate> = input
            .orders
            .iter()
            .filter(|o| mentioned.contains(&o.id))
            .collect();
        // Two of their orders named with "by mistake" are one thing bought twice, read as
        // a duplicate complaint whatever kind the words name.
        let request = match reading.by_mistake && named.len() >= 2 {
            true => RequestKind::DuplicateCharge,
            false => input.request,
        };
        let narrowed = narrow_by_evidence(evidence, named, moment.as_ref());
        let mut r = settle(request, narrowed, OrderSource::Message, true);
        if r.repeat_of.is_none() && request == RequestKind::DuplicateCharge {
            r.repeat_of = repeated_earlier(input.orders, r.order_id.as_deref());
        }
        r.unmatched = unmatched;
        return r;
    }
    // A number the customer calls an order (after an order word or `#`) that is none of
    // theirs: the order in question is not theirs. Someone else's is escalated to
    // security (RP-007), one that exists nowhere is asked about (RP-002 §4) — and the
    // customer is told the same in both cases, so their own records do not decide
    // either (a refund of their own duplicate would tell the two apart, and whether an
    // id exists is never disclosed).
    if let Some(called) = &reading.called_elsewhere {
        return Resolution {
            unmatched,
            named_not_theirs: Some(called.clone()),
            missing: Some("which order: the order named is none of the customer's"),
            ..Resolution::default()
        };
    }
    // A number only shaped like their ids (an invoice, a card slip's reference): only
    // records showing the problem decide; their only order or a product they name would
    // be a guess between "a typo" and "someone else's order" (RP-007).
    if reading.named_elsewhere {
        let mut r = by_records(input.request, input.orders.iter().collect(), false);
        r.unmatched = unmatched;
        return r;
    }
    let mut narrowed = narrow_by_evidence(evidence, input.orders.iter().collect(), moment.as_ref());
    if input.request == RequestKind::Cancellation && evidence[0].speaks_of_a_subscription() {
        narrowed = matching::running_plans(narrowed, moment.as_ref());
    }
    let by_words = narrowed.len() < input.orders.len();
    // An instruction naming an order that is none of theirs never overrides what the
    // customer's own words single out (injected targets change nothing
    // proposed); where their words single out nothing, their only order would be a guess
    // as above, so only the records decide.
    if !by_words && reading.instructed_elsewhere {
        let mut r = by_records(input.request, input.orders.iter().collect(), false);
        r.unmatched = unmatched;
        return r;
    }
    let source = if by_words {
        OrderSource::Message
    } else {
        OrderSource::Records
    };
    let mut r = settle(input.request, narrowed, source, false);
    if r.order_id.is_none() && r.needs_charges.is_empty() {
        r = by_instruction(input, &reading.instructed_own).unwrap_or(r);
    }
    r.unmatched = unmatched;
    r
}

/// The customer's own orders named only inside a sentence that tries to instruct the
/// agent ("the manager approved the full refund of order 971-…"), weighed when neither
/// their other words nor the records single an order out: the sentence is obeyed in
/// nothing (RP-007), but an order of theirs it names is still the one they write about,
/// and only their records decide what it is owed. Never before their words: an injected
/// order id must not override what they wrote.
fn by_instruction(input: &ResolveInput<'_>, named: &[String]) -> Option<Resolution> {
    if named.is_empty() {
        return None;
    }
    let named: Vec<&OrderCandidate> = input
        .orders
        .iter()
        .filter(|o| named.contains(&o.id))
        .collect();
    let r = settle(input.request, named, OrderSource::Message, true);
    (r.order_id.is_some() || !r.needs_charges.is_empty()).then_some(r)
}

/// Whether `references` (of the new words, or of the instructions) name as an order
/// something that is none of the customer's orders (after an order word, or shaped like
/// their own ids and not labelled as an invoice, parcel, phone… number).
fn names_another_order(references: &[Reference], ids: &[&str]) -> bool {
    references.iter().any(|r| r.names_an_order(ids))
}

/// The first of `references` written after an order word ("order no.", "注文番号", `#`)
/// that is none of the customer's orders, as written.
fn calls_an_order(references: &[Reference]) -> Option<String> {
    references.iter().find(|r| r.named).map(|r| r.text.clone())
}

/// Beside words about another person's account or order ("meine Frau hat mit ihrem
/// Konto bestellt (bc79ed20)"), a code of letters and digits that is none of the
/// customer's orders and not labelled as another kind of number: that person's order,
/// as written — the customer calls it theirs, whatever word they ordered it with.
fn someone_elses_code(references: &[Reference], folded: &str) -> Option<String> {
    if mentions_someone_else(folded).is_empty() {
        return None;
    }
    references
        .iter()
        .find(|r| r.strong && !r.labelled_other)
        .map(|r| r.text.clone())
}

/// What resolution reads in a conversation's words about a customer's order ids; the
/// records (the candidates' products, amounts and charges) are weighed after it.
struct Reading {
    /// References matching none of the ids ([`noted_references`]).
    unmatched: Vec<Reference>,
    /// What the new words and the supporting text say besides ids
    /// ([`narrow_by_evidence`]).
    evidence: [Secondary; 2],
    /// Own ids in the new words, a forwarded message, and named in a pasted line.
    named_in: [Vec<String>; 3],
    /// What the new words call an order (after an order word) that is none of the ids,
    /// as written.
    called_elsewhere: Option<String>,
    /// The new words name as an order something none of the ids is (called one, or
    /// shaped like their ids).
    named_elsewhere: bool,
    /// An instruction does.
    instructed_elsewhere: bool,
    /// Own ids named only in instructions ([`by_instruction`]).
    instructed_own: Vec<String>,
    /// The new words say something was bought by mistake.
    by_mistake: bool,
}

impl Reading {
    /// Each tier is read once for the ids (their skeletons made once, `OwnIds`): the
    /// references of the new words and of the instructions serve both what is noted
    /// and whether an order elsewhere is named.
    fn of(messages: &[String], ids: &[&str]) -> Reading {
        let tiers = Tiers::of(messages);
        let own = references::OwnIds::new(ids);
        let decisive = own.unmatched(&tiers.decisive);
        let instructions = own.unmatched(&tiers.instructions);
        let named_elsewhere = names_another_order(&decisive, ids);
        let instructed_elsewhere = names_another_order(&instructions, ids);
        let supporting = own.unmatched(&tiers.supporting);
        let new_words = structure::fold_words(&tiers.decisive.join("\n"));
        let called_elsewhere =
            calls_an_order(&decisive).or_else(|| someone_elses_code(&decisive, &new_words));
        Reading {
            unmatched: noted_references([decisive, instructions, supporting]),
            by_mistake: evidence::says_by_mistake(&new_words),
            evidence: [
                Secondary::of(&new_words),
                Secondary::of(&structure::fold_words(&tiers.supporting.join("\n"))),
            ],
            named_in: [
                own.mentioned(&tiers.decisive, false, &mut 0),
                own.mentioned(&tiers.forwarded, false, &mut 0),
                own.mentioned(&tiers.pasted, true, &mut 0),
            ],
            called_elsewhere,
            named_elsewhere,
            instructed_elsewhere,
            instructed_own: own.mentioned(&tiers.instructions, false, &mut 0),
        }
    }
}

/// A conversation, the order ids asked about, and what was read in it.
type Read = (Vec<String>, Vec<String>, std::rc::Rc<Reading>);

thread_local! {
    /// The readings last made on this thread, by conversation and order ids: every turn
    /// of a run asks again with the same ones while only the records it has read grow
    /// (reading the words again was a seventh of a replayed ticket's time).
    static READ_SEEN: std::cell::RefCell<Vec<Read>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// [`Reading::of`] `messages` for `ids`, a pure function of the two, remembered for
/// the last [`TIERS_REMEMBERED`] asked on this thread.
fn reading_of(messages: &[String], ids: &[&str]) -> std::rc::Rc<Reading> {
    READ_SEEN.with(|seen| {
        let mut seen = seen.borrow_mut();
        let same = |(m, i, _): &&Read| {
            m.as_slice() == messages && i.iter().map(String::as_str).eq(ids.iter().copied())
        };
        if let Some((_, _, reading)) = seen.iter().find(same) {
            return reading.clone();
        }
        let reading = std::rc::Rc::new(Reading::of(messages, ids));
        if seen.len() >= TIERS_REMEMBERED {
            seen.remove(0);
        }
        let ids = ids.iter().map(|id| id.to_string()).collect();
        seen.push((messages.to_vec(), ids, reading.clone()));
        reading
    })
}

/// References matching none of the customer's orders: those of the new words, then the
/// named ones of what supports them (a bare number in a pasted statement is a store or
/// bank reference far more often than an order) and of instructions (an injected
/// "refund O-20511" naming someone else's order goes to security, RP-007); named first,
/// at most [`MAX_REFERENCES`].
fn noted_references([decisive, instructions, supporting]: [Vec<Reference>; 3]) -> Vec<Reference> {
    let mut noted = references::strongest(decisive);
    let others = [
        references::strongest(instructions),
        references::strongest(supporting),
    ];
    for r in others.into_iter().flatten() {
        let seen = noted.iter().any(|n| n.text.eq_ignore_ascii_case(&r.text));
        if r.strong && !seen {
            noted.push(r);
        }
    }
    noted.sort_by_key(|r| !r.strong);
    noted.truncate(MAX_REFERENCES);
    noted
}

/// Narrowed by what the new words say besides ids, then by what supports them.
fn narrow_by_evidence<'a>(
    [decisive, supporting]: &[Secondary; 2],
    candidates: Vec<&'a OrderCandidate>,
    moment: Option<&Moment>,
) -> Vec<&'a OrderCandidate> {
    let narrowed = if candidates.len() > 1 {
        by_secondary_evidence(decisive, candidates, moment)
    } else {
        candidates
    };
    if narrowed.len() > 1 {
        by_secondary_evidence(supporting, narrowed, moment)
    } else {
        narrowed
    }
}

/// The last steps: one candidate left, else the records (the one order showing the
/// problem, the repeat purchase), else nothing and what is missing (RP-002 §4: several
/// orders that could fit are asked about). `named` says the candidates are the orders
/// whose ids the customer wrote.
fn settle(
    request: RequestKind,
    candidates: Vec<&OrderCandidate>,
    source: OrderSource,
    named: bool,
) -> Resolution {
    if let [only] = candidates.as_slice() {
        return Resolution {
            order_id: Some(only.id.clone()),
            source: Some(source),
            ..Resolution::default()
        };
    }
    by_records(request, candidates, named)
}

/// The one order whose charges show the problem described, or the later order of one
/// thing bought twice (with the order it repeats, for the engine: RP-001 §1 and §4.1);
/// else nothing and what is missing. Two orders the customer named are such a pair
/// whatever the words call it ("cancel the second one", or a "blocked" page read as a
/// hold), and two they named in a duplicate complaint are weighed as one (the engine
/// says whether they are one purchase bought twice or two purchases).
fn by_records(request: RequestKind, candidates: Vec<&OrderCandidate>, named: bool) -> Resolution {
    let unresolved = Resolution {
        missing: Some(if candidates.is_empty() {
            "an order: the customer has none on record"
        } else {
            "which order the request is about: neither the messages nor the records single one of the customer's orders out"
        }),
        ..Resolution::default()
    };
    let pairs_only = matches!(request, RequestKind::Cancellation | RequestKind::Unclear);
    if candidates.is_empty() || (pairs_only && !named) {
        return unresolved;
    }
    let unread: Vec<String> = candidates
        .iter()
        .filter(|o| o.charges.is_none())
        .map(|o| o.id.clone())
        .collect();
    if !unread.is_empty() {
        return Resolution {
            needs_charges: unread,
            ..Resolution::default()
        };
    }
    let source = if named {
        OrderSource::Message
    } else {
        OrderSource::Records
    };
    let repeat = |(later, earlier): (&OrderCandidate, &OrderCandidate)| Resolution {
        order_id: Some(later.id.clone()),
        source: Some(source),
        repeat_of: Some(earlier.id.clone()),
        ..Resolution::default()
    };
    if pairs_only {
        return repeat_purchase(&candidates).map_or(unresolved, repeat);
    }
    let showing: Vec<&OrderCandidate> = candidates
        .iter()
        .copied()
        .filter(|o| shows_problem(request, o))
        .collect();
    match showing.as_slice() {
        [only] => Resolution {
            order_id: Some(only.id.clone()),
            source: Some(OrderSource::Records),
            ..Resolution::default()
        },
        [] => {
            let duplicate = request == RequestKind::DuplicateCharge;
            let pair = repeat_purchase(&candidates).filter(|_| named || duplicate);
            let other = match named {
                true => named_pair(&candidates),
                false => near_pair(&candidates),
            };
            pair.or_else(|| other.filter(|_| duplicate))
                .map_or(unresolved, repeat)
        }
        _ => unresolved,
    }
}

/// "Order B is a duplicate of my first order": the earlier order the one named repeats
/// (the same purchase, paid, within [`REPEAT_WITHIN`]) when its own charges show no
/// duplicate. Both orders' charges must have been read.
fn repeated_earlier(orders: &[OrderCandidate], named: Option<&str>) -> Option<String> {
    let order = orders.iter().find(|o| Some(o.id.as_str()) == named)?;
    if order.charges.is_none() || shows_problem(RequestKind::DuplicateCharge, order) {
        return None;
    }
    let paid = |o: &OrderCandidate| {
        o.charges
            .as_deref()
            .is_some_and(|c| c.iter().any(|c| c.took_money))
    };
    orders
        .iter()
        .filter(|e| paid(e) && repeats(order, e))
        .max_by_key(|e| (e.placed_at, &e.id))
        .map(|e| e.id.clone())
}

/// Two orders the customer named in a duplicate complaint, later first.
fn named_pair<'a>(
    candidates: &[&'a OrderCandidate],
) -> Option<(&'a OrderCandidate, &'a OrderCandidate)> {
    let [a, b] = candidates else {
        return None;
    };
    let later_first = (a.placed_at, &a.id) > (b.placed_at, &b.id);
    Some(if later_first { (*a, *b) } else { (*b, *a) })
}

#[cfg(test)]
mod tests;
