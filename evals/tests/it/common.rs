//! What the replay tests share: the policies and their index built from `fixtures/`,
//! the hand-written history, the committed varied dev set, and the shadow report of the
//! built-in investigator over a set of tickets.

use std::sync::Arc;

use desk::agent::investigator::Investigator;
use policy_engine::PolicySet;
use rag_index::PolicyIndex;
use shadow::replay::{parse_history, HistoricalTicket};

pub struct Env {
    pub policies: PolicySet,
    pub index: Arc<PolicyIndex>,
    _dir: tempfile::TempDir,
}

pub fn env() -> Env {
    let fixtures = desk::config::default_fixtures_dir();
    let policies = desk::policies::load_policy_set(&fixtures.join("policies"))
        .expect("fixtures/policies loads");
    let dir = tempfile::tempdir().expect("a temp dir");
    let index = desk::policies::open_index(&dir.path().join("index"), &policies)
        .expect("the policy index builds");
    Env {
        policies,
        index: Arc::new(index),
        _dir: dir,
    }
}

/// `fixtures/history/tickets.jsonl`: the hand-written history.
pub fn history() -> Vec<HistoricalTicket> {
    parsed(&desk::config::default_fixtures_dir().join("history/tickets.jsonl"))
}

/// The committed dev set: `generate-history --style varied --seed 2026 --count 1800`.
pub const VARIED_DEV: &str = "../evals/history/varied-dev.jsonl";
pub const VARIED_SEED: u64 = 2026;

pub fn varied_dev() -> Vec<HistoricalTicket> {
    parsed(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(VARIED_DEV))
}

/// A committed history file, every line parsed.
pub fn parsed(path: &std::path::Path) -> Vec<HistoricalTicket> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{} is committed: {e}", path.display()));
    let (tickets, errors) = parse_history(&text);
    assert!(
        errors.is_empty(),
        "bad lines in {}: {errors:?}",
        path.display()
    );
    tickets
}

/// The shadow report of the built-in investigator on `tickets`.
pub async fn shadow_report(
    env: &Env,
    tickets: &[HistoricalTicket],
) -> backtest::shadow::ShadowReport {
    backtest::shadow::run(
        &Investigator,
        &env.policies,
        &env.index,
        tickets,
        vec![],
        |_, _| {},
    )
    .await
}
