//! The harness crate's integration tests, in one binary (one link instead of one per
//! file); each module is one area. Run one with a filter: `cargo test -p harness --test it <module>::`.

mod common;
mod run_loop;
mod spans;
mod turns;
