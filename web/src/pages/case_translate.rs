//! The case page's machine translations (docs/spec/interfaces.md, "Pages"): a customer
//! message in another language than the console's gets a "Translate" button where a
//! model is configured; the translation is shown beside the original, labelled as the
//! assistant's, and never replaces it. `desk::translations` asks the model and keeps
//! the answer.

use axum::extract::{Path, State};
use axum::response::Response;
use serde::Deserialize;

use super::case::after_action;
use super::common::{has_csrf, Verified};
use crate::state::AppState;
use desk::translations::{self, STAFF_LANGUAGE};

#[derive(Deserialize)]
pub(super) struct TranslateForm {
    csrf: String,
    /// The message's place in its ticket.
    seq: i64,
}

has_csrf!(TranslateForm);

/// The model that translates: the configured OpenAI-compatible server, or none (the
/// built-in investigator writes no text). The case page marks its messages by the same
/// rule (`case::attach_translations`).
fn model(state: &AppState) -> Option<&desk::agent::llm::LlmModel> {
    state.model.sub_agent_server()
}

/// `POST /console/cases/{id}/translate`: the message `seq` in the console's language,
/// asked of the model once and kept; the page shows it beside the original.
pub(super) async fn translate_submit(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Verified(session, form): Verified<TranslateForm>,
) -> Response {
    let now = desk::clock::Clock::now_ms(state.clock.as_ref());
    let result =
        translations::translate(&state.db, model(&state), &id, form.seq, STAFF_LANGUAGE, now).await;
    after_action(&state, &session, &id, result, "translated").await
}
