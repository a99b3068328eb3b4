//! A bounce counts only when it is a delivery-status notification (RFC 3464) about a
//! mail the desk sent (its Message-ID), hard (5.x.x) told from soft (4.x.x), and staff
//! see and clear the mark (docs/spec/email.md, "No loops").

use axum::http::StatusCode;

use super::{inbound, mail_app};
use crate::support::mail::{self, SUPPORT};
use crate::support::TestApp;

const LI_WEI: &str = "li.wei@example.cn";

async fn undeliverable(app: &TestApp) -> bool {
    mailbox::addresses::undeliverable(&app.state.db, LI_WEI)
        .await
        .unwrap()
        .is_some()
}

/// The Message-ID of the newest mail the desk wrote to Li Wei.
async fn our_message_id(app: &TestApp) -> String {
    let id: String = sqlx::query_scalar(
        "SELECT id FROM mail_outbox WHERE customer_id = 'C-100' ORDER BY seq DESC LIMIT 1",
    )
    .fetch_one(app.state.db.pool())
    .await
    .unwrap();
    mailbox::message_id(&id, "shop.test")
}

/// Seen failing before the fix: each forged bounce (a report naming no mail of ours, a
/// plain mail from MAILER-DAEMON, a report naming a Message-ID we never sent) marked Li
/// Wei's address undeliverable, silencing every later mail to her.
#[tokio::test]
async fn a_bounce_about_no_mail_of_ours_marks_nothing() {
    let app = mail_app().await;
    app.open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let forged = [
        mail::mailtool(&["bounce", SUPPORT, LI_WEI]),
        mail::build(
            "MAILER-DAEMON@mx.attacker.test",
            "Undelivered Mail Returned to Sender",
            "Final-Recipient: rfc822; li.wei@example.cn\nStatus: 5.1.1",
            &[],
        ),
        mail::mailtool(&[
            "bounce",
            SUPPORT,
            LI_WEI,
            "--message-id",
            "out_made_up@shop.test",
        ]),
    ];
    for raw in forged {
        let (status, body) = inbound(&app, &raw).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        assert_eq!(body["outcome"], "ignored", "{body}");
        assert!(
            !undeliverable(&app).await,
            "marked by {}",
            String::from_utf8_lossy(&raw)
        );
    }
}

/// Seen failing before the fix: the soft (4.2.2) bounce marked the address.
#[tokio::test]
async fn a_hard_bounce_of_our_mail_marks_the_address_a_soft_one_does_not_and_staff_clear_it() {
    let app = mail_app().await;
    app.open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let ours = our_message_id(&app).await;
    let soft = mail::mailtool(&[
        "bounce",
        SUPPORT,
        LI_WEI,
        "--status",
        "4.2.2",
        "--message-id",
        &ours,
    ]);
    let (_, body) = inbound(&app, &soft).await;
    assert_eq!(body["reason"], "bounce", "{body}");
    assert!(!undeliverable(&app).await, "a soft bounce marks nothing");
    let hard = mail::mailtool(&[
        "bounce",
        SUPPORT,
        LI_WEI,
        "--status",
        "5.1.1",
        "--message-id",
        &ours,
    ]);
    inbound(&app, &hard).await;
    assert!(
        undeliverable(&app).await,
        "a hard bounce of our mail marks the address"
    );
    // Staff see it on the customer, and clear it.
    let (status, customer) = app
        .request(
            "GET",
            "/api/v1/customers/C-100/mail",
            Some(&app.agent_token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{customer}");
    assert!(
        customer["undeliverable"]["reason"].is_string(),
        "{customer}"
    );
    let (status, _) = app
        .request(
            "DELETE",
            "/api/v1/customers/C-100/mail/undeliverable",
            Some(&app.agent_token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(!undeliverable(&app).await, "cleared");
    let (_, customer) = app
        .request(
            "GET",
            "/api/v1/customers/C-100/mail",
            Some(&app.agent_token),
            None,
        )
        .await;
    assert!(customer["undeliverable"].is_null(), "{customer}");
}

/// The case page shows the mark beside the customer and a person who works the case
/// clears it with one button (CSRF-checked, audited); mail goes to the address again.
#[tokio::test]
async fn the_case_page_shows_an_undeliverable_address_and_its_button_clears_the_mark() {
    use axum::body::Body;
    use axum::http::Request;
    let app = mail_app().await;
    let (_, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let case_id = case["id"].as_str().unwrap().to_string();
    let ours = our_message_id(&app).await;
    let hard = mail::mailtool(&["bounce", SUPPORT, LI_WEI, "--message-id", &ours]);
    inbound(&app, &hard).await;
    assert!(undeliverable(&app).await);
    let (cookie, csrf) = app.staff_session("agent@test.example").await;
    let page = |cookie: String| {
        Request::get(format!("/console/cases/{case_id}"))
            .header("cookie", cookie)
            .body(Body::empty())
            .unwrap()
    };
    let (_, html) = app.raw(page(cookie.clone())).await;
    assert!(html.contains("id=\"email-undeliverable\""), "{html}");
    assert!(html.contains("id=\"clear-undeliverable\""), "{html}");
    let post = |csrf: &str| {
        Request::post(format!("/console/cases/{case_id}/customer-mail"))
            .header("cookie", cookie.clone())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from(format!("csrf={csrf}")))
            .unwrap()
    };
    // Without the session's CSRF token nothing changes.
    let (status, _) = app.raw(post("forged")).await;
    assert!(status.is_client_error(), "{status}");
    assert!(undeliverable(&app).await, "a forged form clears nothing");
    let (status, _) = app.raw(post(&csrf)).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(!undeliverable(&app).await, "cleared from the case page");
    let (_, html) = app.raw(page(cookie.clone())).await;
    assert!(!html.contains("id=\"email-undeliverable\""), "{html}");
    let audited: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM audit_log WHERE action = 'undeliverable_cleared' AND subject = 'C-100'",
    )
    .fetch_one(app.state.db.pool())
    .await
    .unwrap();
    assert_eq!(audited, 1);
}
