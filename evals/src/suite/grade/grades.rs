//! The graders' verdicts, soft and hard, as they are checked.

use super::super::report::GraderResult;

/// The graders' verdicts so far, and the hard violations among them.
#[derive(Default)]
pub(super) struct Grades {
    pub(super) graders: Vec<GraderResult>,
    pub(super) hard: Vec<String>,
}

impl Grades {
    /// A grader passes when it found no failure; then it says `ok_message`.
    pub(super) fn check(
        &mut self,
        name: &str,
        failures: Vec<String>,
        ok_message: impl Into<String>,
    ) {
        let passed = failures.is_empty();
        self.graders.push(GraderResult {
            name: name.into(),
            passed,
            message: if passed {
                ok_message.into()
            } else {
                failures.join("; ")
            },
        });
    }

    /// A grader whose `hard` failures are hard violations too (they fail the run
    /// whatever else passed); `soft` ones only fail the grader.
    pub(super) fn check_hard(
        &mut self,
        name: &str,
        hard: Vec<String>,
        soft: Vec<String>,
        ok_message: impl Into<String>,
    ) {
        self.hard.extend(hard.iter().cloned());
        let failures = hard.into_iter().chain(soft).collect();
        self.check(name, failures, ok_message);
    }
}
