//! [`super::LlmModel`] as one of the sub-agents' readers: the reader's own
//! prompt and tool subset, and one answer tool, `submit_findings`, whose arguments are
//! the reader's [`Findings`]. The transport, retries and the completion's parsing are
//! the investigator's (`super`).

use harness::{Reply, Turn};
use serde_json::{json, Value};

use super::{answer, completion_calls, LlmModel, SUBMIT_FINDINGS};
use crate::agent::findings::{Findings, Reader};
use crate::agent::{BoxFuture, ModelContext};

/// [`LlmModel`] as a sub-agent's reader (see [`LlmModel::reader`]).
impl LlmModel {
    /// The same model as one of the sub-agents' readers: its own prompt, and
    /// `submit_findings` as its only answer tool.
    pub fn reader(&self, reader: Reader) -> LlmReader<'_> {
        LlmReader { llm: self, reader }
    }
}

pub struct LlmReader<'a> {
    llm: &'a LlmModel,
    reader: Reader,
}

impl LlmReader<'_> {
    async fn reply(&self, ctx: &ModelContext<'_>) -> anyhow::Result<Reply<Findings>> {
        let body = self
            .llm
            .body(ctx, self.reader.prompt(), vec![findings_tool()]);
        let response = self.llm.post(&body).await?;
        parse_findings(&response)
    }
}

impl harness::Model<Findings> for LlmReader<'_> {
    fn name(&self) -> String {
        format!("llm:{}", self.llm.model)
    }

    fn next_turn<'a>(
        &'a self,
        ctx: &'a ModelContext<'a>,
    ) -> BoxFuture<'a, anyhow::Result<Turn<Findings>>> {
        Box::pin(async move { self.reply(ctx).await.map(|r| r.turn) })
    }

    fn next_reply<'a>(
        &'a self,
        ctx: &'a ModelContext<'a>,
    ) -> BoxFuture<'a, anyhow::Result<Reply<Findings>>> {
        Box::pin(self.reply(ctx))
    }
}

/// The readers' answer tool. Not an action: it ends a reader's run with its findings.
pub fn findings_tool() -> Value {
    let evidence = json!({ "type": "object",
        "properties": {
            "call_id": { "type": "string", "description": "The id of the tool call that returned the record." },
            "record_id": { "type": "string", "description": "The record's id as the tool returned it." }
        },
        "required": ["call_id", "record_id"], "additionalProperties": false });
    json!({ "type": "function", "function": {
        "name": SUBMIT_FINDINGS,
        "description": "End your reading with what you found. It decides nothing and moves no money.",
        "parameters": {
            "type": "object",
            "properties": {
                "summary": { "type": "string", "maxLength": 2000 },
                "evidence": { "type": "array", "items": evidence },
                "citations": { "type": "array", "items": { "type": "string", "description": "doc@version#section from search_policy." } }
            },
            "required": ["summary", "evidence", "citations"],
            "additionalProperties": false
        }
    } })
}

/// Maps a chat-completions response to a reader's turn: `submit_findings` ends it.
pub fn parse_findings(response: &Value) -> anyhow::Result<Reply<Findings>> {
    let (calls, usage) = completion_calls(response, "findings")?;
    let turn = match calls.iter().find(|c| c.name == SUBMIT_FINDINGS) {
        Some(call) => Turn::Answer {
            answer: answer(SUBMIT_FINDINGS, &call.arguments)?,
        },
        None => Turn::ToolCalls { calls },
    };
    Ok(Reply { turn, usage })
}
