//! Importing customers (`import`): the release binary as a second process, 400,000 rows against 100,000.

use super::*;

pub(crate) fn customer_file(path: &Path, n: usize) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(out, "id,name,email,region,provider_customer_id")?;
    for i in 0..n {
        let region = ["CN", "US", "EU", "JP"][i % 4];
        writeln!(out, "SHOP-{i:07},Customer {i},c{i}@shop.example,{region},")?;
    }
    out.flush()?;
    Ok(())
}

/// One import: the process's wall time (start-up, file, checks, write) and its peak
/// memory in MiB (`VmHWM`, which the import's summary reports).
pub(crate) struct ImportRun {
    pub(crate) secs: f64,
    pub(crate) peak_mib: f64,
}

/// The release `refund-agent import customers FILE` of `n` rows into a fresh database.
/// `offline`: no provider is asked; else every customer is looked up by email at the
/// embedded payments mock (which has none of them: each stays unlinked).
pub(crate) async fn import_run(
    backend: &Backend,
    n: usize,
    offline: bool,
) -> anyhow::Result<ImportRun> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("customers.csv");
    customer_file(&file, n)?;
    let data_dir = dir.path().join("data");
    let db = FreshDb::new(backend, &data_dir).await?;
    let mut cmd = cli(&data_dir, &db.url);
    cmd.args(["import", "customers"]).arg(&file);
    if offline {
        cmd.arg("--offline");
    }
    let started = Instant::now();
    let output = cmd.output().await?;
    let secs = started.elapsed().as_secs_f64();
    db.drop_database().await;
    if !output.status.success() {
        bail!(
            "import of {n} customers failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let summary: Value = serde_json::from_slice(&output.stdout)?;
    if summary["created"].as_u64() != Some(n as u64) {
        bail!("import of {n} customers created other than {n}: {summary}");
    }
    let kib = summary["peak_memory_kib"]
        .as_f64()
        .context("the summary has peak_memory_kib (Linux VmHWM)")?;
    Ok(ImportRun {
        secs,
        peak_mib: kib / 1024.0,
    })
}

/// `import customers` at each of `BENCH_IMPORT` (100,000 and 400,000 rows), offline and
/// linking by email; each larger size against the smaller in the same run: time should
/// grow with the rows (linear), memory not at all (BENCHMARKS.md, "Importing customers").
pub(crate) async fn phase_import(
    backend: &Backend,
    settings: &Settings,
    report: &mut Report,
) -> anyhow::Result<()> {
    for offline in [true, false] {
        let how = if offline {
            "--offline"
        } else {
            "linking by email (embedded mock)"
        };
        let mut runs: Vec<(usize, ImportRun)> = Vec::new();
        for &n in &settings.imports {
            if let Some((m, run)) = runs.last() {
                let projected = run.secs * n as f64 / *m as f64;
                if projected > settings.phase_budget {
                    report.note(format!(
                        "{}: import customers {how} at {n} rows skipped: projected {projected:.0} s, over the {:.0} s phase budget (BENCH_PHASE_BUDGET_SECS)",
                        backend.name(),
                        settings.phase_budget
                    ));
                    continue;
                }
            }
            eprintln!("[{}] import customers {how}, {n} rows", backend.name());
            runs.push((n, import_run(backend, n, offline).await?));
        }
        for pair in runs.windows(2) {
            let [(a, ra), (b, rb)] = pair else { continue };
            report_import_growth(backend, how, (*a, ra), (*b, rb), report);
        }
    }
    Ok(())
}

pub(crate) fn report_import_growth(
    backend: &Backend,
    how: &str,
    (a, ra): (usize, &ImportRun),
    (b, rb): (usize, &ImportRun),
    report: &mut Report,
) {
    let rows = b as f64 / a as f64;
    let (time, memory) = (rb.secs / ra.secs, rb.peak_mib / ra.peak_mib);
    let run = |n: usize, r: &ImportRun| {
        format!(
            "{:.1} s ({}), peak {:.0} MiB at {}",
            r.secs,
            fmt_rate(n as f64 / r.secs, "rows/s"),
            r.peak_mib,
            group_digits(n as u64)
        )
    };
    report.add(
        format!(
            "{}: `import customers` {how}, {} → {} rows: wall time and peak memory",
            backend.name(),
            group_digits(a as u64),
            group_digits(b as u64)
        ),
        run(b, rb),
        run(a, ra),
        format!("time {time:.2} for {rows:.0}× the rows; memory {memory:.2}"),
        format!("time ≤ {:.1}, memory ≤ 1.5", rows * 1.25),
        Some(time <= rows * 1.25 && memory <= 1.5),
    );
}
