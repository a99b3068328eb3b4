//! A helpdesk's past tickets as `import history` reads them (docs/spec/history.md):
//! Zendesk tickets with their comments and users — in the API's shapes (pages
//! `{"tickets": […], "users": […]}`, one ticket `{"ticket": {…}, "comments": […],
//! "users": […]}`) and the JSON export's (one ticket or one user object a line, comments
//! inside the ticket) — or a CSV of ticket id, created at, requester email, subject,
//! body and tags. Each becomes a [`SourceTicket`], one at a time.
//!
//! A file is read as a stream of JSON values (or CSV records): one value — a ticket, a
//! user, one API page — is in memory at a time, never the file. Users are read in a
//! first pass ([`scan`] with [`Pass::Users`]) and kept as id → email only, so tickets
//! can come before or after their users.
//!
//! What it deliberately does not do: fetch from Zendesk's API (a team exports or dumps
//! its pages; we read files), read attachments, or guess a requester from a signature.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use shop_import::rows::RowError;

/// One past ticket, whatever its source.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceTicket {
    pub id: String,
    pub created_at: OffsetDateTime,
    pub requester_email: Option<String>,
    pub subject: Option<String>,
    pub tags: Vec<String>,
    /// Who the ticket was assigned to (Zendesk's `assignee_id`, as the user's email when
    /// the export has it; a CSV's optional `assignee` column): the report's person.
    pub assignee: Option<String>,
    /// Oldest first; the requester's are the customer's.
    pub messages: Vec<SourceMessage>,
    /// Where in the file: a CSV row's line; for Zendesk, the ordinal of the JSON value
    /// holding it (its line in an export of one value a line; a page's tickets share it).
    pub line: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SourceMessage {
    pub from_customer: bool,
    pub text: String,
    pub at: OffsetDateTime,
}

/// The two shapes of `import history --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryFormat {
    Zendesk,
    Csv,
}

impl HistoryFormat {
    /// Every name `--format` takes.
    pub const NAMES: [&'static str; 2] = ["zendesk", "csv"];
}

impl std::str::FromStr for HistoryFormat {
    type Err = String;

    fn from_str(text: &str) -> Result<HistoryFormat, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "zendesk" => Ok(HistoryFormat::Zendesk),
            "csv" => Ok(HistoryFormat::Csv),
            other => Err(format!("unknown format '{other}': zendesk or csv")),
        }
    }
}

/// A Zendesk id: a number in the API, sometimes a string in exports.
fn id_text(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        _ => None,
    }
}

#[derive(Deserialize)]
struct ZUser {
    #[serde(default)]
    id: Value,
    #[serde(default)]
    email: Option<String>,
}

#[derive(Deserialize)]
struct ZComment {
    #[serde(default)]
    author_id: Value,
    #[serde(default)]
    plain_body: Option<String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    created_at: Option<String>,
}

#[derive(Deserialize)]
struct ZTicket {
    #[serde(default)]
    id: Value,
    #[serde(default)]
    created_at: Option<String>,
    #[serde(default)]
    subject: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    requester_id: Value,
    /// Some exports embed the requester.
    #[serde(default)]
    requester: Option<ZUser>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    assignee_id: Value,
    #[serde(default)]
    comments: Option<Vec<ZComment>>,
}

/// Users by id → email.
pub type Users = HashMap<String, String>;

/// What one pass over a file looks for.
pub enum Pass<'a> {
    /// Collect every user's email (Zendesk only; a CSV names its requesters).
    Users(&'a mut Users),
    /// Every ticket, in file order, resolved against these users.
    Tickets(&'a Users, &'a mut dyn FnMut(Result<SourceTicket, RowError>)),
}

/// Reads the file once, for `pass`. A file that cannot be opened is an error; a value
/// or row that cannot be read is a [`RowError`] given to the ticket visitor — except a
/// JSON value that is not JSON at all, after which a stream cannot be resynchronised:
/// that error is given and the pass ends.
pub fn scan(path: &Path, format: HistoryFormat, pass: Pass<'_>) -> std::io::Result<()> {
    match format {
        HistoryFormat::Zendesk => scan_zendesk(path, pass),
        HistoryFormat::Csv => scan_csv(path, pass),
    }
}

fn scan_zendesk(path: &Path, mut pass: Pass<'_>) -> std::io::Result<()> {
    let reader = BufReader::new(File::open(path)?);
    let mut stream = serde_json::Deserializer::from_reader(reader).into_iter::<Value>();
    let mut ordinal = 0u64;
    loop {
        let value = match stream.next() {
            None => return Ok(()),
            Some(Ok(value)) => value,
            Some(Err(e)) => {
                if let Pass::Tickets(_, visit) = &mut pass {
                    visit(Err(RowError {
                        line: e.line() as u64,
                        id: None,
                        message: format!("not JSON, the rest of the file is not read: {e}"),
                    }));
                }
                return Ok(());
            }
        };
        // The Nth value of the file: its line in an export of one value a line.
        ordinal += 1;
        take_value(value, ordinal, &mut pass);
    }
}

/// One top-level value: a page, a ticket, or a user.
fn take_value(value: Value, offset: u64, pass: &mut Pass<'_>) {
    let Value::Object(mut map) = value else {
        return;
    };
    let users: Vec<ZUser> = map
        .remove("users")
        .and_then(|u| serde_json::from_value(u).ok())
        .unwrap_or_default();
    match pass {
        Pass::Users(all) => {
            for u in &users {
                add_user(all, u);
            }
            if let Some(requester) = map.get("requester").cloned() {
                if let Ok(u) = serde_json::from_value::<ZUser>(requester) {
                    add_user(all, &u);
                }
            }
            let is_user = map.contains_key("email") && !map.contains_key("requester_id");
            if is_user {
                if let Ok(u) = serde_json::from_value::<ZUser>(Value::Object(map)) {
                    add_user(all, &u);
                }
            }
        }
        Pass::Tickets(all, visit) => {
            if let Some(Value::Array(tickets)) = map.remove("tickets") {
                for t in tickets {
                    visit(ticket(t, None, all, offset));
                }
            } else if let Some(t) = map.remove("ticket") {
                let comments = map.remove("comments");
                visit(ticket(t, comments, all, offset));
            } else if map.contains_key("requester_id") || map.contains_key("comments") {
                visit(ticket(Value::Object(map), None, all, offset));
            }
        }
    }
}

fn add_user(all: &mut Users, u: &ZUser) {
    if let (Some(id), Some(email)) = (id_text(&u.id), u.email.as_deref()) {
        all.insert(id, email.trim().to_string());
    }
}

fn time(value: Option<&str>, what: &str) -> Result<OffsetDateTime, String> {
    let text = value.ok_or_else(|| format!("{what} is missing"))?;
    OffsetDateTime::parse(text.trim(), &Rfc3339)
        .map_err(|_| format!("{what} '{text}' is not an RFC 3339 time"))
}

/// A Zendesk ticket, its comments (embedded, or given beside it) and its requester's
/// email.
fn ticket(
    value: Value,
    comments: Option<Value>,
    users: &Users,
    line: u64,
) -> Result<SourceTicket, RowError> {
    let raw_id = value.get("id").and_then(id_text);
    let error = |message: String| RowError {
        line,
        id: raw_id.clone(),
        message,
    };
    let mut t: ZTicket =
        serde_json::from_value(value).map_err(|e| error(format!("not a ticket: {e}")))?;
    if let Some(c) = comments {
        t.comments = Some(serde_json::from_value(c).map_err(|e| error(format!("comments: {e}")))?);
    }
    let id = id_text(&t.id).ok_or_else(|| error("the ticket has no id".into()))?;
    let created_at = time(t.created_at.as_deref(), "created_at").map_err(&error)?;
    let requester = id_text(&t.requester_id);
    let requester_email = t
        .requester
        .as_ref()
        .and_then(|u| u.email.clone())
        .or_else(|| requester.as_ref().and_then(|r| users.get(r).cloned()));
    let assignee = id_text(&t.assignee_id).map(|a| {
        users
            .get(&a)
            .cloned()
            .unwrap_or_else(|| format!("Zendesk user {a}"))
    });
    let mut messages = Vec::new();
    for c in t.comments.unwrap_or_default() {
        let text = c.plain_body.or(c.body).unwrap_or_default();
        if text.trim().is_empty() {
            continue;
        }
        let at = match c.created_at.as_deref() {
            Some(_) => time(c.created_at.as_deref(), "a comment's created_at").map_err(&error)?,
            None => created_at,
        };
        let from_customer = requester.is_some() && id_text(&c.author_id) == requester;
        messages.push(SourceMessage {
            from_customer,
            text,
            at,
        });
    }
    if messages.is_empty() {
        // The description is the first comment's text when an export left comments out.
        match t.description.filter(|d| !d.trim().is_empty()) {
            Some(text) => messages.push(SourceMessage {
                from_customer: true,
                text,
                at: created_at,
            }),
            None => return Err(error(format!("ticket {id} has no comments"))),
        }
    }
    Ok(SourceTicket {
        id,
        created_at,
        requester_email,
        subject: t.subject.filter(|s| !s.trim().is_empty()),
        tags: t.tags,
        assignee,
        messages,
        line,
    })
}

/// A CSV row: ticket id, created at, requester email, subject, body, tags.
#[derive(Deserialize)]
struct CsvTicket {
    #[serde(default, alias = "id")]
    ticket_id: Option<String>,
    #[serde(default)]
    created_at: Option<String>,
    #[serde(default, alias = "email")]
    requester_email: Option<String>,
    #[serde(default)]
    subject: Option<String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    tags: Option<String>,
    #[serde(default)]
    assignee: Option<String>,
}

fn scan_csv(path: &Path, pass: Pass<'_>) -> std::io::Result<()> {
    let Pass::Tickets(_, visit) = pass else {
        return Ok(());
    };
    let mut rows = shop_import::rows::Rows::<CsvTicket>::open(path, shop_import::rows::Format::Csv)
        .map_err(|e| std::io::Error::other(e.message))?;
    while let Some((line, row)) = rows.next_row() {
        visit(
            row.map_err(|message| RowError {
                line,
                id: None,
                message,
            })
            .and_then(|row| csv_ticket(row, line)),
        );
    }
    Ok(())
}

fn csv_ticket(row: CsvTicket, line: u64) -> Result<SourceTicket, RowError> {
    let id = row.ticket_id.filter(|i| !i.trim().is_empty());
    let error = |message: String| RowError {
        line,
        id: id.clone(),
        message,
    };
    let ticket_id = id
        .clone()
        .ok_or_else(|| error("ticket_id is missing".into()))?;
    let created_at = time(row.created_at.as_deref(), "created_at").map_err(&error)?;
    let body = row
        .body
        .filter(|b| !b.trim().is_empty())
        .ok_or_else(|| error(format!("ticket {ticket_id} has no body")))?;
    let tags = row
        .tags
        .unwrap_or_default()
        .split([' ', ',', ';'])
        .filter(|t| !t.is_empty())
        .map(String::from)
        .collect();
    Ok(SourceTicket {
        id: ticket_id,
        created_at,
        requester_email: row.requester_email.filter(|e| !e.trim().is_empty()),
        subject: row.subject.filter(|s| !s.trim().is_empty()),
        tags,
        assignee: row.assignee.filter(|a| !a.trim().is_empty()),
        messages: vec![SourceMessage {
            from_customer: true,
            text: body,
            at: created_at,
        }],
        line,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tickets(format: HistoryFormat, text: &str) -> Vec<Result<SourceTicket, RowError>> {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("export");
        std::fs::write(&path, text).expect("the file");
        let mut users = Users::new();
        scan(&path, format, Pass::Users(&mut users)).expect("readable");
        let mut out = Vec::new();
        let mut visit = |t| out.push(t);
        scan(&path, format, Pass::Tickets(&users, &mut visit)).expect("readable");
        out
    }

    #[test]
    fn api_pages_and_export_lines_read_alike_with_users_before_or_after() {
        let export = r#"
{"id": 1, "created_at": "2026-11-20T09:00:00Z", "subject": "Charged twice", "requester_id": 77, "tags": ["billing"],
 "comments": [{"author_id": 77, "plain_body": "I paid twice", "created_at": "2026-11-20T09:00:00Z"},
              {"author_id": 5, "body": "Looking into it", "created_at": "2026-11-20T10:00:00Z"}]}
{"ticket": {"id": 2, "created_at": "2026-11-21T09:00:00Z", "requester_id": 78, "description": "x"},
 "comments": [{"author_id": 78, "body": "Refund please", "created_at": "2026-11-21T09:00:00Z"}],
 "users": [{"id": 78, "email": "b@example.com"}]}
{"tickets": [{"id": "3", "created_at": "2026-11-22T09:00:00Z", "requester_id": 77, "description": "Only a description"},
             {"id": 4, "created_at": "2026-11-22T09:00:00Z", "requester_id": 77}],
 "users": [], "next_page": null}
{"id": 77, "email": "a@example.com", "name": "Ann", "role": "end-user"}
"#;
        let got = tickets(HistoryFormat::Zendesk, export);
        assert_eq!(got.len(), 4, "{got:?}");
        let one = got[0].as_ref().expect("ticket 1");
        assert_eq!(one.requester_email.as_deref(), Some("a@example.com"));
        assert_eq!(one.messages.len(), 2);
        assert!(one.messages[0].from_customer && !one.messages[1].from_customer);
        let two = got[1].as_ref().expect("ticket 2");
        assert_eq!(two.requester_email.as_deref(), Some("b@example.com"));
        assert_eq!(two.messages[0].text, "Refund please");
        let three = got[2].as_ref().expect("ticket 3");
        assert_eq!(three.messages[0].text, "Only a description");
        let four = got[3].as_ref().expect_err("ticket 4 has nothing to read");
        assert_eq!(four.message, "ticket 4 has no comments");
    }

    #[test]
    fn a_csv_export_reads_one_message_a_ticket_and_names_bad_rows() {
        let csv = "ticket_id,created_at,requester_email,subject,body,tags\n\
                   T-1,2026-11-20T09:00:00Z,a@example.com,Twice,\"I was charged\ntwice\",billing vip\n\
                   T-2,yesterday,a@example.com,x,y,\n";
        let got = tickets(HistoryFormat::Csv, csv);
        let one = got[0].as_ref().expect("T-1");
        assert_eq!(one.tags, ["billing", "vip"]);
        assert_eq!(one.messages[0].text, "I was charged\ntwice");
        let bad = got[1].as_ref().expect_err("T-2");
        assert!(bad.message.contains("not an RFC 3339 time"), "{bad:?}");
    }
}
