//! The scenario eval suite (`refund-evals eval`, also `refund-agent eval`): end-to-end scenarios as data
//! (`evals/scenarios/*.json`), each run in a fresh, isolated environment and graded
//! against the success contract by deterministic graders.
//!
//! One scenario is a small billing world (docs/spec/interfaces.md format), a conversation (customer,
//! messages, optional order), optional fault rules for the payments mock (payments.md
//! §6.4), optional harness disturbances (a misbehaving scripted model, a worker killed
//! at its Nth model call or in the middle of a refund submission), a timeline of staff
//! actions (approve as agent or supervisor, with the current or a stale fingerprint,
//! reject, refunds made in the provider's dashboard, webhook settlement…) and the
//! expected outcome. [`run_suite`] builds, per scenario, a temp SQLite database, the real
//! payments mock on `127.0.0.1:0` (its own temp directory), a `ManualClock` set to the
//! scenario's date, and the policy index — built once per suite and shared — loads the
//! world into both, drives the conversation through the HTTP router (no socket) and the
//! worker (`worker::drain`), then grades:
//!
//! - the case status, reason code, customer and order, and the refunds decided (holds,
//!   settled charges and existing refunds told apart);
//! - every fact traceable: each piece of proposal evidence resolves to a tool result of
//!   the run's log that holds the record; each tool intent has exactly one result;
//! - **hard**: no money without a valid approval — every refund the provider holds that
//!   the scenario did not make itself names an intent whose approval was given, and none
//!   existed before the first approval (ledger snapshots taken right before each one);
//! - **hard**: at most one provider refund per logical refund (per intent and key), and
//!   never more refunded than captured;
//! - **hard** (a false claim) / soft (a missing one): the final reply and the customer's
//!   ticket state the status the provider's records show (RP-005 words).
//!
//! A hard violation fails its scenario whatever else went right. The modules: `scenario`
//! (the format), `env` (one scenario's environment), `actions` (its timeline), `grade`
//! (the graders, by aspect), `report` (JSON and HTML). The report
//! ([`EvalReport`]) serialises to JSON; [`html`] renders it self-contained; [`write`]
//! puts both in a directory. For a nondeterministic model each scenario runs `k` times
//! and passes only if all `k` runs pass (pass^k).
//!
//! What it deliberately does not do: touch any shared database, provider or index
//! directory (everything lives in a temp directory removed afterwards), write to the
//! app's tables behind its back (every disturbance goes through the API, the worker, the
//! mock's admin API or a dropped future, as a crash would), or sleep to wait for work
//! (it drains the worker; only webhook delivery, which happens on the mock's own task,
//! is polled with a bound).

mod actions;
mod env;
mod grade;
mod report;
mod scenario;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use desk::agent::investigator::Investigator;
use desk::agent::Model;
use desk::config::LlmConfig;

use env::{Env, Shared};
pub use report::{html, write, AttemptResult, EvalReport, GraderResult, ScenarioResult};
pub use scenario::{
    Action, Conversation, Disturbances, Expect, ExpectedProviderRefund, ExpectedRefund,
    FingerprintChoice, Role, Scenario, StatusSet,
};

/// Which model investigates the scenarios that do not name a scripted one.
#[derive(Debug, Clone)]
pub enum ModelChoice {
    /// The built-in deterministic investigator: every scenario runs once.
    BuiltIn,
    /// An OpenAI-compatible model server: nondeterministic, so each scenario runs `k`
    /// times and passes only if every run passes.
    Llm(LlmConfig),
}

impl ModelChoice {
    fn label(&self) -> String {
        match self {
            ModelChoice::BuiltIn => "builtin-investigator".into(),
            ModelChoice::Llm(c) => format!("llm:{}@{}", c.model, c.base_url),
        }
    }

    fn deterministic(&self) -> bool {
        matches!(self, ModelChoice::BuiltIn)
    }

    fn build(&self) -> anyhow::Result<Arc<dyn Model>> {
        Ok(match self {
            ModelChoice::BuiltIn => Arc::new(Investigator),
            ModelChoice::Llm(llm) => Arc::new(
                desk::agent::llm::LlmModel::new(
                    &llm.base_url,
                    llm.api_key.clone(),
                    llm.model.clone(),
                    llm.timeout,
                )?
                .with_budget(
                    desk::agent::context::ContextBudget::for_context_window(llm.context_tokens),
                ),
            ),
        })
    }
}

/// Runs every scenario of `scenarios_dir` (`*.json`, one scenario each, or `*.jsonl`,
/// one per line) against the policies of `fixtures_dir/policies`, reporting
/// `progress(done, total)` after each scenario.
pub async fn run_suite(
    scenarios_dir: &Path,
    fixtures_dir: &Path,
    model: ModelChoice,
    k: usize,
    progress: impl FnMut(usize, usize),
) -> anyhow::Result<EvalReport> {
    let scenarios = load_scenarios(scenarios_dir)?;
    run_scenarios(&scenarios, fixtures_dir, model, k, progress).await
}

/// Reads and validates the scenarios of a directory, sorted by name. Names are unique.
pub fn load_scenarios(dir: &Path) -> anyhow::Result<Vec<Scenario>> {
    let mut scenarios = Vec::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading scenarios from {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    paths.sort();
    for path in paths {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or_default();
        if ext != "json" && ext != "jsonl" {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let texts: Vec<(usize, &str)> = if ext == "jsonl" {
            text.lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
                .map(|(i, l)| (i + 1, l))
                .collect()
        } else {
            vec![(1, text.as_str())]
        };
        for (line, text) in texts {
            let scenario: Scenario = serde_json::from_str(text)
                .with_context(|| format!("{}:{line}: not a scenario", path.display()))?;
            scenario
                .validate()
                .with_context(|| format!("{}:{line}", path.display()))?;
            scenarios.push(scenario);
        }
    }
    scenarios.sort_by(|a, b| a.name.cmp(&b.name));
    let mut names = BTreeSet::new();
    for s in &scenarios {
        if !names.insert(s.name.clone()) {
            bail!("two scenarios are named {}", s.name);
        }
    }
    Ok(scenarios)
}

/// Runs the given scenarios (see [`run_suite`]).
pub async fn run_scenarios(
    scenarios: &[Scenario],
    fixtures_dir: &Path,
    model: ModelChoice,
    k: usize,
    mut progress: impl FnMut(usize, usize),
) -> anyhow::Result<EvalReport> {
    let started = Instant::now();
    let shared = Shared::build(fixtures_dir).await?;
    let mut results = Vec::new();
    for (i, scenario) in scenarios.iter().enumerate() {
        // A scripted model plays the same script every time; only the suite's model may
        // vary between runs.
        let runs = if scenario.model.is_some() || model.deterministic() {
            1
        } else {
            k.max(1)
        };
        let scenario_started = Instant::now();
        let mut attempts = Vec::new();
        for _ in 0..runs {
            attempts.push(run_attempt(&shared, scenario, &model).await);
        }
        let passes = attempts.iter().filter(|a| a.passed).count();
        let shown = attempts
            .iter()
            .find(|a| !a.passed)
            .or(attempts.first())
            .cloned()
            .expect("at least one attempt ran");
        results.push(ScenarioResult {
            name: scenario.name.clone(),
            description: scenario.description.clone(),
            tags: scenario.tags.clone(),
            passed: passes == attempts.len(),
            runs: attempts.len(),
            passes,
            graders: shown.graders.clone(),
            hard_violations: shown.hard_violations.clone(),
            duration_ms: scenario_started.elapsed().as_millis() as u64,
            attempts,
        });
        progress(i + 1, scenarios.len());
    }
    Ok(EvalReport::from_results(
        model.label(),
        k,
        results,
        started.elapsed(),
    ))
}

// How one scenario runs.

/// How long one scenario may take before it counts as hung.
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(90);

async fn run_attempt(shared: &Shared, scenario: &Scenario, choice: &ModelChoice) -> AttemptResult {
    let started = Instant::now();
    let model = match &scenario.model {
        Some(name) => scenario::scripted_model(name),
        None => choice.build(),
    };
    let model_name = model.as_ref().map(|m| m.name()).unwrap_or_default();
    let versions = model
        .as_ref()
        .map(|m| desk::agent::versions(m.as_ref()).label())
        .unwrap_or_default();
    let outcome = match model {
        Ok(model) => {
            match tokio::time::timeout(SCENARIO_TIMEOUT, drive(shared, scenario, model)).await {
                Ok(result) => result,
                Err(_) => Err(anyhow!(
                    "the scenario did not finish within {SCENARIO_TIMEOUT:?}"
                )),
            }
        }
        Err(e) => Err(e),
    };
    let mut attempt = match outcome {
        Ok(attempt) => attempt,
        Err(e) => AttemptResult {
            passed: false,
            graders: vec![GraderResult {
                name: "scenario_ran".into(),
                passed: false,
                message: format!("{e:#}"),
            }],
            hard_violations: Vec::new(),
            duration_ms: 0,
            final_status: None,
            reason_code: None,
            final_reply: None,
            model: String::new(),
            versions: String::new(),
        },
    };
    attempt.duration_ms = started.elapsed().as_millis() as u64;
    attempt.model = model_name;
    attempt.versions = versions;
    attempt
}

async fn drive(
    shared: &Shared,
    scenario: &Scenario,
    model: Arc<dyn Model>,
) -> anyhow::Result<AttemptResult> {
    let mut env = Env::start(shared, scenario, model).await?;
    env.install_faults(&scenario.faults).await?;
    env.open_ticket(scenario).await?;
    for action in &scenario.actions {
        env.apply(action, scenario)
            .await
            .with_context(|| format!("action {action:?}"))?;
    }
    if scenario.settle {
        env.drain(&env.state.clone()).await?;
        env.trace.reconcile = Some(
            desk::reconcile::run(env.state.reconciler())
                .await
                .map_err(|e| anyhow!("reconciliation failed: {e}"))?,
        );
        env.drain(&env.state.clone()).await?;
    }
    let result = grade::grade(&env, scenario).await;
    let Env {
        mock,
        webhook_server,
        ..
    } = env;
    drop(webhook_server);
    mock.shutdown().await;
    result
}
