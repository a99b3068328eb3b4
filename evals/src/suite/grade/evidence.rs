//! Graders of the evidence: every fact traceable to a tool record of the run's log
//! (docs/spec/invariants.md #8), and the harness handling the scenario expects in that log.

use super::super::scenario::Expect;
use super::grades::Grades;
use super::observed::Observed;

/// Each tool intent has exactly one result; each piece of proposal evidence resolves to
/// a tool result holding its record; every rule cites `doc@version#section`.
pub(super) fn evidence_traceable(g: &mut Grades, seen: &Observed) {
    let (events, case) = (&seen.events, &seen.case);
    let mut failures = Vec::new();
    for intent in events.iter().filter(|e| e["kind"] == "tool_intent") {
        let results = events
            .iter()
            .filter(|e| e["kind"] == "tool_result" && e["call_id"] == intent["call_id"])
            .count();
        if results != 1 {
            failures.push(format!(
                "tool call {} has {results} results",
                intent["call_id"]
            ));
        }
    }
    let rejected = events.iter().any(|e| e["kind"] == "evidence_rejected");
    let fingerprinted = case["fingerprint"].is_string() || !seen.intents.is_empty();
    let mut cited = 0;
    for ev in case["proposal"]["evidence"]
        .as_array()
        .into_iter()
        .flatten()
    {
        cited += 1;
        let record = ev["record_id"].as_str().unwrap_or_default();
        let resolved = events.iter().any(|e| {
            e["kind"] == "tool_result"
                && e["call_id"] == ev["call_id"]
                && e["payload"].to_string().contains(record)
        });
        // Invented evidence is fine once the workflow rejected it, unless it still
        // reached approval.
        if !resolved && (fingerprinted || !rejected) {
            failures.push(format!(
                "evidence {} / {record} resolves to no tool result{}",
                ev["call_id"],
                if fingerprinted {
                    " and still reached approval"
                } else {
                    ""
                }
            ));
        }
    }
    if case["decision"]["outcome"] == "allow" && cited == 0 {
        failures.push("a refund was decided with no evidence cited".into());
    }
    for rule in case["decision"]["rules"].as_array().into_iter().flatten() {
        let citation = rule["citation"].as_str().unwrap_or_default();
        if !(citation.contains('@') && citation.contains('#')) {
            failures.push(format!(
                "rule citation {citation:?} is not doc@version#section"
            ));
        }
    }
    g.check(
        "evidence_traceable",
        failures,
        format!("{cited} evidence reference(s) resolve to tool results"),
    );
}

/// The run-log events and exhausted budget the scenario expects (when it names any).
pub(super) fn harness_events(g: &mut Grades, expect: &Expect, seen: &Observed) {
    if expect.events_include.is_empty() && expect.budget_exhausted.is_none() {
        return;
    }
    let events = &seen.events;
    let mut failures = Vec::new();
    for kind in &expect.events_include {
        if !events.iter().any(|e| e["kind"] == kind.as_str()) {
            failures.push(format!("the run log has no {kind} event"));
        }
    }
    if let Some(budget) = &expect.budget_exhausted {
        let got = events
            .iter()
            .find(|e| e["kind"] == "budget_exhausted")
            .map(|e| e["payload"]["budget"].clone());
        if got.as_ref().and_then(|b| b.as_str()) != Some(budget.as_str()) {
            failures.push(format!("budget exhausted: {got:?}, expected {budget}"));
        }
    }
    g.check(
        "harness_events",
        failures,
        "the run log shows the expected handling",
    );
}
