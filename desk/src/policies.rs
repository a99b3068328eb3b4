//! Loading the policy set and the policy index from `fixtures/policies/`.
//!
//! Each `RP-xxx-vN.md` may have a `RP-xxx-vN.rules.toml` beside it holding that
//! version's thresholds, windows and periods.

use std::path::Path;

use anyhow::Context;
use policy_engine::{PolicySet, PolicySource};
use rag_index::PolicyIndex;

pub fn load_policy_set(dir: &Path) -> anyhow::Result<PolicySet> {
    let sources = read_sources(dir)?;
    PolicySet::from_sources(sources)
        .map_err(|e| anyhow::anyhow!("policies in {}: {e}", dir.display()))
}

/// The policy files in `dir` as sources for a `PolicySet`, sorted by file name: what
/// `load_policy_set` builds from, and what `authoring` seeds an empty database with.
pub fn read_sources(dir: &Path) -> anyhow::Result<Vec<PolicySource>> {
    // An installed binary (`cargo install --path app`) run away from the
    // checkout finds no fixtures; say which setting points at them instead of a bare
    // "No such file or directory".
    if !dir.is_dir() {
        anyhow::bail!(
            "no policies at {}: set FIXTURES_DIR (or --fixtures-dir) to a fixtures directory holding policies/ (the repository's fixtures/)",
            dir.display()
        );
    }
    let mut sources = Vec::new();
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("reading policies from {}", dir.display()))?;
    for entry in entries {
        let path = entry?.path();
        if path.extension().and_then(|e| e.to_str()) != Some("md") {
            continue;
        }
        let markdown = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let rules_path = path.with_extension("rules.toml");
        let rules = if rules_path.exists() {
            Some(std::fs::read_to_string(&rules_path)?)
        } else {
            None
        };
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        sources.push(PolicySource {
            name,
            markdown,
            rules,
        });
    }
    sources.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(sources)
}

/// Opens the index under `index_dir`, rebuilding it if the policies or schema changed.
pub fn open_index(index_dir: &Path, policies: &PolicySet) -> anyhow::Result<PolicyIndex> {
    std::fs::create_dir_all(index_dir)?;
    PolicyIndex::open_or_build(index_dir, policies.documents())
        .map_err(|e| anyhow::anyhow!("policy index: {e}"))
}
