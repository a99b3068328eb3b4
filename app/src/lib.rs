//! `refund-agent`, the binary: its command line (`cli`), the batch shadow report
//! (`shadow`), and the wiring of the crates below it (`desk` for records and workflow,
//! `web` for HTTP, `store` for the database, `domain` for the pure rules).
//!
//! Nothing below imports from here; the crate graph is the architecture
//! (`docs/architecture` in ARCHITECTURE.md, checked by the `layers` test).

pub mod cli;

/// The batch shadow report as `refund-agent shadow` writes it: `backtest::shadow` replays the
/// history and tallies, `web::pages::shadow_report` renders the page; this writes both
/// files. (A module here rather than a file: the report's code lives in those two crates.)
pub mod shadow {
    pub use backtest::shadow::classes::csv;
    pub use backtest::shadow::*;
    pub use web::pages::shadow_report::html;

    /// Writes `DIR/report.json`, `DIR/report.html` and `DIR/report.csv` (every
    /// disagreement with its class).
    pub fn write(report: &ShadowReport, dir: &std::path::Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("report.json"), serde_json::to_vec_pretty(report)?)?;
        std::fs::write(dir.join("report.html"), html(report))?;
        std::fs::write(
            dir.join("report.csv"),
            backtest::shadow::classes::csv(report),
        )?;
        Ok(())
    }
}

/// The allocator of every binary built on this crate (the product, its benches and
/// tests): mimalloc. A replayed ticket or a served request makes thousands of small JSON
/// values and strings and drops them; under glibc's malloc a third of a shadow replay
/// went to allocating and freeing (malloc_consolidate alone 4%; BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
