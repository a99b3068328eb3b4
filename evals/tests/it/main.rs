//! The refund-evals crate's integration tests, in one binary (one link instead of one per
//! file); each module is one area. Run one with a filter: `cargo test -p refund-evals --test it <module>::`.

mod cli;
mod common;
mod history;
mod mail_dev;
mod suite;
mod zendesk;
