//! What the test modules share: the answer their models give and a clock that stands
//! still.

use harness::{Answer, BoxFuture, Clock, Model, ModelContext, ToolCall, Turn};
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Note {
    pub text: String,
}

impl Answer for Note {
    const EVENT: &'static str = "note";
}

pub struct Fixed;

impl Clock for Fixed {
    fn now_ms(&self) -> i64 {
        0
    }
}

/// A model whose turn follows from what it sees, as a real one's would: reads the
/// records it names (one `read` call each), then answers "done". Asking it again after
/// a crash gives the same turn.
pub struct Reader(pub &'static [&'static str]);

impl Model<Note> for Reader {
    fn name(&self) -> String {
        "reader".into()
    }

    fn next_turn<'a>(
        &'a self,
        ctx: &'a ModelContext<'a>,
    ) -> BoxFuture<'a, anyhow::Result<Turn<Note>>> {
        let turn = if ctx.history.is_empty() {
            reads(self.0)
        } else {
            note("done")
        };
        Box::pin(async move { Ok(turn) })
    }
}

/// A turn of `read` calls, one per id (the call's id is the record's).
pub fn reads(ids: &[&str]) -> Turn<Note> {
    Turn::ToolCalls {
        calls: ids
            .iter()
            .map(|id| ToolCall {
                id: id.to_string(),
                name: "read".into(),
                arguments: json!({ "id": id }),
            })
            .collect(),
    }
}

/// An answer.
pub fn note(text: &str) -> Turn<Note> {
    Turn::Answer {
        answer: Note { text: text.into() },
    }
}
