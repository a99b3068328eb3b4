//! "Done when", the leads' tools driven in Chromium as a person would: a
//! policy author sets RP-004's approval thresholds through the form on a 390 px phone
//! (a bad amount refused beside the form, what was typed kept; a good one saved into
//! the draft), dates the draft, runs the what-if at 1280×800 and reads who must approve
//! how much in words, then publishes, ticking the confirmation of the draft's own date.
//!
//! The refusals and the publish rules are tested over HTTP in `leads` and `authoring`;
//! this journey checks what a person sees and what the stored versions hold after.

use desk::auth::{self, StaffRole};
use desk::clock::Clock;

use crate::support::browser::{serve, Browser};
use crate::team_tools::{assert_fits, retype, text_with, value_of};

const AUTHOR: &str = "author@test.example";

/// The date the author gives the draft: after the test clock's today (2026-11-29).
const IN_FORCE_FROM: &str = "2026-12-10";

/// Moves the caret of the textarea `css` to the end of the line starting with `key` as
/// a person does at the keyboard — Control+Home, Down to the line, End — and types
/// `backspaces` Backspaces and then `text`. WebDriver keys: `\u{E009}` Control,
/// `\u{E011}` Home, `\u{E015}` Down, `\u{E010}` End, `\u{E003}` Backspace, `\u{E000}`
/// releases every key.
async fn edit_line(browser: &Browser, css: &str, key: &str, backspaces: usize, text: &str) {
    let value = value_of(browser, css).await;
    let line = value
        .lines()
        .position(|l| l.starts_with(key))
        .unwrap_or_else(|| panic!("no line {key} in {value}"));
    browser.click(css).await;
    let keys = format!(
        "\u{E009}\u{E011}\u{E000}{}\u{E010}{}{text}",
        "\u{E015}".repeat(line),
        "\u{E003}".repeat(backspaces)
    );
    browser.type_into(css, &keys).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_author_sets_thresholds_in_a_form_reads_the_whatif_in_words_and_confirms_the_drafts_date(
) {
    let app = crate::support::spawn_app().await;
    let now = app.clock.now_ms();
    auth::upsert_staff(
        &app.state.db,
        AUTHOR,
        StaffRole::PolicyAuthor,
        "correct horse battery",
        now,
    )
    .await
    .unwrap();
    let base = serve(app.router.clone()).await;
    let browser = Browser::start().await;

    // On a phone: the policies, then RP-004's draft and its thresholds form.
    browser.set_window_size(390, 844).await;
    browser
        .console_login_to(&base, AUTHOR, "/console/policies")
        .await;
    browser
        .click("#drafts a[href='/console/policies/RP-004/draft']")
        .await;
    browser
        .wait_for_url_ending("/console/policies/RP-004/draft")
        .await;
    browser.wait_until_loaded().await;
    assert_fits(&browser, "the draft page").await;
    assert_eq!(
        value_of(&browser, "#thresholds-form input[name=JPY]").await,
        "15000",
        "the form starts from the thresholds in force"
    );
    retype(&browser, "#thresholds-form input[name=JPY]", "150.5").await;
    browser.click("#save-thresholds").await;
    let error = text_with(&browser, "#thresholds-error", "150.5").await;
    assert!(
        error.starts_with("JPY: '150.5' is not a threshold in JPY"),
        "refused beside the form: {error}"
    );
    assert_eq!(
        value_of(&browser, "#thresholds-form input[name=JPY]").await,
        "150.5",
        "what was typed is kept"
    );
    assert_fits(&browser, "the draft page with the refusal").await;
    retype(&browser, "#thresholds-form input[name=JPY]", "5000").await;
    browser.click("#save-thresholds").await;
    browser.wait_for_url("done=thresholds").await;
    browser.wait_until_loaded().await;
    assert_eq!(
        value_of(&browser, "#thresholds-form input[name=JPY]").await,
        "5000"
    );
    let rules = value_of(&browser, "#draft-form textarea[name=rules]").await;
    assert!(
        rules.contains("JPY = \"5000\"") && rules.contains("CNY = \"500.00\""),
        "saved into the draft's rules, the rest kept: {rules}"
    );

    // At a desk: a new draft starts valid, in force from tomorrow (docs/spec/policies.md);
    // the author types the date it should go in force.
    browser.set_window_size(1280, 800).await;
    assert!(
        browser.find("#valid").await.is_some(),
        "{}",
        browser.text("#problems").await
    );
    edit_line(
        &browser,
        "#draft-form textarea[name=markdown]",
        "effective_from",
        "2026-11-30\"".len(),
        &format!("{IN_FORCE_FROM}\""),
    )
    .await;
    browser.click("#save").await;
    browser.wait_for_url("done=saved").await;
    browser.wait_until_loaded().await;
    assert!(
        browser.find("#valid").await.is_some(),
        "{}",
        browser.text("#problems").await
    );

    // The what-if names roles and money in words.
    browser.click("#run-whatif").await;
    browser.wait_for_url("done=checked").await;
    browser.wait_until_loaded().await;
    let roles = browser.text("#whatif-roles").await;
    // The old side is RP-004@2, the version the draft edits (docs/spec/policies.md,
    // "What-if"): H-COL-04 and H-DUP-04 (¥9,800 each) and H-RPT-03 (¥12,000) cross the
    // new ¥5,000, and nothing but JPY changed.
    assert_eq!(roles, "agent → supervisor for 3 tickets, ¥31,600");
    let summary = browser.text("#whatif-summary").await;
    assert!(
        summary.contains("against RP-004 v2, the version this draft edits"),
        "{summary}"
    );
    let tickets = browser.text("#whatif-tickets").await;
    assert!(
        tickets.contains("H-RPT-03: refund → refund, approver agent → supervisor, ¥12,000"),
        "{tickets}"
    );

    // Publish offers the draft's own date and asks to confirm it.
    let date = browser.text("#publish-date").await;
    assert!(
        date.contains(&format!("{IN_FORCE_FROM}, the draft's own date")),
        "{date}"
    );
    browser.click("#publish-button").await;
    let unticked = browser
        .execute("return document.querySelector('#publish-confirm').validity.valueMissing;")
        .await;
    assert_eq!(unticked, serde_json::json!(true), "the tick is asked for");
    assert!(
        browser.url().await.contains("/RP-004/draft"),
        "unticked, the browser keeps the form"
    );
    browser.click("#publish-confirm").await;
    browser.click("#publish-button").await;
    let at = browser
        .wait_for_url_ending("/console/policies/RP-004/3")
        .await;
    assert!(at.ends_with("/console/policies/RP-004/3"), "{at}");
    browser.set_window_size(390, 844).await;
    browser.wait_until_loaded().await;
    assert_fits(&browser, "the published version").await;
    browser.close().await;

    // Records: v3 holds the new threshold and is in force from its own date, not today.
    let (status, rules, markdown): (String, String, String) = sqlx::query_as(
        "SELECT status, rules, markdown FROM policy_versions WHERE doc_id = 'RP-004' AND version = 3",
    )
    .fetch_one(app.state.db.reader())
    .await
    .unwrap();
    assert_eq!(status, "published");
    assert!(rules.contains("JPY = \"5000\""), "{rules}");
    assert!(
        markdown.contains("| JPY | 5,000 |"),
        "the text says it too: {markdown}"
    );
    let policies = app.state.clone().policies;
    let today = app.clock.now().date();
    let version_on = |date: time::Date| policies.in_force("RP-004", date).map(|d| d.meta.version);
    assert_eq!(version_on(today), Some(2), "today still decides under v2");
    let from = time::Date::parse(
        IN_FORCE_FROM,
        &time::format_description::well_known::Iso8601::DATE,
    )
    .unwrap();
    assert_eq!(version_on(from), Some(3));
    assert_eq!(version_on(from.previous_day().unwrap()), Some(2));
}
