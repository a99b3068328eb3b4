//! What both binaries (`refund-agent` and `refund-evals`) do at the terminal, in a crate
//! of its own below them so neither needs the other and the workflow (`desk`) draws
//! nothing: the runtime a command runs on ([`block_on`]), and the
//! progress of the long offline commands (`index`, `shadow`, `eval`, `import`), drawn with
//! indicatif on stderr: one bar each, counting sections, tickets or scenarios, or one bar
//! per stage of a command that has several ([`Stages`]: `import`).
//!
//! indicatif's stderr target draws only when stderr is a terminal; piped or captured
//! (tests, CI, `2> log`) it draws nothing, so logs never fill with `\r` redraws.
//! The work itself (`rag-index`, import, shadow replay, the eval suite) never calls this: it
//! reports through a `FnMut(done, total)` callback and the command turns that into a bar.

use std::future::Future;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Runs a command to its end on a multi-threaded runtime; an error says what stopped it.
pub fn block_on(command: impl Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(command)
}

/// A bar on stderr, hidden when stderr is no tty.
pub struct Progress(ProgressBar);

impl Progress {
    /// A bar for `what` ("sections", "tickets", "scenarios"); its length is set by
    /// [`Progress::set`].
    pub fn bar(label: &'static str, what: &'static str) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        let template = format!("{label}: {{bar:40}} {{pos}}/{{len}} {what} ({{eta}} left)");
        // The template is built from literals above; a bad one is a programming error
        // caught by the first run, so fall back to the default style rather than fail.
        if let Ok(style) = ProgressStyle::with_template(&template) {
            bar.set_style(style);
        }
        Progress(bar)
    }

    /// A bar over a file's bytes (`import`): its length is the file's size.
    pub fn bytes(label: &'static str) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        let template = format!("{label}: {{bar:40}} {{bytes}}/{{total_bytes}} ({{eta}} left)");
        if let Ok(style) = ProgressStyle::with_template(&template) {
            bar.set_style(style);
        }
        Progress(bar)
    }

    /// `done` of `total` finished: the shape of the libraries' progress callbacks.
    pub fn set(&self, done: usize, total: usize) {
        self.0.set_length(total as u64);
        self.0.set_position(done as u64);
    }

    /// Removes the bar, so the summary line that follows starts on a clean line.
    pub fn finish(self) {
        self.0.finish_and_clear();
    }
}

/// The bars of a command that goes through stages one after another (`import`: reading,
/// checking, linking, writing): one bar on screen at a time, the last stage's cleared
/// when the next begins, so two bars never draw over each other's line.
pub struct Stages {
    current: Option<(&'static str, Progress)>,
    bar_for: fn(&'static str) -> Progress,
}

impl Stages {
    /// `bar_for(stage)` makes the bar of a stage when it begins.
    pub fn new(bar_for: fn(&'static str) -> Progress) -> Stages {
        Stages {
            current: None,
            bar_for,
        }
    }

    /// `done` of `total` of `stage` finished: the shape of the import's progress callback.
    pub fn set(&mut self, stage: &'static str, done: u64, total: u64) {
        if self.current.as_ref().map(|(s, _)| *s) != Some(stage) {
            if let Some((_, bar)) = self.current.take() {
                bar.finish();
            }
            self.current = Some((stage, (self.bar_for)(stage)));
        }
        if let Some((_, bar)) = &self.current {
            bar.set(done as usize, total as usize);
        }
    }

    /// Removes the last stage's bar.
    pub fn finish(self) {
        if let Some((_, bar)) = self.current {
            bar.finish();
        }
    }
}
