//! The suite's report: per scenario and per run, the graders' verdicts and the hard
//! violations; serialised as JSON, rendered as one self-contained HTML page, written
//! side by side into a directory.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EvalReport {
    /// RFC 3339, wall clock.
    pub generated_at: String,
    pub model: String,
    /// Runs per scenario asked for (a deterministic model runs each once).
    pub k: usize,
    pub total: usize,
    pub passed: usize,
    pub failed: usize,
    /// Scenarios whose every run passed, over all scenarios (pass^k).
    pub pass_rate: f64,
    /// Runs that passed over runs made (pass@1 over every run).
    pub run_pass_rate: f64,
    /// Hard violations over all runs.
    pub hard_violations: usize,
    pub duration_ms: u64,
    /// Per tag: `[passed, total]`.
    pub by_tag: BTreeMap<String, [usize; 2]>,
    /// Per `model · prompt version · tool schema version`: runs `[passed, total]`.
    #[serde(default)]
    pub by_run_versions: BTreeMap<String, [usize; 2]>,
    pub scenarios: Vec<ScenarioResult>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScenarioResult {
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
    /// Every run passed (pass^k).
    pub passed: bool,
    pub runs: usize,
    pub passes: usize,
    /// The graders of the first failing run (or of the first run when all passed).
    pub graders: Vec<GraderResult>,
    pub hard_violations: Vec<String>,
    pub duration_ms: u64,
    pub attempts: Vec<AttemptResult>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AttemptResult {
    pub passed: bool,
    pub graders: Vec<GraderResult>,
    pub hard_violations: Vec<String>,
    pub duration_ms: u64,
    pub final_status: Option<String>,
    pub reason_code: Option<String>,
    pub final_reply: Option<String>,
    /// The run's scripted or real model.
    pub model: String,
    /// `model · prompt version · tool schema version` the run was made with.
    #[serde(default)]
    pub versions: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GraderResult {
    pub name: String,
    pub passed: bool,
    pub message: String,
}

impl EvalReport {
    pub(crate) fn from_results(
        model: String,
        k: usize,
        scenarios: Vec<ScenarioResult>,
        elapsed: Duration,
    ) -> EvalReport {
        let total = scenarios.len();
        let passed = scenarios.iter().filter(|s| s.passed).count();
        let runs: usize = scenarios.iter().map(|s| s.runs).sum();
        let run_passes: usize = scenarios.iter().map(|s| s.passes).sum();
        let hard_violations = scenarios
            .iter()
            .flat_map(|s| &s.attempts)
            .map(|a| a.hard_violations.len())
            .sum();
        let mut by_tag: BTreeMap<String, [usize; 2]> = BTreeMap::new();
        for s in &scenarios {
            for tag in &s.tags {
                let entry = by_tag.entry(tag.clone()).or_default();
                entry[0] += usize::from(s.passed);
                entry[1] += 1;
            }
        }
        let mut by_run_versions: BTreeMap<String, [usize; 2]> = BTreeMap::new();
        for a in scenarios.iter().flat_map(|s| &s.attempts) {
            let entry = by_run_versions.entry(a.versions.clone()).or_default();
            entry[0] += usize::from(a.passed);
            entry[1] += 1;
        }
        let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        EvalReport {
            generated_at: OffsetDateTime::now_utc()
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            model,
            k,
            total,
            passed,
            failed: total - passed,
            pass_rate: ratio(passed, total),
            run_pass_rate: ratio(run_passes, runs),
            hard_violations,
            duration_ms: elapsed.as_millis() as u64,
            by_tag,
            by_run_versions,
            scenarios,
        }
    }

    /// One line for a terminal.
    pub fn summary(&self) -> String {
        format!(
            "{}/{} scenarios passed (pass^{} = {:.1}%), {} hard violation(s), {:.1} s, model {}",
            self.passed,
            self.total,
            self.k,
            100.0 * self.pass_rate,
            self.hard_violations,
            self.duration_ms as f64 / 1000.0,
            self.model
        )
    }
}

/// `s` escaped for HTML by askama's escaper, the one the product's templates use.
fn escape(s: &str) -> String {
    askama::filters::escape(s, askama::filters::Html)
        .map(|safe| safe.to_string())
        .unwrap_or_default()
}

/// The report as one self-contained HTML page (inline CSS, no scripts).
pub fn html(report: &EvalReport) -> String {
    let mut rows = String::new();
    for s in &report.scenarios {
        let graders: String = s
            .graders
            .iter()
            .map(|g| {
                format!(
                    "<li class=\"{}\"><b>{}</b> {}</li>",
                    if g.passed { "ok" } else { "bad" },
                    escape(&g.name),
                    escape(&g.message)
                )
            })
            .collect();
        let hard: String = s
            .hard_violations
            .iter()
            .map(|h| format!("<li class=\"bad\"><b>HARD</b> {}</li>", escape(h)))
            .collect();
        rows.push_str(&format!(
            "<tr class=\"{cls}\"><td><details{open}><summary><b>{name}</b> — {desc}</summary><ul>{hard}{graders}</ul></details></td>\
             <td>{tags}</td><td>{verdict}</td><td>{passes}/{runs}</td><td>{ms} ms</td></tr>\n",
            cls = if s.passed { "ok" } else { "bad" },
            open = if s.passed { "" } else { " open" },
            name = escape(&s.name),
            desc = escape(&s.description),
            tags = escape(&s.tags.join(", ")),
            verdict = if s.passed { "pass" } else { "FAIL" },
            passes = s.passes,
            runs = s.runs,
            ms = s.duration_ms,
        ));
    }
    let counts = |rows: &BTreeMap<String, [usize; 2]>| -> String {
        rows.iter()
            .map(|(t, [p, n])| format!("<tr><td>{}</td><td>{p}/{n}</td></tr>", escape(t)))
            .collect()
    };
    let (tags, versions) = (counts(&report.by_tag), counts(&report.by_run_versions));
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Refund desk — scenario evals</title>\
<style>body{{font-family:system-ui,sans-serif;margin:2em;color:#222}}table{{border-collapse:collapse;width:100%}}\
td,th{{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}}tr.bad td{{background:#fdecea}}\
li.bad{{color:#b00020}}li.ok{{color:#2e7d32}}.kpi{{display:inline-block;margin-right:2em;font-size:1.2em}}</style></head><body>\
<h1>Scenario evals</h1><p>{generated} · model <code>{model}</code> · k = {k}</p>\
<p><span class=\"kpi\">passed <b>{passed}/{total}</b></span><span class=\"kpi\">pass^k <b>{rate:.1}%</b></span>\
<span class=\"kpi\">runs passed <b>{run_rate:.1}%</b></span><span class=\"kpi\">hard violations <b>{hard}</b></span>\
<span class=\"kpi\">{secs:.1} s</span></p>\
<h2>By tag</h2><table><tr><th>tag</th><th>passed</th></tr>{tags}</table>\
<h2>By model, prompt and tool schema version</h2><table><tr><th>versions</th><th>runs passed</th></tr>{versions}</table>\
<h2>Scenarios</h2><table><tr><th>scenario</th><th>tags</th><th>verdict</th><th>runs</th><th>time</th></tr>{rows}</table>\
</body></html>\n",
        generated = escape(&report.generated_at),
        model = escape(&report.model),
        k = report.k,
        passed = report.passed,
        total = report.total,
        rate = 100.0 * report.pass_rate,
        run_rate = 100.0 * report.run_pass_rate,
        hard = report.hard_violations,
        secs = report.duration_ms as f64 / 1000.0,
    )
}

/// Writes `dir/report.json` and `dir/report.html`.
pub fn write(report: &EvalReport, dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::write(
        dir.join("report.json"),
        serde_json::to_string_pretty(report)?,
    )?;
    std::fs::write(dir.join("report.html"), html(report))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(passed: bool, versions: &str) -> AttemptResult {
        AttemptResult {
            passed,
            graders: Vec::new(),
            hard_violations: Vec::new(),
            duration_ms: 0,
            final_status: None,
            reason_code: None,
            final_reply: None,
            model: "m".into(),
            versions: versions.into(),
        }
    }

    #[test]
    fn runs_are_counted_per_model_prompt_and_tool_schema_version() {
        let scenario = |attempts: Vec<AttemptResult>| ScenarioResult {
            name: "s".into(),
            description: String::new(),
            tags: vec![],
            passed: attempts.iter().all(|a| a.passed),
            runs: attempts.len(),
            passes: attempts.iter().filter(|a| a.passed).count(),
            graders: vec![],
            hard_violations: vec![],
            duration_ms: 0,
            attempts,
        };
        let scenarios = vec![
            scenario(vec![
                attempt(true, "a · p1 · t1"),
                attempt(false, "a · p1 · t1"),
            ]),
            scenario(vec![attempt(true, "b · p1 · t2")]),
        ];
        let report = EvalReport::from_results("mixed".into(), 2, scenarios, Duration::ZERO);
        assert_eq!(report.by_run_versions["a · p1 · t1"], [1, 2]);
        assert_eq!(report.by_run_versions["b · p1 · t2"], [1, 1]);
        assert!(html(&report).contains("b · p1 · t2"));
    }
}
