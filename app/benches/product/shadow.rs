//! Shadow replay (`shadow`).

use super::*;

pub(crate) async fn phase_shadow(
    settings: &Settings,
    policies: &policy_engine::PolicySet,
    index: &Arc<rag_index::PolicyIndex>,
    report: &mut Report,
) -> anyhow::Result<()> {
    let mut curve = Vec::new();
    for &n in &settings.shadow {
        eprintln!("[pure] shadow replay of {n} generated tickets");
        let started = Instant::now();
        // `BENCH_SEED` names another generator seed: a history the code was never tuned to.
        let seed = env_usize("BENCH_SEED", 2026) as u64;
        let tickets = refund_evals::generate::history(seed, n);
        let generated = started.elapsed();
        let text = refund_evals::generate::to_jsonl(&tickets);
        drop(tickets);
        let started = Instant::now();
        let (tickets, bad) = ::shadow::replay::parse_history(&text);
        let parsed = started.elapsed();
        if !bad.is_empty() {
            bail!(
                "generated history has bad lines: {:?}",
                &bad[..bad.len().min(3)]
            );
        }
        let started = Instant::now();
        let shadow =
            app::shadow::run(&Investigator, policies, index, &tickets, bad, |_, _| {}).await;
        let replayed = started.elapsed();
        let per_second = rate(n, replayed);
        let parse_rate = rate(n, parsed);
        report.add(
            format!("shadow replay, {n} generated tickets (built-in investigator)"),
            format!(
                "{} ({:.1} s)",
                fmt_rate(per_second, "tickets/s"),
                replayed.as_secs_f64()
            ),
            format!(
                "{} (parsing the same {:.1} MB file)",
                fmt_rate(parse_rate, "tickets/s"),
                text.len() as f64 / 1e6
            ),
            format!("{:.3}", per_second / parse_rate),
            "> 1,000 tickets/s",
            Some(per_second > 1_000.0),
        );
        report.note(format!(
            "shadow {n}: generated in {:.1} s; agreement with the policy-correct labels: outcome {:.1}%, exact {:.1}%; bench process VmHWM {:.0} MiB",
            generated.as_secs_f64(),
            shadow.outcome_agreement * 100.0,
            shadow.exact_agreement * 100.0,
            proc_memory("self", "VmHWM:").unwrap_or(0.0)
        ));
        curve.push((n, per_second));
    }
    if let [(a, ra), .., (b, rb)] = curve.as_slice() {
        report.add(
            format!("shadow replay growth {a} → {b} tickets"),
            format!("{:.2}× the rate", rb / ra),
            format!("{} at {a}", fmt_rate(*ra, "tickets/s")),
            format!("{:.2}", rb / ra),
            "flat (≈ 1.0)",
            None,
        );
    }
    Ok(())
}
