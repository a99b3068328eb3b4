//! The report: figures, their formatting, and the machine they were measured on.

use super::*;

pub(crate) struct Figure {
    pub(crate) figure: String,
    pub(crate) value: String,
    pub(crate) baseline: String,
    pub(crate) ratio: String,
    pub(crate) target: String,
    pub(crate) met: String,
}

#[derive(Default)]
pub(crate) struct Report {
    pub(crate) rows: Vec<Figure>,
    pub(crate) notes: Vec<String>,
}

impl Report {
    pub(crate) fn add(
        &mut self,
        figure: impl Into<String>,
        value: impl Into<String>,
        baseline: impl Into<String>,
        ratio: impl Into<String>,
        target: impl Into<String>,
        met: Option<bool>,
    ) {
        let row = Figure {
            figure: figure.into(),
            value: value.into(),
            baseline: baseline.into(),
            ratio: ratio.into(),
            target: target.into(),
            met: match met {
                Some(true) => "met".into(),
                Some(false) => "NOT met".into(),
                None => "".into(),
            },
        };
        eprintln!(
            "  {} = {}  (baseline {}; ratio {}) {} {}",
            row.figure, row.value, row.baseline, row.ratio, row.target, row.met
        );
        self.rows.push(row);
    }

    pub(crate) fn note(&mut self, note: impl Into<String>) {
        let note = note.into();
        eprintln!("  note: {note}");
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }

    pub(crate) fn print(&self) {
        println!("| figure | value | baseline (same run) | ratio | target | |");
        println!("|---|---|---|---|---|---|");
        for r in &self.rows {
            println!(
                "| {} | {} | {} | {} | {} | {} |",
                r.figure, r.value, r.baseline, r.ratio, r.target, r.met
            );
        }
        if !self.notes.is_empty() {
            println!();
            for n in &self.notes {
                println!("- {n}");
            }
        }
    }
}

pub(crate) fn rate(count: usize, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64().max(1e-9)
}

pub(crate) fn fmt_rate(per_second: f64, unit: &str) -> String {
    if per_second >= 100.0 {
        format!("{} {unit}", group_digits(per_second.round() as u64))
    } else {
        format!("{per_second:.1} {unit}")
    }
}

pub(crate) fn group_digits(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub(crate) fn percentile_us(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)].as_secs_f64() * 1e6
}

pub(crate) fn fmt_us(us: f64) -> String {
    if us >= 1_000.0 {
        format!("{:.2} ms", us / 1_000.0)
    } else {
        format!("{us:.0} µs")
    }
}

/// `VmHWM` / `VmRSS` of a process, in MiB.
pub(crate) fn proc_memory(pid: &str, field: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// The 1-minute load average, to show whether something else was running.
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

pub(crate) fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let ram = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map(|kb| format!("{:.1} GiB RAM", kb / 1024.0 / 1024.0))
        .unwrap_or_default();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    format!("{cpu}, {cores} cores, {ram}")
}
