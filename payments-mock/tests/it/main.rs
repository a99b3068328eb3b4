//! The payments-mock crate's integration tests, in one binary (one link instead of one per
//! file); each module is one area. Run one with a filter: `cargo test -p payments-mock --test it <module>::`.

mod faults;
mod http;
