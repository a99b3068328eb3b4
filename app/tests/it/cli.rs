//! The command line as a deployer and a CI job meet it: long commands print no
//! progress redraws into captured stderr, and a binary run away from the checkout says
//! which setting points at the fixtures; policy authoring on the database.

use std::path::Path;
use std::process::{Command, Output};

/// `refund-agent` with only the settings given here (none inherited from the test run).
fn refund_agent(current_dir: &Path, data_dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_refund-agent"));
    cmd.current_dir(current_dir)
        .arg("--data-dir")
        .arg(data_dir)
        .env_remove("FIXTURES_DIR")
        .env_remove("DATABASE_URL")
        .env_remove("LLM_BASE_URL")
        .env_remove("PAYMENTS_URL")
        .env("RUST_LOG", "warn");
    cmd
}

fn assert_no_terminal_control(output: &Output) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains('\r') && !stderr.contains('\u{1b}'),
        "piped stderr holds carriage returns or escape codes: {stderr:?}"
    );
}

#[test]
fn shadow_and_index_with_stderr_piped_print_no_carriage_returns_or_escape_codes() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    // Absolute: the commands run in the temporary directory, where `./fixtures` is not.
    let fixtures = std::fs::canonicalize(desk::config::default_fixtures_dir())
        .expect("the checkout's fixtures");
    let history = std::fs::read_to_string(fixtures.join("history").join("tickets.jsonl"))
        .expect("the fixture history");
    let few: String = history.lines().take(5).map(|l| format!("{l}\n")).collect();
    let history_file = dir.path().join("history.jsonl");
    std::fs::write(&history_file, few).expect("writing the history subset");

    let index = refund_agent(dir.path(), &dir.path().join("data"))
        .env("FIXTURES_DIR", &fixtures)
        .arg("index")
        .output()
        .expect("running refund-agent index");
    assert!(index.status.success(), "index failed: {index:?}");
    assert_no_terminal_control(&index);

    let shadow = refund_agent(dir.path(), &dir.path().join("data"))
        .env("FIXTURES_DIR", &fixtures)
        .arg("shadow")
        .arg(&history_file)
        .arg("--out")
        .arg(dir.path().join("report"))
        .output()
        .expect("running refund-agent shadow");
    assert!(shadow.status.success(), "shadow failed: {shadow:?}");
    let summary: serde_json::Value =
        serde_json::from_slice(&shadow.stdout).expect("shadow prints its summary as JSON");
    assert_eq!(summary["total"], 5, "{summary}");
    assert_no_terminal_control(&shadow);
}

#[test]
fn a_binary_run_away_from_the_fixtures_stops_naming_fixtures_dir() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let missing = dir.path().join("no-fixtures-here");
    let output = refund_agent(dir.path(), &dir.path().join("data"))
        .env("FIXTURES_DIR", &missing)
        .arg("index")
        .output()
        .expect("running refund-agent index");
    assert!(!output.status.success(), "index ran without policies");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("FIXTURES_DIR") && stderr.contains("no-fixtures-here"),
        "the error does not name FIXTURES_DIR and the path it tried: {stderr}"
    );
    assert!(
        !dir.path().join("data").join("policy-index").exists(),
        "a failed start-up built an index"
    );
}

#[test]
fn policy_validate_names_each_problem_by_file_field_and_line_and_exits_1() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/policies");
    let markdown = std::fs::read_to_string(fixtures.join("RP-001-v2.md")).expect("RP-001 v2");
    let rules = std::fs::read_to_string(fixtures.join("RP-001-v2.rules.toml")).expect("rules");
    let broken = dir.path().join("RP-001-v2.md");
    std::fs::write(&broken, markdown.replace("## 2. Remedy", "## 4. Remedy")).expect("write");
    let bad_rules = dir.path().join("RP-007-v1.md");
    std::fs::write(&bad_rules, &markdown).expect("write");
    std::fs::write(
        dir.path().join("RP-007-v1.rules.toml"),
        rules.replace("window = \"3\"", "window = \"8\""),
    )
    .expect("write");
    let output = refund_agent(dir.path(), &dir.path().join("data"))
        .args(["policy", "validate"])
        .arg(&broken)
        .arg(&bad_rules)
        .output()
        .expect("running refund-agent policy validate");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines[0]
            .ends_with("RP-001-v2.md:36: sections: section 4 is out of order: expected section 2"),
        "{stdout}"
    );
    assert!(
        lines[1].contains("RP-007-v1.rules.toml:21: clauses.window: rule 'window' cites section 8"),
        "{stdout}"
    );

    let fine = refund_agent(dir.path(), &dir.path().join("data"))
        .args(["policy", "validate"])
        .arg(fixtures.join("RP-001-v2.md"))
        .arg(fixtures.join("RP-004-v2.rules.toml"))
        .output()
        .expect("running refund-agent policy validate");
    assert!(fine.status.success(), "{fine:?}");
    assert_eq!(String::from_utf8_lossy(&fine.stdout), "ok\n");
}

#[test]
fn policy_draft_publish_and_export_work_on_the_database_from_the_command_line() {
    use std::io::Write;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    let run = |args: &[&str]| {
        let output = refund_agent(dir.path(), &data)
            .env("FIXTURES_DIR", &fixtures)
            .args(args)
            .output()
            .expect("running refund-agent");
        assert!(output.status.success(), "{args:?}: {output:?}");
        output
    };
    let mut add = refund_agent(dir.path(), &data)
        .env("FIXTURES_DIR", &fixtures)
        .args([
            "staff",
            "add",
            "--email",
            "author@test.example",
            "--role",
            "policy_author",
            "--password-stdin",
        ])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("staff add");
    add.stdin
        .take()
        .unwrap()
        .write_all(b"correct horse battery\n")
        .unwrap();
    assert!(add.wait().unwrap().success());

    let draft = dir.path().join("RP-001-v3.md");
    std::fs::copy(fixtures.join("policies/RP-001-v3-draft.md"), &draft).unwrap();
    std::fs::copy(
        fixtures.join("policies/RP-001-v3-draft.rules.toml"),
        dir.path().join("RP-001-v3.rules.toml"),
    )
    .unwrap();
    let saved = run(&[
        "policy",
        "draft",
        "RP-001",
        "--from",
        draft.to_str().unwrap(),
        "--as",
        "author@test.example",
    ]);
    assert_eq!(String::from_utf8_lossy(&saved.stdout), "", "no problems");
    let checked = run(&[
        "policy",
        "whatif",
        "RP-001",
        "--live-days",
        "30",
        "--as",
        "author@test.example",
    ]);
    let checked: serde_json::Value = serde_json::from_slice(&checked.stdout).expect("JSON");
    assert_eq!(
        (checked["against"].as_str(), checked["total"].as_u64()),
        (
            Some("live decisions of the last 30 day(s) (0 cases)"),
            Some(0)
        ),
        "{checked}"
    );
    let history = fixtures.join("history/tickets.jsonl");
    let checked = run(&[
        "policy",
        "whatif",
        "RP-001",
        "--history",
        history.to_str().unwrap(),
        "--as",
        "author@test.example",
    ]);
    let checked: serde_json::Value = serde_json::from_slice(&checked.stdout).expect("JSON");
    assert!(
        checked["total"].as_u64() > Some(0) && checked["changed"].as_u64() > Some(0),
        "the draft decides some historical tickets differently: {checked}"
    );
    let published = run(&[
        "policy",
        "publish",
        "RP-001",
        "--at",
        "2030-01-01",
        "--as",
        "author@test.example",
    ]);
    let published: serde_json::Value = serde_json::from_slice(&published.stdout).expect("JSON");
    assert_eq!(published["version"], "RP-001@3", "{published}");

    // Offline commands read the database's policies once it holds them, else the files,
    // and say which.
    let search = |data: &Path| {
        let output = refund_agent(dir.path(), data)
            .env("FIXTURES_DIR", &fixtures)
            .args([
                "policy",
                "search",
                "charged twice duplicate",
                "--as-of",
                "2030-01-02",
            ])
            .output()
            .expect("running refund-agent policy search");
        assert!(output.status.success(), "{output:?}");
        let stdout = String::from_utf8_lossy(&output.stdout).to_string();
        (stdout, String::from_utf8_lossy(&output.stderr).to_string())
    };
    let (found, said) = search(&data);
    assert!(
        found.contains("RP-001@3#"),
        "the published version: {found}"
    );
    assert!(said.contains("policies: from the database"), "{said}");
    let fresh = dir.path().join("fresh");
    let (found, said) = search(&fresh);
    assert!(
        found.contains("RP-001@2#") && !found.contains("RP-001@3#"),
        "the files' draft v3 is not in force: {found}"
    );
    assert!(said.contains("policies: from the files in"), "{said}");
    assert!(
        !fresh.join("refund-desk.db").exists(),
        "no database created"
    );

    let out = dir.path().join("export");
    run(&["policy", "export", out.to_str().unwrap()]);
    let v3 = std::fs::read_to_string(out.join("RP-001-v3.md")).expect("v3 exported");
    assert!(
        v3.contains("status = \"published\"") && v3.contains("effective_from = \"2030-01-01\""),
        "{v3}"
    );
    assert!(
        !out.join("RP-001-v3-draft.md").exists(),
        "the draft file gave way to the version"
    );
    let v2 = std::fs::read_to_string(out.join("RP-001-v2.md")).unwrap();
    assert!(v2.contains("effective_to = \"2029-12-31\""), "{v2}");
    // The exported files load as a policy set again (what `FIXTURES_DIR` tools read).
    let set = desk::policies::load_policy_set(&out).expect("the export loads");
    assert_eq!(
        set.in_force("RP-001", policy_engine::parse_date("2030-01-01").unwrap())
            .map(|d| d.meta.version),
        Some(3)
    );
}
