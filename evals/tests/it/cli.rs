//! The command lines of the suite: `refund-evals eval` writes its report, prints its path
//! alone on stdout and fails when a scenario fails; `refund-agent eval` (the name docs/spec/interfaces.md
//! gives) hands its command line to `refund-evals` and reports the same; and
//! `refund-evals generate-history` writes what the generator makes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SCENARIO: &str = "authorization_hold_reported_as_double_charge";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("evals/ sits in the workspace")
        .to_path_buf()
}

fn refund_evals() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_refund-evals"));
    command
        .env("FIXTURES_DIR", workspace().join("fixtures"))
        .env_remove("LLM_BASE_URL")
        .env_remove("RUST_LOG");
    command
}

/// `refund-agent`, built now (cargo offers another package's binary to no test): a
/// no-op when the workspace was built, as `cargo test --workspace` does.
fn refund_agent() -> Command {
    let mut build = Command::new(env!("CARGO"));
    build
        .args(["build", "--quiet", "-p", "app", "--bin", "refund-agent"])
        .current_dir(workspace());
    // Without the variables cargo sets for this test (CARGO_MANIFEST_DIR, CARGO_PKG_*…):
    // build scripts that watch them (ring's reads CARGO_MANIFEST_DIR) would see them
    // changed and rebuild ring, rustls, reqwest and app, about a minute, and the next
    // build would undo it. Cargo's own settings (CARGO_HOME, CARGO_TARGET_DIR) stay.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("CARGO_") && name != "CARGO_HOME" && name != "CARGO_TARGET_DIR" {
            build.env_remove(name.as_ref());
        }
    }
    let built = build.status().expect("cargo runs");
    assert!(built.success(), "building refund-agent: {built}");
    let exe = Path::new(env!("CARGO_BIN_EXE_refund-evals"))
        .with_file_name(format!("refund-agent{}", std::env::consts::EXE_SUFFIX));
    let mut command = Command::new(exe);
    command
        .env("FIXTURES_DIR", workspace().join("fixtures"))
        .env_remove("LLM_BASE_URL")
        .env_remove("RUST_LOG");
    command
}

/// A scenario directory holding the shipped scenario `SCENARIO`, and, when `broken`,
/// a copy of it expecting a status it never reaches.
fn scenario_dir(broken: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temp dir");
    let text = std::fs::read_to_string(
        workspace()
            .join("evals/scenarios")
            .join(format!("{SCENARIO}.json")),
    )
    .expect("the scenario ships in evals/scenarios");
    std::fs::write(dir.path().join("good.json"), &text).expect("writing a scenario");
    if broken {
        let mut scenario: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        scenario["name"] = "expects_the_wrong_status".into();
        scenario["expect"]["status"] = "refund_succeeded".into();
        std::fs::write(dir.path().join("broken.json"), scenario.to_string())
            .expect("writing a scenario");
    }
    dir
}

fn eval(mut command: Command, scenarios: &Path, out: &Path) -> (Output, serde_json::Value) {
    let output = command
        .arg("eval")
        .arg("--scenarios")
        .arg(scenarios)
        .arg("--out")
        .arg(out)
        .output()
        .expect("the binary runs");
    let report = std::fs::read_to_string(out.join("report.json"))
        .map(|text| serde_json::from_str(&text).expect("report.json is JSON"))
        .unwrap_or_else(|e| {
            panic!(
                "no report.json ({e}); stderr: {}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
    (output, report)
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

#[test]
fn refund_evals_eval_writes_the_report_and_prints_its_path_alone() {
    let scenarios = scenario_dir(false);
    let out = tempfile::tempdir().expect("a temp dir");
    let (output, report) = eval(refund_evals(), scenarios.path(), out.path());
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        stdout(&output),
        out.path().join("report.json").display().to_string()
    );
    assert_eq!(report["total"], 1);
    assert_eq!(report["passed"], 1);
    assert_eq!(report["scenarios"][0]["name"], SCENARIO);
    assert!(out.path().join("report.html").is_file());
    // Quiet by default — no log lines, and it says where the HTML report is.
    let stderr = String::from_utf8_lossy(&output.stderr);
    let html = out.path().join("report.html").display().to_string();
    assert!(stderr.contains(&format!("HTML report: {html}")), "{stderr}");
    assert!(
        !stderr.contains(" WARN ") && !stderr.contains(" INFO "),
        "{stderr}"
    );
}

#[test]
fn refund_evals_eval_fails_when_a_scenario_fails_and_still_writes_the_report() {
    let scenarios = scenario_dir(true);
    let out = tempfile::tempdir().expect("a temp dir");
    let (output, report) = eval(refund_evals(), scenarios.path(), out.path());
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("1 of 2 scenarios failed"),
        "{output:?}"
    );
    assert_eq!(
        (report["total"].clone(), report["passed"].clone()),
        (2.into(), 1.into())
    );
}

#[test]
fn refund_agent_eval_hands_its_command_line_to_refund_evals() {
    let scenarios = scenario_dir(true);
    let out = tempfile::tempdir().expect("a temp dir");
    let (output, report) = eval(refund_agent(), scenarios.path(), out.path());
    // The suite's verdict and report, through the SPEC's command name.
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("1 of 2 scenarios failed"),
        "{output:?}"
    );
    assert_eq!(
        stdout(&output),
        out.path().join("report.json").display().to_string()
    );
    assert_eq!(
        (report["total"].clone(), report["passed"].clone()),
        (2.into(), 1.into())
    );
}

#[test]
fn refund_evals_generate_history_writes_what_the_generator_makes() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let out = dir.path().join("history.jsonl");
    let output = refund_evals()
        .args([
            "generate-history",
            "--style",
            "varied",
            "--seed",
            "5",
            "--count",
            "20",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .expect("the binary runs");
    assert!(output.status.success(), "{output:?}");
    let written = std::fs::read_to_string(&out).expect("the history was written");
    let policies =
        desk::policies::load_policy_set(&workspace().join("fixtures/policies")).expect("policies");
    let expected = refund_evals::generate::to_jsonl(&refund_evals::generate::varied_history_from(
        &policies,
        5,
        20,
        refund_evals::generate::ComplaintBank::Own,
    ));
    assert_eq!(written, expected);
}
