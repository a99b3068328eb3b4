//! `import history --format zendesk|csv FILE --out HISTORY.jsonl` (docs/spec/history.md):
//! a helpdesk's past tickets turned into the history format `shadow` replays
//! (docs/spec/interfaces.md "Files"), each with the billing world as it stood at the
//! ticket's creation and the human outcome inferred from what the team did.
//!
//! One ticket at a time: the export is read on a blocking thread (`source`) and handed
//! over a small bounded channel; each ticket's requester is matched to a customer by
//! email, the customer's records are read (`asof::fetch`, kept for a few hundred
//! customers), the world rebuilt as of the ticket (`asof::world_as_of`), the outcome
//! inferred with its evidence (`infer`), and the line written. Memory holds one ticket,
//! the users' emails and each requester's ticket times — never the export.
//!
//! Nothing is half-written: lines go to `OUT.partial`, renamed to `OUT` only at the end;
//! a ticket that cannot be read (no comments, no time, not JSON) is a per-ticket error,
//! and any error means no `OUT` unless `--skip-invalid`. Tickets whose requester matches
//! no customer are counted, listed in the summary and written to `OUT.unmatched.jsonl`.
//!
//! What it deliberately does not do: decide anything (the agent's side is `shadow`'s), or
//! call the provider more than once per customer and charge while that customer's
//! records are kept.

pub mod asof;
pub mod infer;
pub mod source;

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::json;
use sqlx::Row;

use desk::onboarding::records::email_key;
use desk::replies::MAX_MESSAGE_CHARS;
use payments_adapter::PaymentsClient;
use shadow::replay::{HistoricalMessage, HistoricalTicket, HumanDecision};
use shop_import::rows::RowError;
use source::{HistoryFormat, Pass, SourceTicket, Users};
use store::Db;

/// At most this many bad tickets and unmatched ones are named in the summary.
const NAMED: usize = 100;
/// `human.decided_by` of an imported line: the outcome is the inference's, not a
/// person's (the person, when the helpdesk names one, is `human.assignee`).
pub const INFERRED_BY: &str = "inferred from the records";
/// Customers whose records are kept between their tickets.
const KEPT_CUSTOMERS: usize = 500;

/// What `import history` is asked to do.
#[derive(Debug, Clone)]
pub struct HistoryOptions {
    pub format: HistoryFormat,
    pub file: PathBuf,
    /// A Zendesk users export, when users are not in `file`.
    pub users: Option<PathBuf>,
    pub out: PathBuf,
    pub window_days: u32,
    pub tag_map: infer::TagMap,
    /// Write the readable tickets even when some cannot be read.
    pub skip_invalid: bool,
}

/// Why nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("{0}")]
    File(String),
    #[error(
        "{count} tickets cannot be read; nothing was written (--skip-invalid writes the rest)"
    )]
    Tickets { errors: Vec<RowError>, count: u64 },
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// A ticket not written because its requester is no customer of ours.
#[derive(Debug, Clone, Serialize)]
pub struct Unmatched {
    pub ticket_id: String,
    pub requester_email: Option<String>,
    pub why: &'static str,
}

/// What `import history` did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct HistoryReport {
    pub tickets: u64,
    pub written: u64,
    /// Per inferred outcome.
    pub outcomes: BTreeMap<&'static str, u64>,
    /// Per inference rule (`refund_in_window`, `tag`, `no_refund_in_window`).
    pub rules: BTreeMap<&'static str, u64>,
    pub unmatched: u64,
    /// The first unmatched tickets; all are in `unmatched_file`.
    pub unmatched_tickets: Vec<Unmatched>,
    pub unmatched_file: Option<PathBuf>,
    pub invalid: u64,
    pub invalid_tickets: Vec<RowError>,
    /// Messages cut to the length a ticket message may have.
    pub truncated_messages: u64,
    pub out: Option<PathBuf>,
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Each requester's ticket times (unix ms, sorted), by a hash of the email as customers
/// are matched (`email_hash`): eight bytes a requester instead of the email.
type TicketTimes = HashMap<u64, Vec<i64>>;

/// A fixed-key hash of the matching form of an email; in-process only.
fn email_hash(email: &str) -> u64 {
    id_hash(&email_key(email))
}

/// A fixed-key hash; in-process only (never stored, never compared across processes).
fn id_hash(text: &str) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one(text)
}

/// Reads the users (Zendesk) and every requester's ticket times: the first pass.
fn first_pass(opts: &HistoryOptions) -> Result<(Users, TicketTimes, u64), HistoryError> {
    let io = |e: std::io::Error| HistoryError::File(format!("cannot read: {e}"));
    let mut users = Users::new();
    if opts.format == HistoryFormat::Zendesk {
        for file in std::iter::once(&opts.file).chain(opts.users.as_ref()) {
            source::scan(file, opts.format, Pass::Users(&mut users)).map_err(io)?;
        }
    }
    let mut times = TicketTimes::new();
    let mut count = 0;
    let mut visit = |t: Result<SourceTicket, RowError>| {
        count += 1;
        if let Ok(t) = t {
            if let Some(email) = &t.requester_email {
                times
                    .entry(email_hash(email))
                    .or_default()
                    .push(desk::clock::to_ms(t.created_at));
            }
        }
    };
    source::scan(&opts.file, opts.format, Pass::Tickets(&users, &mut visit)).map_err(io)?;
    for list in times.values_mut() {
        list.sort_unstable();
    }
    Ok((users, times, count))
}

/// Runs the import. `progress(done, total)` after each ticket.
pub async fn import_history(
    db: &Db,
    payments: &PaymentsClient,
    opts: HistoryOptions,
    progress: &mut (dyn FnMut(u64, u64) + Send),
) -> Result<HistoryReport, HistoryError> {
    let opts = Arc::new(opts);
    let first = opts.clone();
    let (users, times, total) = tokio::task::spawn_blocking(move || first_pass(&first))
        .await
        .map_err(anyhow::Error::from)??;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<SourceTicket, RowError>>(64);
    let reader_opts = opts.clone();
    let reader = tokio::task::spawn_blocking(move || {
        let mut visit = |t| {
            // The receiver gone means the import stopped: the rest is not needed.
            let _ = tx.blocking_send(t);
        };
        source::scan(
            &reader_opts.file,
            reader_opts.format,
            Pass::Tickets(&users, &mut visit),
        )
    });
    let mut writer = Writer::create(&opts)?;
    let mut report = HistoryReport {
        tickets: total,
        ..HistoryReport::default()
    };
    let mut cache = Cache::default();
    // Ticket ids seen, hashed (eight bytes a ticket): a repeated id is a bad ticket, as
    // `shadow` would refuse the second line.
    let mut seen = std::collections::HashSet::new();
    let mut done = 0;
    while let Some(ticket) = rx.recv().await {
        done += 1;
        let ticket = ticket.and_then(|t| match seen.insert(id_hash(&t.id)) {
            true => Ok(t),
            false => Err(RowError {
                line: t.line,
                id: Some(t.id.clone()),
                message: format!("ticket id {} appears earlier in the export", t.id),
            }),
        });
        match ticket {
            Ok(t) => {
                let line =
                    one_ticket(db, payments, &opts, &times, &mut cache, &t, &mut report).await?;
                writer.write(line, &t, &mut report)?;
            }
            Err(e) => {
                report.invalid += 1;
                if report.invalid_tickets.len() < NAMED {
                    report.invalid_tickets.push(e);
                }
            }
        }
        progress(done, total);
    }
    reader
        .await
        .map_err(anyhow::Error::from)?
        .map_err(|e| HistoryError::File(format!("cannot read: {e}")))?;
    writer.finish(&opts, report)
}

/// The output files, written under `.partial` names until the end.
struct Writer {
    out: std::io::BufWriter<std::fs::File>,
    unmatched: std::io::BufWriter<std::fs::File>,
}

impl Writer {
    fn create(opts: &HistoryOptions) -> Result<Writer, HistoryError> {
        let create = |path: PathBuf| {
            std::fs::File::create(&path)
                .map(std::io::BufWriter::new)
                .map_err(|e| HistoryError::File(format!("cannot write {}: {e}", path.display())))
        };
        Ok(Writer {
            out: create(with_suffix(&opts.out, ".partial"))?,
            unmatched: create(with_suffix(&opts.out, ".unmatched.jsonl.partial"))?,
        })
    }

    /// Writes a ticket's line, or its unmatched line.
    fn write(
        &mut self,
        line: Result<String, Unmatched>,
        _t: &SourceTicket,
        report: &mut HistoryReport,
    ) -> Result<(), HistoryError> {
        let io = |e: std::io::Error| HistoryError::Internal(e.into());
        match line {
            Ok(text) => {
                writeln!(self.out, "{text}").map_err(io)?;
                report.written += 1;
            }
            Err(unmatched) => {
                let text = serde_json::to_string(&unmatched).map_err(anyhow::Error::from)?;
                writeln!(self.unmatched, "{text}").map_err(io)?;
                report.unmatched += 1;
                if report.unmatched_tickets.len() < NAMED {
                    report.unmatched_tickets.push(unmatched);
                }
            }
        }
        Ok(())
    }

    /// Renames the files into place, or removes them when a ticket could not be read.
    fn finish(
        self,
        opts: &HistoryOptions,
        mut report: HistoryReport,
    ) -> Result<HistoryReport, HistoryError> {
        let io = |e: std::io::Error| HistoryError::Internal(e.into());
        let (out, unmatched) = (
            with_suffix(&opts.out, ".partial"),
            with_suffix(&opts.out, ".unmatched.jsonl.partial"),
        );
        drop(self.out.into_inner().map_err(|e| io(e.into_error()))?);
        drop(
            self.unmatched
                .into_inner()
                .map_err(|e| io(e.into_error()))?,
        );
        if report.invalid > 0 && !opts.skip_invalid {
            let _ = std::fs::remove_file(&out);
            let _ = std::fs::remove_file(&unmatched);
            return Err(HistoryError::Tickets {
                errors: report.invalid_tickets,
                count: report.invalid,
            });
        }
        std::fs::rename(&out, &opts.out).map_err(io)?;
        let unmatched_final = with_suffix(&opts.out, ".unmatched.jsonl");
        std::fs::rename(&unmatched, &unmatched_final).map_err(io)?;
        report.out = Some(opts.out.clone());
        report.unmatched_file = Some(unmatched_final);
        Ok(report)
    }
}

/// Customers' records kept between their tickets (cleared when full: bounded).
#[derive(Default)]
struct Cache(HashMap<String, Arc<asof::Records>>);

impl Cache {
    async fn get(
        &mut self,
        db: &Db,
        payments: &PaymentsClient,
        customer_id: &str,
    ) -> anyhow::Result<Arc<asof::Records>> {
        if let Some(r) = self.0.get(customer_id) {
            return Ok(r.clone());
        }
        if self.0.len() >= KEPT_CUSTOMERS {
            self.0.clear();
        }
        let records = Arc::new(asof::fetch(db, payments, customer_id).await?);
        self.0.insert(customer_id.to_string(), records.clone());
        Ok(records)
    }
}

/// The customer a requester's email names: exactly one.
async fn customer_by_email(db: &Db, email: &str) -> anyhow::Result<Result<String, &'static str>> {
    let rows = sqlx::query("SELECT id FROM customers WHERE lower(email) = $1 LIMIT 2")
        .bind(email_key(email))
        .fetch_all(db.reader())
        .await?;
    Ok(match rows.as_slice() {
        [one] => Ok(one.try_get("id")?),
        [] => Err("no customer has this email"),
        _ => Err("several customers have this email"),
    })
}

/// One ticket's history line, or why it matches no customer.
async fn one_ticket(
    db: &Db,
    payments: &PaymentsClient,
    opts: &HistoryOptions,
    times: &TicketTimes,
    cache: &mut Cache,
    t: &SourceTicket,
    report: &mut HistoryReport,
) -> Result<Result<String, Unmatched>, HistoryError> {
    let unmatched = |why| Unmatched {
        ticket_id: t.id.clone(),
        requester_email: t.requester_email.clone(),
        why,
    };
    let Some(email) = &t.requester_email else {
        return Ok(Err(unmatched("the ticket names no requester email")));
    };
    let customer_id = match customer_by_email(db, email).await? {
        Ok(id) => id,
        Err(why) => return Ok(Err(unmatched(why))),
    };
    let records = cache.get(db, payments, &customer_id).await?;
    let created_ms = desk::clock::to_ms(t.created_at);
    let next = times
        .get(&email_hash(email))
        .and_then(|list| list.iter().find(|at| **at > created_ms))
        .map(|at| desk::clock::from_ms(*at));
    let inference = infer::infer(
        t.created_at,
        next,
        &asof::refunds_seen(&records),
        &t.tags,
        &opts.tag_map,
        opts.window_days,
    );
    *report
        .outcomes
        .entry(inference.outcome.as_str())
        .or_default() += 1;
    *report.rules.entry(inference.evidence.rule).or_default() += 1;
    let ticket = historical(t, customer_id, &records, inference, opts.format, report);
    Ok(Ok(
        serde_json::to_string(&ticket).map_err(anyhow::Error::from)?
    ))
}

/// The history line: messages (the subject leading the first customer message when the
/// body does not repeat it; each cut to the message limit), the world then, and the
/// inferred decision with its evidence.
fn historical(
    t: &SourceTicket,
    customer_id: String,
    records: &asof::Records,
    inference: infer::Inference,
    format: HistoryFormat,
    report: &mut HistoryReport,
) -> HistoricalTicket {
    let mut subject_used = false;
    let messages = t
        .messages
        .iter()
        .map(|m| {
            let mut text = m.text.trim().to_string();
            if m.from_customer && !subject_used {
                subject_used = true;
                if let Some(subject) = t.subject.as_deref().filter(|s| !text.contains(s.trim())) {
                    text = format!("{}\n\n{text}", subject.trim());
                }
            }
            if text.chars().count() > MAX_MESSAGE_CHARS {
                report.truncated_messages += 1;
                text = text.chars().take(MAX_MESSAGE_CHARS).collect();
            }
            HistoricalMessage {
                from: if m.from_customer { "customer" } else { "agent" }.to_string(),
                text,
                at: m.at,
                extra: BTreeMap::new(),
            }
        })
        .collect();
    let mut extra = BTreeMap::new();
    extra.insert("source".to_string(), json!(format));
    extra.insert("tags".to_string(), json!(t.tags));
    if let Some(subject) = &t.subject {
        extra.insert("subject".to_string(), json!(subject));
    }
    let mut human_extra = BTreeMap::new();
    human_extra.insert("inference".to_string(), json!(inference.evidence));
    if let Some(assignee) = &t.assignee {
        human_extra.insert("assignee".to_string(), json!(assignee));
    }
    HistoricalTicket {
        id: t.id.clone(),
        created_at: t.created_at,
        customer_id,
        order_id: None,
        messages,
        world: asof::world_as_of(records, t.created_at),
        human: HumanDecision {
            outcome: inference.outcome,
            reason: inference.reason,
            refunds: inference.refunds,
            decided_by: INFERRED_BY.to_string(),
            extra: human_extra,
        },
        extra,
    }
}
