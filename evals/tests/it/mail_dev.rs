//! The built-in investigator on mail written by others: `evals/history/mail-dev/`, 222
//! tickets written by hand, one at a time, without reference to the product's code, in
//! thirteen languages, labelled by the written policy alone (its README). Development
//! data: the reading is improved from the misses of its read half, never from the other.
//!
//! The split is `scripts/mail-dev`'s: tickets grouped by the first two letters of their
//! language, ordered by the SHA-256 of their id, every fourth (0, 4, 8, …) is the
//! **unread** half. Only figures of it are ever printed, never a ticket.
//!
//! Also here: no ticket of any set — this corpus, the hand-written history, the varied
//! dev set and its unseen twin — is proposed more than its label refunds
//! (docs/spec/domain.md, "Never more than the text supports").

use std::collections::{BTreeMap, BTreeSet};

use backtest::shadow::ShadowTicket;
use rust_decimal::Decimal;
use sha2::{Digest, Sha256};
use shadow::replay::HistoricalTicket;

use super::common::{env, history, parsed, shadow_report, varied_dev};

const CORPUS: &str = "../evals/history/mail-dev/tickets.jsonl";

/// The unseen-seed twin of the varied dev set (`history::TWIN_SEED`).
const TWIN_SEED: u64 = 34_034;

/// A ticket's language (first two letters of its `lang`) and kind (`case`), fields the
/// product ignores.
struct Meta {
    lang: String,
    kind: String,
}

fn corpus() -> (Vec<HistoricalTicket>, BTreeMap<String, Meta>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(CORPUS);
    let text = std::fs::read_to_string(&path).expect("the mail-dev corpus is committed");
    let meta = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("one ticket a line");
            let field = |name: &str| v[name].as_str().unwrap_or_default().to_string();
            let lang: String = field("lang").chars().take(2).collect();
            (
                field("id"),
                Meta {
                    lang,
                    kind: field("case"),
                },
            )
        })
        .collect();
    (parsed(&path), meta)
}

/// The unread half: per language, ids ordered by their SHA-256, every fourth.
fn unread(meta: &BTreeMap<String, Meta>) -> BTreeSet<String> {
    let mut by_lang: BTreeMap<&str, Vec<(String, &String)>> = BTreeMap::new();
    for (id, m) in meta {
        let hash = hex::encode(Sha256::digest(id.as_bytes()));
        by_lang.entry(&m.lang).or_default().push((hash, id));
    }
    by_lang
        .into_values()
        .flat_map(|mut ids| {
            ids.sort();
            ids.into_iter().step_by(4).map(|(_, id)| id.clone())
        })
        .collect()
}

/// (outcome agree, exact agree, total).
type Tally = (usize, usize, usize);

fn add(t: &mut Tally, row: &ShadowTicket) {
    t.0 += usize::from(row.agree);
    t.1 += usize::from(row.exact);
    t.2 += 1;
}

fn percent(agree: usize, total: usize) -> f64 {
    100.0 * agree as f64 / total.max(1) as f64
}

fn table(title: &str, rows: &BTreeMap<String, Tally>) -> String {
    let mut out = format!("{title}\n");
    for (key, (o, e, n)) in rows {
        out += &format!(
            "  {key:<28} {n:>3}  outcome {:>5.1}%  exact {:>5.1}%\n",
            percent(*o, *n),
            percent(*e, *n)
        );
    }
    out
}

/// The figures of both halves; the read half's misses.
struct Figures {
    read: Tally,
    unread: Tally,
    by_lang: [BTreeMap<String, Tally>; 2],
    by_kind: BTreeMap<String, Tally>,
    all_by_lang: BTreeMap<String, Tally>,
    misses: Vec<String>,
}

async fn figures() -> Figures {
    let (tickets, meta) = corpus();
    let unread = unread(&meta);
    let report = shadow_report(&env(), &tickets).await;
    let mut f = Figures {
        read: (0, 0, 0),
        unread: (0, 0, 0),
        by_lang: [BTreeMap::new(), BTreeMap::new()],
        by_kind: BTreeMap::new(),
        all_by_lang: BTreeMap::new(),
        misses: Vec::new(),
    };
    for row in &report.tickets {
        let m = &meta[&row.id];
        let hidden = unread.contains(&row.id);
        add(if hidden { &mut f.unread } else { &mut f.read }, row);
        add(
            f.by_lang[usize::from(hidden)]
                .entry(m.lang.clone())
                .or_default(),
            row,
        );
        add(f.all_by_lang.entry(m.lang.clone()).or_default(), row);
        if !hidden {
            add(f.by_kind.entry(m.kind.clone()).or_default(), row);
            if !row.exact {
                f.misses.push(format!(
                    "{} [{} {}]: human {:?} {:?}, agent {:?} {:?}",
                    row.id,
                    m.lang,
                    m.kind,
                    row.human.outcome,
                    row.human.refunds,
                    row.agent.outcome,
                    row.agent.refunds
                ));
            }
        }
    }
    f
}

#[tokio::test]
async fn mail_written_by_others_is_decided_as_the_written_policy_decides_it() {
    let f = figures().await;
    let all = (
        f.read.0 + f.unread.0,
        f.read.1 + f.unread.1,
        f.read.2 + f.unread.2,
    );
    let line = |name: &str, t: Tally| {
        format!(
            "{name}: {} tickets, outcome {:.1}% ({}), exact {:.1}% ({})",
            t.2,
            percent(t.0, t.2),
            t.0,
            percent(t.1, t.2),
            t.1
        )
    };
    println!(
        "{}\n{}\n{}",
        line("read", f.read),
        line("unread", f.unread),
        line("all", all)
    );
    println!("{}", table("read half, per language", &f.by_lang[0]));
    println!("{}", table("read half, per kind", &f.by_kind));
    println!("{}", table("unread half, per language", &f.by_lang[1]));
    let misses = f.misses.join("\n");
    assert!(
        percent(all.0, all.2) >= 98.0 && percent(all.1, all.2) >= 97.0,
        "{misses}"
    );
    assert!(percent(f.read.0, f.read.2) >= 98.0, "{misses}");
    for (lang, t) in f.all_by_lang.iter().filter(|(_, t)| t.2 >= 10) {
        assert!(percent(t.0, t.2) >= 95.0, "{lang}: {t:?}\n{misses}");
    }
}

#[tokio::test]
async fn the_unread_half_of_mail_dev_is_measured_without_being_shown() {
    // Only figures: the unread half is never tuned against.
    let f = figures().await;
    let (read, unread) = (percent(f.read.0, f.read.2), percent(f.unread.0, f.unread.2));
    println!(
        "unread half: outcome {unread:.1}% of {} (read half {read:.1}%), exact {:.1}%",
        f.unread.2,
        percent(f.unread.1, f.unread.2)
    );
    assert!(unread >= UNREAD_FLOOR, "{unread:.1}%");
}

/// The unread half as first measured after the reading was improved from the read half
/// (95.1%; 88.5% before), less one ticket's margin: a floor, not a target to tune toward.
const UNREAD_FLOOR: f64 = 93.0;

/// Refunds by charge.
fn by_charge(refunds: &[domain::verdict::RefundRecord]) -> BTreeMap<&str, Decimal> {
    let mut out = BTreeMap::new();
    for r in refunds {
        let amount: Decimal = r.amount.parse().expect("a refund amount is a decimal");
        *out.entry(r.charge_id.as_str()).or_default() += amount;
    }
    out
}

/// The tickets of a set whose agent refunds more on some charge than the label does:
/// ids where `shown` allows (a never-read half or twin is counted, never shown).
async fn proposed_beyond_the_label(
    tickets: &[HistoricalTicket],
    shown: impl Fn(&str) -> bool,
) -> (usize, Vec<String>) {
    let report = shadow_report(&env(), tickets).await;
    let beyond: Vec<&ShadowTicket> = report
        .tickets
        .iter()
        .filter(|row| {
            let label = by_charge(&row.human.refunds);
            by_charge(&row.agent.refunds)
                .iter()
                .any(|(charge, amount)| label.get(charge).is_none_or(|l| amount > l))
        })
        .collect();
    let listed = beyond
        .iter()
        .filter(|row| shown(&row.id))
        .map(|row| {
            format!(
                "{}: human {:?}, agent {:?}",
                row.id, row.human.refunds, row.agent.refunds
            )
        })
        .collect();
    (beyond.len(), listed)
}

/// A set of tickets: its name, its tickets, and which of its ids may be shown.
type Set<'a> = (&'a str, Vec<HistoricalTicket>, &'a dyn Fn(&str) -> bool);

#[tokio::test]
async fn no_ticket_of_any_set_is_proposed_more_than_its_label_refunds() {
    let (mail_dev, meta) = corpus();
    let hidden = unread(&meta);
    let varied = varied_dev();
    let twin = refund_evals::generate::varied_history(TWIN_SEED, varied.len());
    let sets: [Set; 4] = [
        ("mail-dev", mail_dev, &|id| !hidden.contains(id)),
        ("fixtures/history", history(), &|_| true),
        ("varied dev", varied, &|_| true),
        ("varied twin", twin, &|_| false),
    ];
    for (name, tickets, shown) in sets {
        let (count, listed) = proposed_beyond_the_label(&tickets, shown).await;
        println!(
            "{name}: {} tickets, {count} proposed beyond the label",
            tickets.len()
        );
        assert_eq!(count, 0, "{name}:\n{}", listed.join("\n"));
    }
}
