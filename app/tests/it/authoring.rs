//! Policy authoring: drafts saved with expected versions, validation by
//! field, what-if runs (a history file, the last days of live decisions), publishing —
//! scheduled versions, approvals voided, instances following the database and sweeping
//! the approvals a new generation changes — and the files written back.
//!
//! Long because it is the one test module: each test builds its instances and
//! drafts through the real router and worker; splitting would add link time.

use crate::support::{spawn_app, TestApp};
use desk::auth::{self, StaffRole};
use desk::clock::Clock;
use serde_json::{json, Value};

/// A staff member with `role` and an API token for them.
async fn staff_token(app: &TestApp, email: &str, role: StaffRole) -> String {
    let now = app.clock.now_ms();
    let staff = auth::upsert_staff(&app.state.db, email, role, "correct horse battery", now)
        .await
        .expect("staff member");
    auth::issue_token(&app.state.db, "api", "staff", &staff.id, now)
        .await
        .expect("token")
        .0
}

async fn author_token(app: &TestApp) -> String {
    staff_token(app, "author@test.example", StaffRole::PolicyAuthor).await
}

/// The RP-001 draft as a fresh GET gives it.
async fn draft(app: &TestApp, token: &str) -> Value {
    let (status, draft) = app
        .request("GET", "/api/v1/policies/RP-001/draft", Some(token), None)
        .await;
    assert_eq!(status, 200, "{draft}");
    draft
}

async fn save(
    app: &TestApp,
    token: &str,
    expected: i64,
    markdown: &str,
    rules: &Value,
) -> (u16, Value) {
    let (status, body) = app
        .request(
            "PUT",
            "/api/v1/policies/RP-001/draft",
            Some(token),
            Some(json!({ "expected_version": expected, "markdown": markdown, "rules": rules })),
        )
        .await;
    (status.as_u16(), body)
}

#[tokio::test]
async fn two_saves_from_the_same_version_one_wins_the_other_gets_409_with_the_diff_and_its_text_back(
) {
    let app = spawn_app().await;
    let alice = author_token(&app).await;
    let bob = staff_token(&app, "admin@test.example", StaffRole::Admin).await;
    let start = draft(&app, &alice).await;
    assert_eq!(start["version"], 0, "{start}");
    let text = start["markdown"].as_str().expect("markdown").to_string();
    let alice_text = text.replace("365 days", "400 days");
    let bob_text = text.replace("365 days", "300 days");

    let (a, b) = tokio::join!(
        save(&app, &alice, 0, &alice_text, &start["rules"]),
        save(&app, &bob, 0, &bob_text, &start["rules"]),
    );
    let mut statuses = [a.0, b.0];
    statuses.sort();
    assert_eq!(statuses, [200, 409], "{a:?} {b:?}");
    let ((_, won), (_, lost), lost_text, won_text, loser) = if a.0 == 200 {
        (a, b, &bob_text, &alice_text, &bob)
    } else {
        (b, a, &alice_text, &bob_text, &alice)
    };
    assert_eq!(won["version"], 1, "{won}");
    assert_eq!(lost["error"]["code"], "draft_changed", "{lost}");
    let conflict = &lost["conflict"];
    assert_eq!(
        conflict["yours"]["markdown"],
        json!(lost_text),
        "the loser's text comes back"
    );
    assert_eq!(conflict["current"]["markdown"], json!(won_text));
    let diff = conflict["diff"].as_str().expect("a diff");
    assert!(
        diff.contains("--- yours/markdown") && diff.contains("+++ saved/markdown"),
        "{diff}"
    );
    assert!(
        diff.contains(&format!("-{}", line_with(lost_text, "days.")))
            && diff.contains(&format!("+{}", line_with(won_text, "days."))),
        "{diff}"
    );

    // Nothing was lost: saving again from the version the 409 names succeeds.
    let (status, saved) = save(&app, loser, 1, lost_text, &start["rules"]).await;
    assert_eq!(status, 200, "{saved}");
    assert_eq!(saved["version"], 2);
    let mut authors: Vec<String> = serde_json::from_value(saved["authors"].clone()).unwrap();
    authors.sort();
    assert_eq!(authors, ["admin@test.example", "author@test.example"]);
}

fn line_with<'a>(text: &'a str, needle: &str) -> &'a str {
    text.lines()
        .find(|l| l.contains(needle))
        .expect("the edited line")
}

#[tokio::test]
async fn a_saved_draft_lists_its_validation_problems_by_field_and_agents_may_not_touch_it() {
    let app = spawn_app().await;
    let author = author_token(&app).await;
    let start = draft(&app, &author).await;
    // The seeded RP-001 v3 draft starts 2027-01-01, after the test clock: no problems.
    assert_eq!(start["policy_version"], 3, "{start}");
    assert_eq!(start["problems"], json!([]), "{start}");

    let markdown = start["markdown"].as_str().unwrap().replace(
        "effective_from = \"2027-01-01\"",
        "effective_from = \"2026-01-01\"",
    );
    let rules = start["rules"]
        .as_str()
        .unwrap()
        .replace("window = \"1\"", "window = \"9\"");
    let (status, saved) = save(&app, &author, 0, &markdown, &json!(rules)).await;
    assert_eq!(status, 200, "{saved}");
    let fields: Vec<(&str, &str)> = saved["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["file"].as_str().unwrap(), p["field"].as_str().unwrap()))
        .collect();
    assert_eq!(fields, [("RP-001-v3.md", "effective_from")], "{saved}");

    let fixed = markdown.replace(
        "effective_from = \"2026-01-01\"",
        "effective_from = \"2027-01-01\"",
    );
    let (_, saved) = save(&app, &author, 1, &fixed, &json!(rules)).await;
    let problem = &saved["problems"][0];
    assert_eq!(
        (problem["file"].as_str(), problem["field"].as_str()),
        (Some("RP-001-v3.rules.toml"), Some("clauses.window")),
        "{saved}"
    );

    let (status, body) = app
        .request(
            "GET",
            "/api/v1/policies/RP-001/draft",
            Some(&app.agent_token),
            None,
        )
        .await;
    assert_eq!(status, 403, "{body}");
    let (status, _) = save(&app, &app.agent_token, 2, &fixed, &json!(rules)).await;
    assert_eq!(status, 403);
    assert_eq!(
        draft(&app, &author).await["version"],
        2,
        "the refused save changed nothing"
    );
}

#[tokio::test]
async fn the_draft_page_shows_the_form_the_preview_and_the_problems_and_a_stale_save_keeps_the_text(
) {
    let app = spawn_app().await;
    let token = author_token(&app).await;
    let (cookie, csrf) = app.staff_session("author@test.example").await;
    let get = |cookie: &str| {
        axum::http::Request::get("/console/policies/RP-001/draft")
            .header("cookie", cookie)
            .body(axum::body::Body::empty())
            .unwrap()
    };
    let (status, page) = app.raw(get(&cookie)).await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("<h1>Duplicate and erroneous charges — draft for review</h1>"),
        "{page}"
    );
    assert!(page.contains("id=\"valid\""), "{page}");

    let post = |expected: i64, markdown: &str| {
        let body = format!(
            "csrf={csrf}&expected_version={expected}&markdown={}&rules=",
            urlencode(markdown)
        );
        axum::http::Request::post("/console/policies/RP-001/draft")
            .header("cookie", &cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(axum::body::Body::from(body))
            .unwrap()
    };
    let draft = draft(&app, &token).await;
    let markdown = draft["markdown"].as_str().unwrap();
    let first = markdown.replace("365 days", "400 days <script>alert(1)</script>");
    let (status, _) = app.raw(post(0, &first)).await;
    assert_eq!(status, 303);
    assert_eq!(self::draft(&app, &token).await["version"], 1, "saved");
    let (_, page) = app.raw(get(&cookie)).await;
    assert!(
        page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "raw HTML is shown as text"
    );
    assert!(!page.contains("<script>alert(1)"), "{page}");

    let stale = markdown.replace("365 days", "300 days");
    let (status, page) = app.raw(post(0, &stale)).await;
    assert_eq!(status, 409, "{page}");
    assert!(
        page.contains("id=\"conflict\"") && page.contains("300 days"),
        "{page}"
    );
    assert!(
        page.contains("name=\"expected_version\" value=\"1\""),
        "{page}"
    );
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

const CHARGED_TWICE: &str = "I was charged twice for my annual plan";

/// Saves the seeded RP-001 v3 draft as it stands (it validates) and returns its version.
async fn save_seeded_draft(app: &TestApp, token: &str) -> i64 {
    let start = draft(app, token).await;
    let markdown = start["markdown"].as_str().unwrap().to_string();
    let (status, saved) = save(app, token, 0, &markdown, &start["rules"]).await;
    assert_eq!(status, 200, "{saved}");
    assert_eq!(saved["problems"], json!([]), "{saved}");
    let version = saved["version"].as_i64().unwrap();
    check_draft(app, token, version).await;
    version
}

/// Runs a what-if on the live decisions of the last week: a publish names the what-if
/// of the exact version it publishes.
async fn check_draft(app: &TestApp, token: &str, version: i64) {
    let (status, checked) = whatif(app, token, json!({ "live_days": 7 })).await;
    assert_eq!(status, 200, "{checked}");
    assert_eq!(checked["draft_version"], version, "{checked}");
}

async fn publish(app: &TestApp, token: &str, draft_version: i64, at: Option<&str>) -> (u16, Value) {
    let (status, body) = app
        .request(
            "POST",
            "/api/v1/policies/RP-001/publish",
            Some(token),
            Some(json!({ "draft_version": draft_version, "whatif_version": draft_version, "effective_from": at })),
        )
        .await;
    (status.as_u16(), body)
}

fn rp001_version(case: &Value) -> String {
    case["decision"]["policy_versions"]
        .as_array()
        .unwrap_or_else(|| panic!("no decision: {case}"))
        .iter()
        .filter_map(Value::as_str)
        .find(|v| v.starts_with("RP-001@"))
        .unwrap_or_else(|| panic!("RP-001 not used: {case}"))
        .to_string()
}

fn at(rfc3339: &str) -> time::OffsetDateTime {
    time::OffsetDateTime::parse(rfc3339, &time::format_description::well_known::Rfc3339).unwrap()
}

#[tokio::test]
async fn a_scheduled_version_takes_effect_exactly_at_its_date() {
    let app = spawn_app().await;
    let author = author_token(&app).await;
    let seen = save_seeded_draft(&app, &author).await;
    let (status, published) = publish(&app, &author, seen, Some("2026-12-01")).await;
    assert_eq!(status, 200, "{published}");
    assert_eq!(published["version"], "RP-001@3");
    assert_eq!(
        published["voided_cases"],
        json!([]),
        "nothing decided today changes"
    );

    app.clock.set(at("2026-11-30T23:59:59.999Z"));
    let (_, before) = app.open_ticket("C-100", CHARGED_TWICE).await;
    assert_eq!(rp001_version(&before), "RP-001@2", "{before}");
    app.clock.set(at("2026-12-01T00:00:00Z"));
    // Another customer: a second ticket on C-100's order would join the open case.
    let (_, after) = app.open_ticket("C-400", CHARGED_TWICE).await;
    assert_eq!(rp001_version(&after), "RP-001@3", "{after}");
    assert_eq!(
        rp001_version(&app.case(before["id"].as_str().unwrap()).await),
        "RP-001@2",
        "the earlier case keeps its decision"
    );

    // The version is immutable: publishing the same number again changes nothing.
    let (status, body) = publish(&app, &author, seen, None).await;
    assert_eq!(status, 409, "{body}");
    let (status, page) = app
        .request("GET", "/api/v1/policies/RP-001/draft", Some(&author), None)
        .await;
    assert_eq!(
        (status.as_u16(), page["policy_version"].as_i64()),
        (200, Some(4)),
        "the next draft is v4: {page}"
    );
}

#[tokio::test]
async fn publishing_voids_an_open_approval_whose_decision_changes_and_records_the_whatif_in_the_audit(
) {
    let app = spawn_app().await;
    let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    assert_eq!(case["status"], "awaiting_approval", "{case}");
    let case_id = case["id"].as_str().unwrap().to_string();
    let old_fingerprint = case["fingerprint"].as_str().unwrap().to_string();

    let author = author_token(&app).await;
    let seen = save_seeded_draft(&app, &author).await;
    let (status, whatif) = app
        .request(
            "POST",
            "/api/v1/policies/RP-001/whatif",
            Some(&author),
            Some(json!({ "history": "tickets.jsonl" })),
        )
        .await;
    assert_eq!(status, 200, "{whatif}");
    assert_eq!(whatif["draft_version"], seen);
    assert!(whatif["total"].as_u64().unwrap() > 0, "{whatif}");
    assert_eq!(
        draft(&app, &author).await["whatif_version"],
        seen,
        "kept with the draft"
    );

    let today = app.clock.now().date().to_string();
    let (status, published) = publish(&app, &author, seen, Some(&today)).await;
    assert_eq!(status, 200, "{published}");
    assert_eq!(published["voided_cases"], json!([case_id]), "{published}");
    let voided = app.case(&case_id).await;
    assert_eq!(voided["status"], "investigating", "{voided}");
    let (status, body) = app
        .approve(&app.agent_token, &case_id, &old_fingerprint)
        .await;
    assert_ne!(status, 200, "the old approval request is void: {body}");

    app.drain().await;
    let redecided = app.case(&case_id).await;
    assert_eq!(redecided["status"], "awaiting_approval", "{redecided}");
    assert_eq!(rp001_version(&redecided), "RP-001@3");

    let audit: String = sqlx::query_scalar(
        "SELECT detail FROM audit_log WHERE action = 'policy_published' AND subject = 'RP-001@3'",
    )
    .fetch_one(app.state.db.pool())
    .await
    .expect("the publish is audited");
    let detail: Value = serde_json::from_str(&audit).unwrap();
    assert_eq!(detail["whatif"]["total"], whatif["total"], "{detail}");
    assert_eq!(detail["whatif_version"], seen);
}

async fn whatif(app: &TestApp, token: &str, body: Value) -> (u16, Value) {
    let (status, body) = app
        .request(
            "POST",
            "/api/v1/policies/RP-001/whatif",
            Some(token),
            Some(body),
        )
        .await;
    (status.as_u16(), body)
}

#[tokio::test]
async fn a_whatif_of_the_last_days_of_live_decisions_lists_the_changed_cases_and_money_and_is_kept()
{
    let app = spawn_app().await;
    let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let case_id = case["id"].as_str().unwrap().to_string();
    let author = author_token(&app).await;
    // The draft's reporting window shrinks to 5 days: the charges of 9 days ago fall out.
    let start = draft(&app, &author).await;
    let rules = start["rules"]
        .as_str()
        .unwrap()
        .replace("reporting_window_days = 365", "reporting_window_days = 5");
    let (status, saved) = save(
        &app,
        &author,
        0,
        start["markdown"].as_str().unwrap(),
        &json!(rules),
    )
    .await;
    assert_eq!((status, &saved["problems"]), (200, &json!([])), "{saved}");
    let seen = saved["version"].as_i64().unwrap();

    let (status, live) = whatif(&app, &author, json!({ "live_days": 7 })).await;
    assert_eq!(status, 200, "{live}");
    assert_eq!(
        (live["total"].as_u64(), live["changed"].as_u64()),
        (Some(1), Some(1)),
        "{live}"
    );
    assert_eq!(live["tickets"][0]["id"], case_id.as_str(), "{live}");
    assert_eq!(live["draft_version"], seen);
    assert!(
        live["against"].as_str().unwrap().contains("last 7 day(s)"),
        "{live}"
    );
    let money = live["money"].as_array().expect("money per currency");
    assert!(
        money
            .iter()
            .any(|m| m["from"] != m["to"] && m["currency"].is_string()),
        "the money the change moves, per currency: {live}"
    );
    let kept = draft(&app, &author).await;
    assert_eq!(
        (
            kept["whatif"]["against"].clone(),
            kept["whatif_version"].as_i64()
        ),
        (live["against"].clone(), Some(seen))
    );

    // Bad input changes nothing: the kept what-if stays the live one.
    for bad in [
        json!({ "live_days": 0 }),
        json!({}),
        json!({ "live_days": 3, "history": "tickets.jsonl" }),
    ] {
        let (status, body) = whatif(&app, &author, bad.clone()).await;
        assert_eq!(status, 400, "{bad}: {body}");
    }
    assert_eq!(draft(&app, &author).await["whatif"], kept["whatif"]);

    // Two days on, a one-day window holds no case; the console form runs the same.
    app.clock.advance(time::Duration::days(2));
    let (cookie, csrf) = app.staff_session("author@test.example").await;
    let form = axum::http::Request::post("/console/policies/RP-001/whatif")
        .header("cookie", &cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(axum::body::Body::from(format!("csrf={csrf}&live_days=1")))
        .unwrap();
    let (status, page) = app.raw(form).await;
    assert_eq!(status, 303, "{page}");
    let kept = draft(&app, &author).await;
    assert_eq!(
        (
            kept["whatif"]["total"].as_u64(),
            kept["whatif"]["changed"].as_u64()
        ),
        (Some(0), Some(0)),
        "{kept}"
    );
}

/// The voided case went back to the queue, decided again under the published RP-001@3.
async fn assert_redecided_under_the_new_version(app: &TestApp, case_id: &str) {
    let redecided = app.case(case_id).await;
    assert_eq!(
        (
            redecided["status"].as_str(),
            rp001_version(&redecided).as_str()
        ),
        (Some("awaiting_approval"), "RP-001@3"),
        "{redecided}"
    );
}

/// Cases voided for a policy change, from the audit log: the proof a case was voided
/// once, whoever swept.
async fn policy_voids(app: &TestApp, case_id: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM audit_log WHERE action = 'proposal_voided' AND subject = $1 AND detail LIKE 'polic%'",
    )
    .bind(case_id)
    .fetch_one(app.state.db.pool())
    .await
    .unwrap()
}

/// A worker pass of `instance` that began before it noticed a publish: its copy of the
/// state holds the old generation and decides with it (what `worker::run_once` does
/// after its refresh, under the set it took then).
async fn decide_with_stale_set(stale: &desk::state::Services) {
    while let Some(mut run) =
        desk::runs::claim_next(&stale.db, &stale.instance_id, stale.clock.now_ms())
            .await
            .unwrap()
    {
        let result = desk::investigation::advance(stale.investigator(), &mut run).await;
        desk::runs::release(&stale.db, &run).await.unwrap();
        result.unwrap();
    }
}

#[tokio::test]
async fn an_approval_decided_under_the_old_set_after_a_scheduled_publish_is_voided_once_by_two_instances_passes(
) {
    let app = spawn_app().await;
    let (other, publisher) = (
        instance(&app, "second").await,
        instance(&app, "third").await,
    );
    let stale = other.clone();
    let author = author_token(&app).await;
    let seen = save_seeded_draft(&app, &author).await;
    let staff = auth::staff_by_email(&app.state.db, "author@test.example")
        .await
        .unwrap()
        .unwrap();
    let effective = policy_engine::parse_date("2026-12-01").unwrap();
    let published = ::authoring::publish::publish(
        publisher.publisher(),
        &staff,
        "RP-001",
        ::authoring::publish::Reviewed {
            draft_version: seen,
            whatif_version: Some(seen),
        },
        Some(effective),
    )
    .await
    .expect("the third instance publishes, scheduled");
    assert_eq!(published.voided_cases, Vec::<String>::new());

    // On its date, a ticket is decided by a pass of the second instance that still holds
    // the set without the new version: RP-001@2, where RP-001@3 is in force.
    app.clock.set(at("2026-12-01T08:00:00Z"));
    let ticket = app.post_ticket("C-100", CHARGED_TWICE).await;
    let case_id = ticket["case"]["id"].as_str().unwrap().to_string();
    decide_with_stale_set(&stale).await;
    let case = app.case(&case_id).await;
    assert_eq!(
        (case["status"].as_str(), rp001_version(&case).as_str()),
        (Some("awaiting_approval"), "RP-001@2"),
        "{case}"
    );

    // Both instances' next passes notice the publish and sweep at once: voided once.
    let (a, b) = tokio::join!(
        desk::worker::run_once(&app.state),
        desk::worker::run_once(&other)
    );
    a.expect("the first instance's pass");
    b.expect("the second instance's pass");
    assert_eq!(policy_voids(&app, &case_id).await, 1, "voided exactly once");
    desk::worker::run_once(&app.state).await.unwrap();
    desk::worker::run_once(&other).await.unwrap();
    app.drain().await;
    assert_redecided_under_the_new_version(&app, &case_id).await;
    assert_eq!(
        policy_voids(&app, &case_id).await,
        1,
        "later passes sweep nothing again"
    );
}

#[tokio::test]
async fn an_approval_decided_by_the_publishers_own_pass_in_flight_is_voided_by_its_next_pass() {
    let app = spawn_app().await;
    let in_flight = app.state.clone();
    let author = author_token(&app).await;
    let seen = save_seeded_draft(&app, &author).await;
    let today = app.clock.now().date().to_string();
    let (status, published) = publish(&app, &author, seen, Some(&today)).await;
    assert_eq!(
        (status, &published["voided_cases"]),
        (200, &json!([])),
        "{published}"
    );

    // A pass of this instance that took its state before the publish decides now.
    let ticket = app.post_ticket("C-100", CHARGED_TWICE).await;
    let case_id = ticket["case"]["id"].as_str().unwrap().to_string();
    decide_with_stale_set(&in_flight).await;
    assert_eq!(rp001_version(&app.case(&case_id).await), "RP-001@2");
    desk::worker::run_once(&app.state).await.unwrap();
    assert_eq!(
        policy_voids(&app, &case_id).await,
        1,
        "the next pass swept it"
    );
    app.drain().await;
    assert_redecided_under_the_new_version(&app, &case_id).await;
}

#[tokio::test]
async fn with_a_second_approver_required_the_only_author_may_not_publish() {
    let mut app = spawn_app().await;
    app.state.policy_second_approver = true;
    app.router = web::router(app.state.clone());
    let author = author_token(&app).await;
    let seen = save_seeded_draft(&app, &author).await;
    let (status, body) = publish(&app, &author, seen, None).await;
    assert_eq!(status, 403, "{body}");
    let admin = staff_token(&app, "admin@test.example", StaffRole::Admin).await;
    let (status, body) = publish(&app, &admin, seen, None).await;
    assert_eq!(status, 200, "{body}");
}

/// Another instance over the same database: its own data directory (so its own index),
/// the same provider and clock.
async fn second_instance(app: &TestApp) -> desk::state::Services {
    instance(app, "second").await
}

async fn instance(app: &TestApp, name: &str) -> desk::state::Services {
    let mut config = settings::config_from_env(&app.dir.path().join(name));
    config.database_url = app.database_url.clone();
    config.payments_url = Some(app.mock.base_url());
    config.fixtures_dir = desk::config::default_fixtures_dir();
    let state = desk::build_state(
        &config,
        &app.mock.base_url(),
        app.clock.clone(),
        std::sync::Arc::new(desk::agent::investigator::Investigator),
    )
    .await
    .expect("the second instance starts");
    app::cli::with_chores(state)
}

fn search(index: &rag_index::PolicyIndex, text: &str) -> Vec<String> {
    let mut query = rag_index::SearchQuery::new(text);
    query.limit = 5;
    index
        .search(&query)
        .expect("a search answers")
        .iter()
        .map(|p| p.citation())
        .collect()
}

#[tokio::test]
async fn a_second_instance_rebuilds_its_index_on_its_own_and_searches_meanwhile_use_the_old_generation(
) {
    let app = spawn_app().await;
    let other = second_instance(&app).await;
    let author = author_token(&app).await;
    let start = draft(&app, &author).await;
    let markdown = start["markdown"].as_str().unwrap().replace(
        "365 days.",
        "365 days. Zanzibar wording marks this published text.",
    );
    let (_, saved) = save(&app, &author, 0, &markdown, &start["rules"]).await;
    check_draft(&app, &author, saved["version"].as_i64().unwrap()).await;
    let old_hash = other.index.policy_hash();
    assert!(search(&other.index, "zanzibar").is_empty());
    let (status, body) = publish(
        &app,
        &author,
        saved["version"].as_i64().unwrap(),
        Some("2026-12-01"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        other.index.policy_hash(),
        old_hash,
        "nothing pushes to the other instance"
    );

    // The other instance's worker pass notices the new hash; searches run meanwhile.
    let index = other.index.clone();
    let searching = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let flag = searching.clone();
    let searcher = tokio::task::spawn_blocking(move || {
        let mut answers = Vec::new();
        while flag.load(std::sync::atomic::Ordering::SeqCst) {
            answers.push((
                index.policy_hash(),
                search(&index, "duplicate charge refund"),
            ));
        }
        answers
    });
    desk::worker::run_once(&other).await.expect("a worker pass");
    searching.store(false, std::sync::atomic::Ordering::SeqCst);
    let answers = searcher.await.unwrap();
    assert!(!answers.is_empty());
    assert!(
        answers.iter().all(|(_, citations)| !citations.is_empty()),
        "every search during the rebuild answered from a whole generation"
    );
    assert!(
        answers.iter().any(|(hash, _)| *hash == old_hash),
        "searches ran on the old generation during the rebuild"
    );
    assert_ne!(
        other.index.policy_hash(),
        old_hash,
        "the other instance rebuilt"
    );
    assert_eq!(search(&other.index, "zanzibar"), ["RP-001@3#1"]);
    assert_eq!(
        other
            .clone()
            .policies
            .document("RP-001", 3)
            .map(|d| d.meta.status),
        Some(policy_engine::PolicyStatus::Published)
    );
}

#[tokio::test]
async fn the_seeded_database_gives_the_files_policy_set_and_exports_them_byte_for_byte() {
    let app = spawn_app().await;
    let fixtures = desk::config::default_fixtures_dir().join("policies");
    let files = desk::policies::load_policy_set(&fixtures).expect("the fixture set");
    assert_eq!(
        *app.state.policies, files,
        "the seeded database decides as the files do"
    );

    let out = tempfile::tempdir().unwrap();
    let sources = desk::policies::versions::sources(&app.state.db)
        .await
        .unwrap();
    let written =
        desk::policies::versions::export(&desk::policies::supersede(sources), out.path()).unwrap();
    let mut names: Vec<_> = std::fs::read_dir(&fixtures)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(written, names.iter().filter(|n| n.ends_with(".md")).count());
    for name in &names {
        let exported =
            std::fs::read(out.path().join(name)).unwrap_or_else(|_| panic!("{name} not exported"));
        assert!(
            exported == std::fs::read(fixtures.join(name)).unwrap(),
            "{name} differs"
        );
    }
    assert_eq!(
        std::fs::read_dir(out.path()).unwrap().count(),
        names.len(),
        "no other file"
    );
}

/// One browser journey (browser tests cost seconds each): an author edits the draft,
/// sees it checked, runs a what-if and publishes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_author_edits_checks_and_publishes_a_draft_in_the_browser() {
    use crate::support::browser::{serve, Browser};
    let app = spawn_app().await;
    author_token(&app).await;
    let base = serve(app.router.clone()).await;
    let browser = Browser::start().await;
    // A policy author reads no case: the console opens on the policies.
    browser
        .console_login_to(&base, "author@test.example", "/console/policies")
        .await;
    browser
        .click("#drafts a[href='/console/policies/RP-001/draft']")
        .await;
    browser
        .wait_for_url_ending("/console/policies/RP-001/draft")
        .await;
    assert!(
        browser.find("#publish-form").await.is_none(),
        "nothing saved yet"
    );
    browser
        .execute(
            "const t = document.querySelector('textarea[name=markdown]');
             t.value = t.value.replace('365 days', '400 days'); return true;",
        )
        .await;
    browser.click("#save").await;
    browser.wait_for_url("done=saved").await;
    assert!(
        browser.find("#valid").await.is_some(),
        "{}",
        browser.text("#problems").await
    );
    assert!(browser.text("#preview").await.contains("400 days"));

    browser.click("#run-whatif").await;
    browser.wait_for_url("done=checked").await;
    let summary = browser.text("#whatif-summary").await;
    assert!(
        summary.contains("history tickets.jsonl") && summary.contains("decided differently"),
        "{summary}"
    );

    // The form offers the draft's own date (2027-01-01); the author puts it in force today.
    assert!(browser.text("#publish-date").await.contains("2027-01-01"));
    let today = app.clock.now().date().to_string();
    browser
        .execute(&format!(
            "document.querySelector('input[name=effective_from]').value = '{today}'; return true;"
        ))
        .await;
    // Unticked, the browser itself keeps the form (the box is required) …
    browser.click("#publish-button").await;
    assert!(browser.text("#publish-date").await.contains("2027-01-01"));
    // … ticked, it publishes.
    browser.click("#publish-confirm").await;
    browser.click("#publish-button").await;
    browser
        .wait_for_url_ending("/console/policies/RP-001/3")
        .await;
    let page = browser.source().await;
    assert!(
        page.contains("published") && page.contains("400 days"),
        "{page}"
    );
    browser.close().await;
    assert_eq!(
        app.state
            .clone()
            .policies
            .in_force("RP-001", app.clock.now().date())
            .map(|d| d.meta.version),
        Some(3)
    );
}

#[tokio::test]
async fn a_publish_without_a_date_puts_the_draft_in_force_on_its_own_date_not_today() {
    let app = spawn_app().await;
    let author = author_token(&app).await;
    let seen = save_seeded_draft(&app, &author).await;
    let draft_page = draft(&app, &author).await;
    assert!(
        draft_page["markdown"]
            .as_str()
            .unwrap()
            .contains("effective_from = \"2027-01-01\""),
        "the seeded draft is dated: {draft_page}"
    );
    let (status, published) = publish(&app, &author, seen, None).await;
    assert_eq!(status, 200, "{published}");
    assert_eq!(published["effective_from"], "2027-01-01", "{published}");
    let today = app.clock.now().date();
    let in_force = app.state.policies.in_force("RP-001", today);
    assert_eq!(
        in_force.map(|v| v.meta.version),
        Some(2),
        "today still decides under v2"
    );
}
