//! The policy console (`/console/policies`): every document and version with its dates
//! and status, a version's text with section anchors (where citations link), and a
//! line diff between two versions of one document. Staff only; read-only.

use crate::access::{Capability, Routes, Rule};
use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use policy_engine::PolicyDocument;
use serde::Deserialize;

use super::common::{error_page, render, Nav, SignedIn};
use crate::state::AppState;
use desk::world::serde_plain;

pub fn routes() -> Routes {
    let read = Rule::Staff(Capability::ReadPolicies);
    Routes::new()
        .get("/console/policies", read, list_page)
        .get("/console/policies/{id}/diff", read, diff_page)
        .get("/console/policies/{id}/{version}", read, version_page)
}

/// Where a citation (`RP-001@2#2.1`) is shown: the version's page, at its section.
pub fn citation_link(citation: &str) -> String {
    let (doc, rest) = citation.split_once('@').unwrap_or((citation, ""));
    let (version, anchor) = rest.split_once('#').unwrap_or((rest, ""));
    // A clause (`2.1`) has its own anchor on the page; a whole section (`2`) its card's.
    if anchor.contains('.') {
        format!("/console/policies/{doc}/{version}#c{anchor}")
    } else {
        format!("/console/policies/{doc}/{version}#s{anchor}")
    }
}

struct VersionRow {
    id: String,
    version: u32,
    title: String,
    status: String,
    effective_from: String,
    effective_to: String,
}

#[derive(Template)]
#[template(path = "policies.html")]
struct ListPage {
    nav: Nav,
    rows: Vec<VersionRow>,
    documents: Vec<(String, Vec<u32>)>,
}

fn row(d: &PolicyDocument) -> VersionRow {
    VersionRow {
        id: d.meta.id.clone(),
        version: d.meta.version,
        title: d.meta.title.clone(),
        status: serde_plain(&d.meta.status),
        effective_from: d.meta.effective_from.to_string(),
        effective_to: d
            .meta
            .effective_to
            .map(|d| d.to_string())
            .unwrap_or_else(|| "—".into()),
    }
}

async fn list_page(State(state): State<AppState>, SignedIn(session): SignedIn) -> Response {
    let docs = state.policies.documents();
    let mut documents: Vec<(String, Vec<u32>)> = Vec::new();
    for d in docs {
        match documents.iter_mut().find(|(id, _)| *id == d.meta.id) {
            Some((_, versions)) => versions.push(d.meta.version),
            None => documents.push((d.meta.id.clone(), vec![d.meta.version])),
        }
    }
    render(&ListPage {
        nav: Nav::of(&session, "/console/policies"),
        rows: docs.iter().map(row).collect(),
        documents,
    })
}

struct SectionView {
    anchor: String,
    title: String,
    /// The section's Markdown as safe HTML, with an anchor on each numbered clause.
    html: String,
}

#[derive(Template)]
#[template(path = "policy_version.html")]
struct VersionPage {
    nav: Nav,
    doc: VersionRow,
    sections: Vec<SectionView>,
}

async fn version_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Path((id, version)): Path<(String, String)>,
) -> Response {
    let Some(doc) = version
        .parse::<u32>()
        .ok()
        .and_then(|v| state.policies.document(&id, v))
    else {
        return error_page(StatusCode::NOT_FOUND, "No such policy version.");
    };
    let sections = doc
        .sections
        .iter()
        .map(|s| SectionView {
            anchor: s.anchor.clone(),
            title: s.title.clone(),
            html: super::markdown::render(&s.text),
        })
        .collect();
    render(&VersionPage {
        nav: Nav::of(&session, "/console/policies"),
        doc: row(doc),
        sections,
    })
}

#[derive(Deserialize)]
struct DiffQuery {
    from: u32,
    to: u32,
}

struct DiffLine {
    kind: &'static str,
    text: String,
}

#[derive(Template)]
#[template(path = "policy_diff.html")]
struct DiffPage {
    nav: Nav,
    id: String,
    from: VersionRow,
    to: VersionRow,
    lines: Vec<DiffLine>,
}

/// A line diff between two versions' Markdown bodies.
pub fn diff_lines(old: &str, new: &str) -> Vec<(char, String)> {
    similar::TextDiff::from_lines(old, new)
        .iter_all_changes()
        .map(|c| {
            let sign = match c.tag() {
                similar::ChangeTag::Delete => '-',
                similar::ChangeTag::Insert => '+',
                similar::ChangeTag::Equal => ' ',
            };
            (sign, c.value().trim_end_matches('\n').to_string())
        })
        .collect()
}

async fn diff_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Path(id): Path<String>,
    query: Result<Query<DiffQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Ok(Query(q)) = query else {
        return error_page(StatusCode::BAD_REQUEST, "Give two versions: ?from=1&to=2");
    };
    let (Some(from), Some(to)) = (
        state.policies.document(&id, q.from),
        state.policies.document(&id, q.to),
    ) else {
        return error_page(StatusCode::NOT_FOUND, "No such policy version.");
    };
    let lines = diff_lines(&from.body, &to.body)
        .into_iter()
        .map(|(sign, text)| DiffLine {
            kind: match sign {
                '-' => "del",
                '+' => "ins",
                _ => "eq",
            },
            text,
        })
        .collect();
    render(&DiffPage {
        nav: Nav::of(&session, "/console/policies"),
        id,
        from: row(from),
        to: row(to),
        lines,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn citations_link_to_their_section() {
        assert_eq!(
            citation_link("RP-001@2#2.1"),
            "/console/policies/RP-001/2#c2.1"
        );
        assert_eq!(citation_link("RP-003@1#1"), "/console/policies/RP-003/1#s1");
        assert_eq!(
            citation_link("RP-001@2#intro"),
            "/console/policies/RP-001/2#sintro"
        );
    }

    #[test]
    fn diff_marks_changed_lines() {
        let lines = diff_lines("a\nwindow 180 days\nc\n", "a\nwindow 120 days\nc\n");
        assert_eq!(
            lines,
            vec![
                (' ', "a".into()),
                ('-', "window 180 days".into()),
                ('+', "window 120 days".into()),
                (' ', "c".into())
            ]
        );
    }
}
