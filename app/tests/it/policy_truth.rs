//! One source of truth per policy (docs/spec/policies.md): the thresholds form writes a
//! draft's rules and the table of its text together, publish refuses a version whose
//! text and rules disagree (naming the cell, publishing nothing), a new draft starts
//! valid, the preview shows tables as tables, and a what-if compares the draft with
//! the version it edits — the same tickets on both sides — so a JPY-only edit lists
//! only JPY tickets.
//!
//! Every step goes through the real router: the console form signed in with CSRF, the
//! API with a bearer token; what was published is read back from the store and from a
//! decision the engine makes.

use axum::http::StatusCode;
use desk::auth::{self, StaffRole};
use desk::clock::Clock;
use serde_json::{json, Value};

use crate::conversation::{console_get, console_post};
use crate::support::{spawn_app, TestApp};

const LEAD: &str = "lead@test.example";
const DRAFT_PAGE: &str = "/console/policies/RP-004/draft";

/// The lead (a policy author) with a console session `(cookie, csrf)` and an API token.
async fn lead(app: &TestApp) -> (String, String, String) {
    let now = app.clock.now_ms();
    let staff = auth::upsert_staff(
        &app.state.db,
        LEAD,
        StaffRole::PolicyAuthor,
        "correct horse battery",
        now,
    )
    .await
    .expect("the lead");
    let token = auth::issue_token(&app.state.db, "api", "staff", &staff.id, now)
        .await
        .expect("a token")
        .0;
    let (cookie, csrf) = app.staff_session(LEAD).await;
    (cookie, csrf, token)
}

async fn api_draft(app: &TestApp, token: &str, doc: &str) -> Value {
    let path = format!("/api/v1/policies/{doc}/draft");
    let (status, draft) = app.request("GET", &path, Some(token), None).await;
    assert_eq!(status, StatusCode::OK, "{draft}");
    draft
}

/// The thresholds form as the draft page posts it, RP-004 v2's amounts but JPY.
fn thresholds_form(csrf: &str, version: i64, jpy: &str) -> String {
    format!(
        "csrf={csrf}&expected_version={version}&up_to_threshold=agent&above_threshold=supervisor&CNY=500.00&USD=100.00&EUR=100.00&JPY={jpy}"
    )
}

/// RP-004's published versions in the store: `(version, markdown, rules)`.
async fn published_rp004(app: &TestApp) -> Vec<(i64, String, String)> {
    sqlx::query_as(
        "SELECT version, markdown, rules FROM policy_versions
         WHERE doc_id = 'RP-004' AND status = 'published' ORDER BY version",
    )
    .fetch_all(app.state.db.pool())
    .await
    .expect("the stored versions")
}

#[tokio::test]
async fn a_new_draft_of_every_policy_passes_validation_without_edits() {
    let app = spawn_app().await;
    let (_, _, token) = lead(&app).await;
    let tomorrow = app.clock.now().date().next_day().unwrap().to_string();
    for doc in ["RP-002", "RP-003", "RP-004", "RP-005", "RP-006", "RP-007"] {
        let draft = api_draft(&app, &token, doc).await;
        assert_eq!(draft["version"], 0, "{doc}: a fresh draft");
        assert_eq!(draft["problems"], json!([]), "{doc}: {draft}");
        let markdown = draft["markdown"].as_str().unwrap();
        assert!(
            markdown.contains(&format!("effective_from = \"{tomorrow}\"")),
            "{doc} starts tomorrow in the desk's clock: {markdown}"
        );
    }
}

#[tokio::test]
async fn the_draft_preview_shows_a_policy_table_as_an_html_table() {
    let app = spawn_app().await;
    let (cookie, _, _) = lead(&app).await;
    let (status, page) = console_get(&app, &cookie, DRAFT_PAGE).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let preview = page.split("id=\"preview\"").nth(1).expect("the preview");
    assert!(preview.contains("<table>"), "{preview}");
    assert!(
        preview.contains("<td>JPY</td><td>15,000</td>"),
        "a row of the thresholds table: {preview}"
    );
    assert!(!preview.contains("| JPY |"), "no raw pipes: {preview}");
}

#[tokio::test]
async fn a_thresholds_form_edit_publishes_a_version_whose_text_and_rules_agree() {
    let app = spawn_app().await;
    let (cookie, csrf, token) = lead(&app).await;
    let fresh = api_draft(&app, &token, "RP-004").await;
    let fresh_text = fresh["markdown"].as_str().unwrap().to_string();

    let form = thresholds_form(&csrf, 0, "20000");
    let submit = "/console/policies/RP-004/thresholds";
    let (status, page) = console_post(&app, &cookie, submit, &form).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{page}");
    let saved = api_draft(&app, &token, "RP-004").await;
    assert_eq!(saved["problems"], json!([]), "{saved}");
    assert_eq!(
        saved["markdown"].as_str().unwrap(),
        fresh_text.replace("| JPY | 15,000 |", "| JPY | 20,000 |"),
        "the table's cell follows the rules; every other byte is kept"
    );
    assert!(saved["rules"].as_str().unwrap().contains("JPY = \"20000\""));

    // What-if, then publish in force today, through the console as the lead does.
    let (status, page) = console_post(
        &app,
        &cookie,
        "/console/policies/RP-004/whatif",
        &format!("csrf={csrf}&live_days=7"),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{page}");
    let today = app.clock.now().date();
    let form =
        format!("csrf={csrf}&draft_version=1&whatif_version=1&effective_from={today}&confirm=yes");
    let (status, page) =
        console_post(&app, &cookie, "/console/policies/RP-004/publish", &form).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{page}");

    let published = published_rp004(&app).await;
    let (version, markdown, rules) = published.last().expect("a published version");
    assert_eq!(*version, 3);
    assert!(markdown.contains("| JPY | 20,000 |"), "{markdown}");
    assert!(!markdown.contains("15,000"), "{markdown}");
    assert!(rules.contains("JPY = \"20000\""), "{rules}");

    // The engine enforces the number the text states: ¥19,800 needed a supervisor under
    // v2's ¥15,000 and needs an agent under v3's ¥20,000.
    let (_, case) = app
        .open_ticket("C-400", "二重に請求されました。年間プランです。")
        .await;
    assert_eq!(case["status"], "awaiting_approval", "{case:#}");
    assert_eq!(case["required_role"], "agent", "{case:#}");
    let versions = case["decision"]["policy_versions"].to_string();
    assert!(versions.contains("RP-004@3"), "{versions}");
}

#[tokio::test]
async fn a_hand_edited_mismatch_is_refused_at_publish_naming_the_cell_and_nothing_is_published() {
    let app = spawn_app().await;
    let (cookie, csrf, token) = lead(&app).await;
    let fresh = api_draft(&app, &token, "RP-004").await;
    // The rules change through the API, the text is left saying 15,000.
    let rules = fresh["rules"]
        .as_str()
        .unwrap()
        .replace("JPY = \"15000\"", "JPY = \"20000\"");
    let body = json!({ "expected_version": 0, "markdown": fresh["markdown"], "rules": rules });
    let (status, saved) = app
        .request(
            "PUT",
            "/api/v1/policies/RP-004/draft",
            Some(&token),
            Some(body),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{saved}");
    let problem = &saved["problems"][0];
    assert_eq!(problem["field"], "threshold (JPY)", "{saved}");
    assert_eq!(problem["file"], "RP-004-v3.md", "{saved}");

    let before = published_rp004(&app).await;
    let body = json!({ "draft_version": 1, "whatif_version": 1 });
    let (status, refused) = app
        .request(
            "POST",
            "/api/v1/policies/RP-004/publish",
            Some(&token),
            Some(body),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert_eq!(
        refused["error"]["code"], "policy_text_disagrees",
        "{refused}"
    );
    let message = refused["error"]["message"].as_str().unwrap();
    for named in [
        "currency | threshold",
        "row JPY",
        "column 'threshold'",
        "15,000",
        "20,000",
    ] {
        assert!(message.contains(named), "{named}: {message}");
    }

    // The console says the same beside the publish form.
    let form = "draft_version=1&whatif_version=1&effective_from=&confirm=yes";
    let (status, page) = console_post(
        &app,
        &cookie,
        "/console/policies/RP-004/publish",
        &format!("csrf={csrf}&{form}"),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{page}");
    let beside = page
        .split("id=\"publish-error\"")
        .nth(1)
        .unwrap_or_default();
    assert!(beside.contains("row JPY"), "{page}");

    assert_eq!(published_rp004(&app).await, before, "nothing was published");
    assert_eq!(
        api_draft(&app, &token, "RP-004").await["version"],
        1,
        "the draft stays"
    );
}

/// Tickets of the shipped history, by id, written to a history file of their own.
fn history_of(ids: &[&str]) -> tempfile::TempDir {
    let shipped = desk::config::default_fixtures_dir().join("history/tickets.jsonl");
    let text = std::fs::read_to_string(shipped).expect("the shipped history");
    let picked: Vec<&str> = text
        .lines()
        .filter(|line| {
            let ticket: Value = serde_json::from_str(line).expect("a ticket");
            ids.contains(&ticket["id"].as_str().unwrap_or_default())
        })
        .collect();
    assert_eq!(picked.len(), ids.len(), "every ticket is shipped");
    let dir = tempfile::tempdir().expect("a directory");
    std::fs::write(dir.path().join("mixed.jsonl"), picked.join("\n") + "\n").unwrap();
    dir
}

#[tokio::test]
async fn a_whatif_of_a_jpy_only_edit_lists_only_jpy_tickets() {
    // Four currencies, dates under RP-004 v1 (to 2026-06-30) and v2. H-COL-07 (€120.00,
    // May 2026) needed an agent under v1's €150.00 and a supervisor under v2's €100.00:
    // compared with the version in force on its date it changes, yet the edit is not why.
    let history = history_of(&[
        "H-COL-07", "H-DUP-01", "H-DUP-03", "H-DUP-06", "H-DUP-07", "H-COL-04", "H-RPT-03",
    ]);
    let mut app = spawn_app().await;
    app.state.history_dir = history.path().to_path_buf();
    app.router = web::router(app.state.clone());
    let (cookie, csrf, token) = lead(&app).await;
    // Dated by hand first, so the comparison alone is under test here.
    let fresh = api_draft(&app, &token, "RP-004").await;
    let dated: Vec<String> = fresh["markdown"]
        .as_str()
        .unwrap()
        .lines()
        .map(|line| match line.starts_with("effective_from") {
            true => "effective_from = \"2026-12-10\"".to_string(),
            false => line.to_string(),
        })
        .collect();
    let body = json!({ "expected_version": 0, "markdown": dated.join("\n") + "\n", "rules": fresh["rules"] });
    let (status, saved) = app
        .request(
            "PUT",
            "/api/v1/policies/RP-004/draft",
            Some(&token),
            Some(body),
        )
        .await;
    assert_eq!(
        (status, &saved["problems"]),
        (StatusCode::OK, &json!([])),
        "{saved}"
    );

    let submit = "/console/policies/RP-004/thresholds";
    let (status, page) =
        console_post(&app, &cookie, submit, &thresholds_form(&csrf, 1, "5000")).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{page}");
    let form = format!("csrf={csrf}&history=mixed.jsonl");
    let (status, page) =
        console_post(&app, &cookie, "/console/policies/RP-004/whatif", &form).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{page}");

    let whatif = &api_draft(&app, &token, "RP-004").await["whatif"];
    assert_eq!(whatif["total"], 7, "{whatif}");
    let mut listed: Vec<&str> = whatif["tickets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    listed.sort();
    // ¥9,800 and ¥12,000 cross the new ¥5,000; ¥980 (April, under v1) does not.
    assert_eq!(listed, ["H-COL-04", "H-RPT-03"], "{whatif}");
    assert_eq!(whatif["base"], "RP-004@2", "{whatif}");

    let (_, page) = console_get(&app, &cookie, DRAFT_PAGE).await;
    let summary = page
        .split("id=\"whatif-summary\"")
        .nth(1)
        .unwrap_or_default();
    assert!(
        summary.contains("against RP-004 v2, the version this draft edits"),
        "{page}"
    );
    assert!(!page.contains("H-COL-07"), "{page}");
}

#[test]
fn the_command_line_refuses_to_publish_a_mismatch_with_the_cell_and_a_failing_exit() {
    use std::io::Write;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    let command = |args: &[&str]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_refund-agent"));
        cmd.current_dir(dir.path())
            .arg("--data-dir")
            .arg(&data)
            .env("FIXTURES_DIR", &fixtures)
            .env_remove("DATABASE_URL")
            .env_remove("LLM_BASE_URL")
            .env_remove("PAYMENTS_URL")
            .env("RUST_LOG", "warn")
            .args(args);
        cmd
    };
    let mut add = command(&[
        "staff",
        "add",
        "--email",
        LEAD,
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

    // RP-004 v3 by hand: the rules say ¥20,000, the text still ¥15,000.
    let v2 = std::fs::read_to_string(fixtures.join("policies/RP-004-v2.md")).unwrap();
    let markdown = v2
        .replace("version = 2", "version = 3")
        .replace("status = \"published\"", "status = \"draft\"")
        .replace(
            "effective_from = \"2026-07-01\"",
            "effective_from = \"2030-01-01\"",
        );
    let rules = std::fs::read_to_string(fixtures.join("policies/RP-004-v2.rules.toml"))
        .unwrap()
        .replace("RP-004@2", "RP-004@3")
        .replace("JPY = \"15000\"", "JPY = \"20000\"");
    let draft = dir.path().join("RP-004-v3.md");
    std::fs::write(&draft, markdown).unwrap();
    std::fs::write(dir.path().join("RP-004-v3.rules.toml"), rules).unwrap();
    let draft = draft.to_str().unwrap();
    let saved = command(&["policy", "draft", "RP-004", "--from", draft, "--as", LEAD])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&saved.stdout);
    assert!(
        said.contains("threshold (JPY)"),
        "the problem is listed: {saved:?}"
    );

    let refused = command(&["policy", "publish", "RP-004", "--as", LEAD])
        .output()
        .unwrap();
    assert!(!refused.status.success(), "{refused:?}");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("row JPY") && stderr.contains("15,000") && stderr.contains("20,000"),
        "{stderr}"
    );
}
