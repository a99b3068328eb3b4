//! `eval`: handed over to the `refund-evals` binary, which holds the scenario suite.

use std::path::PathBuf;

use anyhow::Context;

/// `refund-agent eval` (docs/spec/interfaces.md) runs the scenario suite, which lives in the
/// `refund-evals` binary outside the production library (cargo forbids the
/// app depending on a crate built on it). The command line is handed over unchanged —
/// both binaries parse the same `settings::Settings` and `eval` flags — and the suite's
/// exit status becomes ours.
pub(super) async fn forward_to_refund_evals() -> anyhow::Result<()> {
    let program = refund_evals_binary()?;
    let status = tokio::process::Command::new(&program)
        .args(std::env::args_os().skip(1))
        .status()
        .await
        .with_context(|| format!("running {}", program.display()))?;
    if !status.success() {
        anyhow::bail!("{} failed ({status})", program.display());
    }
    Ok(())
}

/// `refund-evals` beside this executable (where cargo builds both), else on `PATH`.
fn refund_evals_binary() -> anyhow::Result<PathBuf> {
    let name = format!("refund-evals{}", std::env::consts::EXE_SUFFIX);
    let exe = std::env::current_exe().context("locating refund-agent")?;
    let beside = exe.with_file_name(&name);
    if beside.is_file() {
        return Ok(beside);
    }
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|dir| dir.join(&name))
        .find(|candidate| candidate.is_file())
        .with_context(|| {
            format!(
                "the scenario suite is the refund-evals binary, found neither beside {} nor on PATH (build it: cargo build -p refund-evals)",
                exe.display()
            )
        })
}
