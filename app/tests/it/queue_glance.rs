//! The queue read at a glance (docs/spec/interfaces.md, "The queue"), in Chromium at
//! 1280 and 390 px: the page lands on one of its tabs, marked as selected; the selected
//! tab's count is the number of its rows; the status filter names the selected tab; and
//! the last approval of an "Approve & next" run says the view is empty.

use crate::approving::queue_of_refunds;
use crate::support::browser::{serve, Browser};

const WIDTHS: [(u32, u32); 2] = [(1280, 800), (390, 844)];

/// The selected tab (its `data-tab`), its count, the rows shown, and the words of the
/// status filter's selected choice.
async fn glance(browser: &Browser) -> (String, String, usize, String) {
    let seen = browser
        .execute(
            "const tab = document.querySelector('#queue-tabs a[aria-current=page]'); \
             const select = document.querySelector('#queue-filter select[name=status]'); \
             return [tab ? tab.dataset.tab : '', tab ? tab.querySelector('.count').dataset.count : '', \
                     document.querySelectorAll('#queue tr[data-case]').length, \
                     select.options[select.selectedIndex].textContent, tab ? tab.firstChild.textContent.trim() : ''];",
        )
        .await;
    let text = |i: usize| seen[i].as_str().unwrap_or_default().to_string();
    let rows = seen[2].as_u64().unwrap_or_default() as usize;
    let words = text(4);
    assert_eq!(text(3), words, "the filter names the selected tab");
    (text(0), text(1), rows, words)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_lands_on_a_tab_whose_count_and_filter_match_its_rows() {
    for (width, height) in WIDTHS {
        let (app, ids) = queue_of_refunds(3).await;
        // One refund only a supervisor may approve: "Needs me" holds fewer rows than
        // the landing tab for the agent.
        sqlx::query("UPDATE cases SET required_role = 'supervisor' WHERE id = $1")
            .bind(&ids[2])
            .execute(app.state.db.pool())
            .await
            .unwrap();
        let base = serve(app.router.clone()).await;
        let browser = Browser::start().await;
        browser.set_window_size(width, height).await;
        browser.console_login(&base, "agent@test.example").await;
        let (tab, count, rows, words) = glance(&browser).await;
        assert_eq!(tab, "needs_person", "{width}px: the landing view is a tab");
        assert_eq!((count.as_str(), rows), ("3", 3), "{width}px: {words}");
        browser
            .goto(&format!("{base}/console?status=needs_me"))
            .await;
        browser.wait_until_loaded().await;
        let (tab, count, rows, words) = glance(&browser).await;
        assert_eq!((tab.as_str(), words.as_str()), ("needs_me", "Needs me"));
        assert_eq!((count.as_str(), rows), ("2", 2), "{width}px");
        let (scroll, inner) = browser.widths().await;
        assert!(scroll <= inner, "{width}px: {scroll} > {inner}");
        browser.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_approval_of_an_approve_and_next_run_says_the_view_is_empty() {
    for (width, height) in WIDTHS {
        let (app, ids) = queue_of_refunds(2).await;
        let base = serve(app.router.clone()).await;
        let browser = Browser::start().await;
        browser.set_window_size(width, height).await;
        browser.console_login(&base, "agent@test.example").await;
        browser
            .goto(&format!("{base}/console/cases/{}?tab=needs_me", ids[0]))
            .await;
        browser.wait_until_loaded().await;
        browser.press_key("a").await;
        browser.wait_for_url(&ids[1]).await;
        browser.wait_until_loaded().await;
        browser.press_key("a").await;
        // The queue's address, not "done=approved": the case page the first approval
        // landed on says `done=approved_next`, which that would match at once.
        let landed = browser.wait_for_url("/console?status=needs_me").await;
        assert!(landed.ends_with("done=approved"), "{landed}");
        browser.wait_until_loaded().await;
        let notice = browser.text("#notice").await;
        assert!(
            notice.contains("Approved — no more cases in this view"),
            "{width}px: {notice}"
        );
        for id in &ids {
            assert_eq!(app.case(id).await["status"], "approved");
        }
        browser.close().await;
    }
}
