//! Policy decisions and policy search (`decisions`, `search`).

use super::*;

pub(crate) async fn facts_mix(index: &Arc<rag_index::PolicyIndex>) -> anyhow::Result<Vec<Facts>> {
    let mut mix = Vec::new();
    for ticket in refund_evals::generate::history(91, 1_000) {
        let investigation = ::shadow::replay::investigate(&Investigator, index, &ticket).await?;
        if let Some(facts) = investigation.facts {
            mix.push(facts);
        }
    }
    Ok(mix)
}

pub(crate) fn phase_decisions(
    policies: &policy_engine::PolicySet,
    mix: &[Facts],
    report: &mut Report,
) {
    eprintln!("[pure] policy decisions ({} facts in the mix)", mix.len());
    let time_loop = |f: &dyn Fn(&Facts)| {
        for facts in mix.iter().take(200) {
            f(facts);
        }
        let started = Instant::now();
        let mut done = 0usize;
        while started.elapsed() < Duration::from_secs(2) {
            for facts in mix {
                f(facts);
            }
            done += mix.len();
        }
        rate(done, started.elapsed())
    };
    let decisions = time_loop(&|facts| {
        std::hint::black_box(policy_engine::decide(std::hint::black_box(facts), policies));
    });
    let hashes = time_loop(&|facts| {
        std::hint::black_box(desk::workflow::evidence_hash(std::hint::black_box(facts)));
    });
    report.add(
        "policy decisions/s, one core (`policy_engine::decide`, generated mix)",
        format!(
            "{} ({:.2} µs each)",
            fmt_rate(decisions, "decisions/s"),
            1e6 / decisions
        ),
        format!(
            "{} (`evidence_hash`: JSON + SHA-256 of the same facts)",
            fmt_rate(hashes, "hashes/s")
        ),
        format!("{:.2}", decisions / hashes),
        "> 200,000/s per core",
        Some(decisions > 200_000.0),
    );
}

pub(crate) fn search_timings(
    index: &rag_index::PolicyIndex,
    queries: &[rag_index::SearchQuery],
) -> anyhow::Result<Vec<Duration>> {
    for q in queries.iter().take(300) {
        index.search(q)?;
    }
    let mut timings = Vec::with_capacity(queries.len());
    for q in queries {
        let t = Instant::now();
        std::hint::black_box(index.search(q)?);
        timings.push(t.elapsed());
    }
    timings.sort_unstable();
    Ok(timings)
}

/// The six orders of three paths. Each query runs all three, the next query in the next
/// order, so each path runs right after each other path equally often: one that ran
/// just before leaves the stored documents and postings of the same query in the caches
/// (20-30 µs of a 200 µs search when the two return the same sections).
pub(crate) const ORDERS: [[usize; 3]; 6] = [
    [0, 1, 2],
    [0, 2, 1],
    [1, 0, 2],
    [1, 2, 0],
    [2, 0, 1],
    [2, 1, 0],
];

/// Each query three times in a row — our search (0), the search before pruning,
/// filtering every match (1), and raw tantivy (2), in each of the [`ORDERS`] in turn —
/// after a warm-up of all three; the sorted timings of each.
pub(crate) fn interleaved_search_timings(
    index: &rag_index::PolicyIndex,
    queries: &[rag_index::SearchQuery],
) -> anyhow::Result<(Vec<Duration>, Vec<Duration>, Vec<Duration>)> {
    for q in queries.iter().take(300) {
        index.search(q)?;
        index.search_filtering_every_match(q)?;
        index.raw_tantivy_search(&q.text, q.limit)?;
    }
    let (mut ours, mut before, mut raw) = (Vec::new(), Vec::new(), Vec::new());
    for (i, q) in queries.iter().enumerate() {
        for path in ORDERS[i % ORDERS.len()] {
            let t = Instant::now();
            match path {
                0 => {
                    std::hint::black_box(index.search(q)?);
                    ours.push(t.elapsed());
                }
                1 => {
                    std::hint::black_box(index.search_filtering_every_match(q)?);
                    before.push(t.elapsed());
                }
                _ => {
                    std::hint::black_box(index.raw_tantivy_search(&q.text, q.limit)?);
                    raw.push(t.elapsed());
                }
            }
        }
    }
    ours.sort_unstable();
    before.sort_unstable();
    raw.sort_unstable();
    Ok((ours, before, raw))
}

pub(crate) fn phase_search(
    settings: &Settings,
    real_index: &rag_index::PolicyIndex,
    report: &mut Report,
) -> anyhow::Result<()> {
    eprintln!("[pure] policy search at {} sections", settings.sections);
    let seed = 20_260_701;
    let documents = rag_index::generate::documents(seed, settings.sections);
    let dir = tempfile::tempdir()?;
    let started = Instant::now();
    let index = rag_index::PolicyIndex::open_or_build(dir.path(), &documents)?;
    let built = started.elapsed();
    let queries = rag_index::generate::queries(seed, 3_000);
    // Ours, the path before pruning and raw tantivy on the same index, interleaved
    // query by query, so a pause of this busy machine lands on all alike.
    let (big, before, raw) = interleaved_search_timings(&index, &queries)?;
    let small = search_timings(real_index, &queries)?;
    let (p50, p99) = (percentile_us(&big, 50.0), percentile_us(&big, 99.0));
    let (r50, r99) = (percentile_us(&raw, 50.0), percentile_us(&raw, 99.0));
    let (o50, o99) = (percentile_us(&before, 50.0), percentile_us(&before, 99.0));
    let (b50, b99) = (percentile_us(&small, 50.0), percentile_us(&small, 99.0));
    report.add(
        format!(
            "policy search p50 / p99 at {} sections ({} queries)",
            index.section_count(),
            queries.len()
        ),
        format!("{} / {}", fmt_us(p50), fmt_us(p99)),
        format!(
            "{} / {} raw tantivy, same index and terms, no filters",
            fmt_us(r50),
            fmt_us(r99)
        ),
        format!("{:.2}× (p99)", p99 / r99.max(1e-9)),
        "p99 ≤ 2× raw tantivy",
        Some(p99 <= 2.0 * r99),
    );
    report.note(format!(
        "policy search: before pruning (every match filtered, same run) {} / {} (p50 / p99); ours / before {:.2}× p50, {:.2}× p99",
        fmt_us(o50),
        fmt_us(o99),
        p50 / o50.max(1e-9),
        p99 / o99.max(1e-9)
    ));
    report.note(format!(
        "policy search: the real policy index ({} sections) answers the same queries in {} / {} (p50 / p99)",
        real_index.section_count(),
        fmt_us(b50),
        fmt_us(b99)
    ));
    report.note(format!(
        "policy search: building the {}-section index took {:.1} s ({:.0} sections/s)",
        index.section_count(),
        built.as_secs_f64(),
        index.section_count() as f64 / built.as_secs_f64()
    ));
    Ok(())
}
