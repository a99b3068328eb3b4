//! The graders: what one run of a scenario did, read back from the app's API views, the
//! run log and the provider's ledger, and checked against the success contract aspect
//! by aspect — the outcome (`outcome`), the evidence behind it (`evidence`), the money
//! (`money`, hard) and what the customer was told (`honesty`, hard for a false claim).
//!
//! A hard violation fails its run whatever else went right. Graders read; they never
//! write to the app or the provider.

mod evidence;
mod grades;
mod honesty;
mod money;
mod observed;
mod outcome;

use grades::Grades;
use observed::Observed;

use super::env::Env;
use super::report::AttemptResult;
use super::scenario::Scenario;

/// Grades one run, in a fixed order (the report lists the graders in it).
pub(crate) async fn grade(env: &Env, scenario: &Scenario) -> anyhow::Result<AttemptResult> {
    let seen = Observed::gather(env).await?;
    let expect = &scenario.expect;
    let mut g = Grades::default();
    outcome::scenario_ran_as_written(&mut g, env, scenario, &seen);
    outcome::outcome(&mut g, expect, &seen);
    outcome::customer_and_order(&mut g, env, scenario, &seen);
    outcome::decision_refunds(&mut g, expect, &seen);
    outcome::provider_refunds(&mut g, expect, &seen);
    evidence::evidence_traceable(&mut g, &seen);
    evidence::harness_events(&mut g, expect, &seen);
    money::approval_before_money(&mut g, env, &seen).await?;
    money::one_refund_per_logical_refund(&mut g, env, &seen);
    honesty::honest_reply(&mut g, &seen);
    honesty::reply_content(&mut g, expect, &seen);
    honesty::reconcile_clean(&mut g, env, expect);
    let passed = g.hard.is_empty() && g.graders.iter().all(|r| r.passed);
    Ok(AttemptResult {
        passed,
        graders: g.graders,
        hard_violations: g.hard,
        duration_ms: 0,
        final_status: Some(seen.status),
        reason_code: seen.reason,
        final_reply: seen.final_reply,
        model: String::new(),
        versions: String::new(),
    })
}
