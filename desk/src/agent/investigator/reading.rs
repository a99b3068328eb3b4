//! The reading the built-in investigator states with its proposal (`domain::reading`):
//! what it found in the customer's words — orders named and whose they are, the days,
//! products and amounts they point with, the kinds of request and where, words about
//! someone else, sentences aimed at the agent — and where the readings disagree, so a
//! reviewer sees why the case was read so. It reads the same tiers and lists the turn
//! reads; it decides nothing.

use policy_engine::RequestKind;
use serde_json::Value;

use super::candidates::results;
use crate::agent::ModelContext;
use domain::reading::{KindNamed, NamedOrder, Reading, Whose};
use domain::request::kinds_named;
use domain::request::pointers::CHARGE_POINTERS;
use domain::resolve::{self, Day};
use domain::structure::{fold_words, Place};

/// The reading of `ctx`'s messages for a proposal of `request` (with `others`, the
/// other readings the workflow weighs).
pub(super) fn reading_of(
    ctx: &ModelContext<'_>,
    request: RequestKind,
    others: &[RequestKind],
) -> Reading {
    let tiers = resolve::Tiers::of(ctx.inputs);
    let new = fold_words(&tiers.decisive.join("\n"));
    let places: [(Place, &[String]); 4] = [
        (Place::New, &tiers.decisive),
        (Place::Forwarded, &tiers.forwarded),
        (Place::Pasted, &tiers.pasted),
        (Place::Instruction, &tiers.instructions),
    ];
    let mut reading = Reading {
        orders: orders_named(ctx, &places),
        kinds: places[..2]
            .iter()
            .flat_map(|(place, texts)| {
                kinds_named(&texts.join("\n"))
                    .into_iter()
                    .map(|k| KindNamed {
                        kind: k.as_str().to_string(),
                        place: *place,
                    })
            })
            .collect(),
        days: resolve::mentioned_days(&new).into_iter().map(day).collect(),
        products: resolve::mentioned_products(&new)
            .into_iter()
            .map(String::from)
            .collect(),
        amounts: resolve::mentioned_amounts(&new)
            .iter()
            .map(|a| a.normalize().to_string())
            .collect(),
        charge_pointed_at: CHARGE_POINTERS
            .iter()
            .any(|p| resolve::contains_phrase(&new, p)),
        by_mistake: resolve::says_by_mistake(&new),
        someone_else: resolve::mentions_someone_else(&new)
            .into_iter()
            .map(String::from)
            .collect(),
        instructions: tiers
            .instructions
            .iter()
            .filter(|t| !t.trim().is_empty())
            .count(),
        disagreements: Vec::new(),
    };
    reading.disagreements = disagreements(&reading, request, others);
    reading
}

/// Orders named in each place: the customer's own by id, then references that are none
/// of theirs but read as order numbers (the workflow looks those up).
fn orders_named(ctx: &ModelContext<'_>, places: &[(Place, &[String]); 4]) -> Vec<NamedOrder> {
    let listed: Vec<String> = results(ctx.history, "list_orders")
        .flat_map(|e| {
            e.outcome.content["orders"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|o: Value| o["id"].as_str().map(String::from))
        .collect();
    let ids: Vec<&str> = listed.iter().map(String::as_str).collect();
    let mut out: Vec<NamedOrder> = Vec::new();
    for (place, texts) in places {
        let theirs = resolve::mentioned_ids(texts, &ids)
            .into_iter()
            .map(|id| (id, Whose::Theirs));
        let not_theirs = resolve::unmatched_references(texts, &ids)
            .into_iter()
            .filter(|r| r.named || (r.strong && !r.labelled_other))
            .map(|r| (r.text, Whose::NotTheirs));
        for (text, whose) in theirs.chain(not_theirs) {
            if !out.iter().any(|o| o.text == text) {
                out.push(NamedOrder {
                    text,
                    whose,
                    place: *place,
                });
            }
        }
    }
    out
}

/// A day as read, in words.
fn day(d: Day) -> String {
    match d {
        Day::Date {
            year: Some(y),
            month,
            day,
        } => format!("{y}-{month:02}-{day:02}"),
        Day::Date {
            year: None,
            month,
            day,
        } => format!("{month:02}-{day:02}"),
        Day::Weekday(w) => w.to_string().to_lowercase(),
        Day::LastWeeks(w) => format!("last week's {}", w.to_string().to_lowercase()),
        Day::DaysAgo(0) => "today".into(),
        Day::DaysAgo(1) => "yesterday".into(),
        Day::DaysAgo(n) => format!("{n} days ago"),
        Day::Within(from, to) => format!("{from} to {to} days ago"),
        Day::LastWeek => "last week".into(),
        Day::Month(0) => "this month".into(),
        Day::Month(1) => "last month".into(),
        Day::Month(n) => format!("{n} months ago"),
        Day::OfMonth(d) => format!("the {d} of the month"),
        Day::Named(named) => named.name().into(),
        Day::WeekBeforeLast => "the week before last".into(),
        Day::LastNight => "last night".into(),
    }
}

/// Where the reading found more than one way to read the words, said plainly.
fn disagreements(reading: &Reading, request: RequestKind, others: &[RequestKind]) -> Vec<String> {
    let mut out = Vec::new();
    if !others.is_empty() {
        let names: Vec<&str> = others.iter().map(|k| k.as_str()).collect();
        out.push(format!(
            "The words read as {} and as {}: the smallest refund any reading allows stands.",
            request.as_str(),
            names.join(", ")
        ));
    }
    let named = |whose: Whose, place: Place| {
        reading
            .orders
            .iter()
            .any(|o| o.whose == whose && o.place == place)
    };
    if named(Whose::Theirs, Place::New) && named(Whose::NotTheirs, Place::New) {
        out.push(
            "Names one of the customer's orders and a number that is none of theirs: the \
             case is decided on theirs, the other is looked up for security."
                .into(),
        );
    }
    if !named(Whose::Theirs, Place::New) && named(Whose::Theirs, Place::Instruction) {
        out.push(
            "An order of theirs is named only in a sentence aimed at the agent: weighed \
             only where nothing else singles an order out."
                .into(),
        );
    }
    let new_kinds: Vec<&str> = reading
        .kinds
        .iter()
        .filter(|k| k.place == Place::New)
        .map(|k| k.kind.as_str())
        .collect();
    if !new_kinds.is_empty() && !new_kinds.contains(&request.as_str()) {
        out.push(format!(
            "The words name {}; the records say {} (read from the charges).",
            new_kinds.join(", "),
            request.as_str()
        ));
    }
    out
}
