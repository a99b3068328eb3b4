//! No code: this crate only asks for dependency features (see its `Cargo.toml`), so
//! `cargo build -p app` and the workspace's test build compile shared crates once.
