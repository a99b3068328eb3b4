//! The published policies in force: the set an instance decides with and how it follows
//! the database (`live`), the versions stored there (`versions`: the source of truth once
//! seeded from `fixtures/policies/`; writer of `policy_versions`), the sweep of open
//! approvals a new generation decides differently (`follow`), and the policy files and
//! index they are seeded and searched from. Drafting, what-if and publishing a new
//! version are the `authoring` crate's, above this one.
//!
//! Each `RP-xxx-vN.md` may have a `RP-xxx-vN.rules.toml` beside it holding that
//! version's thresholds, windows and periods.

pub mod follow;
pub mod live;
pub mod versions;

use std::path::Path;

use anyhow::Context;
use policy_engine::{PolicyDocument, PolicySet, PolicySource, PolicyStatus};
use rag_index::PolicyIndex;
use time::Date;

pub use follow::Publisher;
pub use live::Policies;

use store::Db;

pub fn load_policy_set(dir: &Path) -> anyhow::Result<PolicySet> {
    let sources = read_sources(dir)?;
    PolicySet::from_sources(sources)
        .map_err(|e| anyhow::anyhow!("policies in {}: {e}", dir.display()))
}

/// The policy files in `dir` as sources for a `PolicySet`, sorted by file name: what
/// `load_policy_set` builds from, and what `versions` seeds an empty database with.
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

/// Seeds an empty database from the files in `dir`, then builds the set from the
/// database (`build_state`).
pub async fn load(db: &Db, dir: &Path) -> anyhow::Result<Policies> {
    versions::seed_if_empty(db, dir).await?;
    let sources = versions::sources(db).await?;
    Policies::from_sources(sources).map_err(|e| anyhow::anyhow!("stored policies: {e}"))
}

/// Published versions of one document may not overlap (`PolicySet`), yet a published
/// version is immutable: a later published version ends the one before it the day
/// before it starts. The end is written into the earlier version's front matter as it
/// is read, never stored; sources that already end in time (the seeded files) are
/// returned as they are.
pub fn supersede(mut sources: Vec<PolicySource>) -> Vec<PolicySource> {
    let mut published: Vec<(usize, String, Date, Option<Date>)> = sources
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let meta = PolicyDocument::parse(&s.markdown).ok()?.meta;
            (meta.status == PolicyStatus::Published).then_some((
                i,
                meta.id,
                meta.effective_from,
                meta.effective_to,
            ))
        })
        .collect();
    published.sort_by(|a, b| (&a.1, a.2).cmp(&(&b.1, b.2)));
    for pair in published.windows(2) {
        let ((i, id, _, to), (_, next_id, next_from, _)) = (&pair[0], &pair[1]);
        if id != next_id || to.is_some_and(|to| to < *next_from) {
            continue;
        }
        let Some(end) = next_from.previous_day() else {
            continue;
        };
        let markdown = &sources[*i].markdown;
        sources[*i].markdown =
            set_front_matter(markdown, "effective_to", Some(&format!("\"{end}\"")));
    }
    sources
}

/// `sources` with `source` in place of any stored version of the same `doc@version`
/// (a seeded draft file of the number being drafted or published).
pub fn with_version(mut sources: Vec<PolicySource>, source: PolicySource) -> Vec<PolicySource> {
    let key = |s: &PolicySource| {
        PolicyDocument::parse(&s.markdown)
            .ok()
            .map(|d| (d.meta.id, d.meta.version))
    };
    let new = key(&source);
    sources.retain(|s| new.is_none() || key(s) != new);
    sources.push(source);
    sources
}

/// `markdown` with front matter `key = value` (`value` a TOML literal) set, replacing
/// the line that sets it or added after `effective_from`; `None` removes the line.
pub fn set_front_matter(markdown: &str, key: &str, value: Option<&str>) -> String {
    let Some(rest) = markdown.strip_prefix("+++") else {
        return markdown.to_string();
    };
    let Some(end) = rest.find("\n+++") else {
        return markdown.to_string();
    };
    let (front, body) = rest.split_at(end);
    let is_key = |line: &str| {
        line.strip_prefix(key)
            .is_some_and(|r| r.trim_start().starts_with('='))
    };
    let line = value.map(|v| format!("{key} = {v}"));
    let mut lines: Vec<String> = Vec::new();
    let mut done = false;
    for current in front.split('\n') {
        if is_key(current) {
            lines.extend(line.clone());
            done = true;
        } else {
            lines.push(current.to_string());
        }
    }
    if !done {
        if let Some(line) = line {
            let at = lines
                .iter()
                .position(|l| l.starts_with("effective_from"))
                .map_or(lines.len(), |i| i + 1);
            lines.insert(at, line);
        }
    }
    format!("+++{}{body}", lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources() -> Vec<PolicySource> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/policies");
        read_sources(&dir).expect("fixture policies")
    }

    #[test]
    fn the_seeded_files_are_not_changed_by_supersede() {
        assert_eq!(supersede(sources()), sources());
    }

    #[test]
    fn a_published_successor_ends_its_predecessor_the_day_before() {
        let mut all = sources();
        let v2 = all
            .iter()
            .find(|s| s.name == "RP-001-v2.md")
            .expect("v2")
            .clone();
        let v3 = set_front_matter(&v2.markdown, "version", Some("3"));
        let v3 = set_front_matter(&v3, "effective_from", Some("\"2027-03-01\""));
        all.retain(|s| s.name != "RP-001-v3-draft.md");
        all.push(PolicySource {
            name: "RP-001-v3.md".into(),
            markdown: v3,
            rules: None,
        });
        let set = policy_engine::PolicySet::from_sources(supersede(all)).expect("a valid set");
        let on = |d: &str| {
            set.in_force("RP-001", policy_engine::parse_date(d).expect("date"))
                .map(|d| d.meta.version)
        };
        assert_eq!((on("2027-02-28"), on("2027-03-01")), (Some(2), Some(3)));
    }

    #[test]
    fn set_front_matter_replaces_inserts_and_removes_one_line() {
        let text =
            "+++\nid = \"X\"\neffective_from = \"2027-01-01\"\nstatus = \"draft\"\n+++\n\n# X\n";
        let replaced = set_front_matter(text, "status", Some("\"published\""));
        assert_eq!(replaced, text.replace("\"draft\"", "\"published\""));
        let inserted = set_front_matter(text, "effective_to", Some("\"2027-02-01\""));
        assert!(
            inserted
                .contains("effective_from = \"2027-01-01\"\neffective_to = \"2027-02-01\"\nstatus"),
            "{inserted}"
        );
        assert_eq!(set_front_matter(&inserted, "effective_to", None), text);
    }
}
