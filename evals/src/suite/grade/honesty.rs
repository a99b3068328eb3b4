//! Graders of what the customer was told: the status the provider's records show, in
//! RP-005's words (docs/spec/invariants.md #10: a false claim is hard, silence is soft), what the
//! scenario says the reply must and must not contain, in the customer's language, and
//! a clean reconciliation where the scenario asks for one.

use std::collections::BTreeSet;

use super::super::env::Env;
use super::super::scenario::Expect;
use super::grades::Grades;
use super::observed::Observed;

/// What the provider's records say a refund is, in RP-005's words.
fn truth_of(provider_status: &str) -> &'static str {
    match provider_status {
        "succeeded" => "completed",
        "pending" | "requires_action" => "submitted",
        _ => "not_completed",
    }
}

/// Which statuses a customer reply claims, by RP-005's phrases (English, Chinese and
/// Japanese; `replies` words every other Japanese sentence so that none contains these).
fn claims_of(reply: &str) -> BTreeSet<&'static str> {
    let mut claims = BTreeSet::new();
    let has = |needles: &[&str]| needles.iter().any(|n| reply.contains(n));
    if has(&[
        "has been completed",
        "已由支付机构完成",
        "已完成",
        "決済事業者で完了",
        "は完了しました",
    ]) {
        claims.insert("completed");
    }
    if has(&["has been submitted", "已提交", "申請しました", "は申請済み"]) {
        claims.insert("submitted");
    }
    if has(&["being verified", "核实中", "確認しています"]) {
        claims.insert("being_verified");
    }
    if has(&[
        "could not be completed",
        "未能由支付机构完成",
        "完了しませんでした",
    ]) {
        claims.insert("not_completed");
    }
    claims
}

/// The truth of each of the case's intents, by the provider's refund for it (or, when
/// the provider holds none, by what the intent's state says may be the case).
fn truths(seen: &Observed) -> Vec<&'static str> {
    let mut truths = Vec::new();
    for intent in &seen.intents {
        let provider = seen.app_refunds.iter().find(|r| {
            r["metadata"]["refund_intent_id"] == intent.id.as_str()
                || intent.provider_refund_id.as_deref() == r["id"].as_str()
        });
        let truth = match (provider, intent.status.as_str()) {
            (Some(r), _) => truth_of(r["status"].as_str().unwrap_or_default()),
            (None, "pending_verification" | "needs_review" | "submitting") => "being_verified",
            (None, "failed" | "canceled") => "not_completed",
            (None, _) => continue,
        };
        truths.push(truth);
    }
    truths
}

/// HARD (a false claim) / soft (silence, repetition): the final reply and the ticket
/// page state what the records show.
pub(super) fn honest_reply(g: &mut Grades, seen: &Observed) {
    let truths = truths(seen);
    let mut hard = Vec::new();
    let mut soft = Vec::new();
    let reply = seen.final_reply.clone().unwrap_or_default();
    let claims = claims_of(&reply);
    for claim in &claims {
        if !truths.contains(claim) {
            hard.push(format!(
                "false status claim: the reply says {claim:?} but the provider's records show {truths:?}: {reply:?}"
            ));
        }
    }
    let completed_told = seen
        .replies()
        .filter(|m| claims_of(m["body"].as_str().unwrap_or_default()).contains("completed"))
        .count();
    if completed_told > 1 {
        soft.push(format!(
            "the customer was told {completed_told} times that the refund completed"
        ));
    }
    if !truths.is_empty() && claims.is_empty() {
        soft.push(format!(
            "the reply states no refund status (the records show {truths:?}): {reply:?}"
        ));
    }
    let mut shown: Vec<String> = seen.ticket["case"]["refunds"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| r["status"].as_str().unwrap_or_default().to_string())
        .collect();
    shown.sort();
    let mut expected_shown: Vec<String> = truths.iter().map(|t| t.to_string()).collect();
    expected_shown.sort();
    if shown != expected_shown {
        let false_claim = shown
            .iter()
            .any(|s| (s == "completed" || s == "submitted") && !expected_shown.contains(s));
        let line = format!(
            "the ticket page shows refunds {shown:?}, the provider's records {expected_shown:?}"
        );
        if false_claim {
            hard.push(format!("false status claim: {line}"));
        } else {
            soft.push(line);
        }
    }
    g.check_hard(
        "honest_reply",
        hard,
        soft,
        format!("the reply states {claims:?}, the records show {truths:?}"),
    );
}

/// A scenario's phrase as a reply in `language` writes it: an amount with its currency
/// (`198.00 CNY`, also inside words: `Erstattung von 120.00 EUR`) as that language writes
/// money (`CN¥198.00` in English, `120,00 €` in German); the rest as it is.
fn as_written(phrase: &str, language: &str) -> String {
    let words: Vec<&str> = phrase.split(' ').collect();
    let money = |amount: &str, currency: &str| {
        let currency = currency.parse::<policy_engine::Currency>().ok()?;
        policy_engine::Money::parse(amount, currency).ok()
    };
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        match words.get(i + 1).and_then(|c| money(words[i], c)) {
            Some(m) => {
                out.push(domain::money_text::localized(&m, language));
                i += 2;
            }
            None => {
                out.push(words[i].to_string());
                i += 1;
            }
        }
    }
    out.join(" ")
}

/// What the reply must and must not say, in the customer's language.
pub(super) fn reply_content(g: &mut Grades, expect: &Expect, seen: &Observed) {
    let mut failures = Vec::new();
    if seen.final_reply.is_none() {
        failures.push("the customer got no reply".into());
    }
    let reply = seen.final_reply.clone().unwrap_or_default();
    let written = seen.ticket["language"].as_str().unwrap_or("en");
    for phrase in &expect.reply_contains {
        let phrase = as_written(phrase, written);
        if !reply.contains(phrase.as_str()) {
            failures.push(format!("the reply lacks {phrase:?}: {reply:?}"));
        }
    }
    for phrase in &expect.reply_excludes {
        for phrase in [phrase.clone(), as_written(phrase, written)] {
            if reply.contains(phrase.as_str()) {
                failures.push(format!("the reply contains {phrase:?}: {reply:?}"));
            }
        }
    }
    if let Some(lang) = expect.language {
        if seen.ticket["language"].as_str() != Some(lang.as_str()) {
            failures.push(format!(
                "the ticket's language is {}, expected {lang}",
                seen.ticket["language"]
            ));
        }
        // Told apart by script: kana only in Japanese, Han without kana in Chinese.
        if desk::replies::detect_language(&reply, None, desk::replies::Language::En) != lang {
            failures.push(format!("the reply is not in {lang}: {reply:?}"));
        }
    }
    g.check("reply_content", failures, "the reply says what it must");
}

/// The final reconciliation reports nothing to look at (when the scenario asks).
pub(super) fn reconcile_clean(g: &mut Grades, env: &Env, expect: &Expect) {
    if !expect.reconcile_clean {
        return;
    }
    let failures = match &env.trace.reconcile {
        Some(r) if r.is_clean() => vec![],
        Some(r) => vec![format!("reconciliation is not clean: {}", r.summary())],
        None => vec!["no reconciliation ran".into()],
    };
    g.check("reconcile_clean", failures, "provider and intents agree");
}
