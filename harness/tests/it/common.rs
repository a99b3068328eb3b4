//! What the test modules share: the answer their models give and a clock that stands
//! still.

use harness::{Answer, Clock};
use serde::{Deserialize, Serialize};

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
