//! On-disk layout of the index: generation directories and the pointer that names the
//! current one.
//!
//! ```text
//! DIR/CURRENT           "gen-000007\n": the generation searches open
//! DIR/gen-000007/       a complete tantivy index + rag-index.json (its meta)
//! DIR/gen-000006/       the previous generation, kept until the next swap
//! ```
//!
//! A generation is written in full (tantivy commit, then `rag-index.json`, both synced)
//! before `CURRENT` is replaced by rename, which is atomic on POSIX file systems; a crash
//! at any point leaves the old pointer and the old generation intact. This module moves
//! files and reads the small JSON meta; it knows nothing about tantivy. It never deletes
//! anything but `gen-N` directories older than the generation it just replaced: foreign
//! files in `DIR` are left alone.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use policy_engine::PolicyMeta;
use serde::{Deserialize, Serialize};

use crate::error::IndexError;

/// Version of the on-disk layout and of the tantivy schema and analyzer. Bump it on any
/// change to `schema.rs` or to what is indexed; existing indexes are then rebuilt.
/// 2: tantivy 0.27, whose English stemmer is `frostem` rather than `rust-stemmers`; terms
/// written by the old stemmer are not trusted to match queries stemmed by the new one.
pub const SCHEMA_VERSION: u32 = 2;

const POINTER: &str = "CURRENT";
const META_FILE: &str = "rag-index.json";
const GENERATION_PREFIX: &str = "gen-";
/// Tag in the meta file, so a directory written by something else is never mistaken
/// for ours.
const FORMAT: &str = "rag-index policy sections";

/// What a generation records about itself (`rag-index.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct GenerationMeta {
    pub format: String,
    pub schema_version: u32,
    pub policy_hash: String,
    pub section_count: usize,
    /// The indexed policy versions, in ordinal order: the filter table for searches.
    pub versions: Vec<PolicyMeta>,
}

impl GenerationMeta {
    pub(crate) fn new(
        policy_hash: String,
        section_count: usize,
        versions: Vec<PolicyMeta>,
    ) -> Self {
        GenerationMeta {
            format: FORMAT.into(),
            schema_version: SCHEMA_VERSION,
            policy_hash,
            section_count,
            versions,
        }
    }

    /// True when this generation was written by us, with this schema, for these policies.
    pub(crate) fn matches(&self, policy_hash: &str) -> bool {
        self.format == FORMAT
            && self.schema_version == SCHEMA_VERSION
            && self.policy_hash == policy_hash
    }
}

fn generation_number(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(GENERATION_PREFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Reads `DIR/CURRENT`; any content other than a generation name is corruption.
pub(crate) fn read_pointer(root: &Path) -> Result<String, IndexError> {
    let path = root.join(POINTER);
    let content = fs::read_to_string(&path).map_err(|e| IndexError::io(&path, e))?;
    let name = content.trim();
    if generation_number(name).is_none() {
        return Err(IndexError::Corrupt(format!(
            "{} does not name a generation",
            path.display()
        )));
    }
    Ok(name.to_string())
}

/// Points `DIR/CURRENT` at `name`: write a temporary file, sync it, rename it over the
/// pointer, sync the directory.
pub(crate) fn write_pointer(root: &Path, name: &str) -> Result<(), IndexError> {
    let tmp = root.join(format!("{POINTER}.{}.tmp", std::process::id()));
    write_synced(&tmp, format!("{name}\n").as_bytes())?;
    let target = root.join(POINTER);
    fs::rename(&tmp, &target).map_err(|e| IndexError::io(&target, e))?;
    sync_dir(root)
}

/// Creates the next free `gen-N` directory. `create_dir` fails when the name exists, so
/// two builders (threads or processes) never share a directory.
pub(crate) fn create_generation_dir(root: &Path) -> Result<(String, PathBuf), IndexError> {
    let mut next = generations(root)?
        .into_iter()
        .map(|(number, _)| number + 1)
        .max()
        .unwrap_or(1);
    loop {
        let name = format!("{GENERATION_PREFIX}{next:06}");
        let path = root.join(&name);
        match fs::create_dir(&path) {
            Ok(()) => return Ok((name, path)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => next += 1,
            Err(e) => return Err(IndexError::io(&path, e)),
        }
    }
}

pub(crate) fn generation_path(root: &Path, name: &str) -> PathBuf {
    root.join(name)
}

pub(crate) fn read_meta(generation: &Path) -> Result<GenerationMeta, IndexError> {
    let path = generation.join(META_FILE);
    let bytes = fs::read(&path).map_err(|e| IndexError::io(&path, e))?;
    Ok(serde_json::from_slice(&bytes)?)
}

/// Written last: a generation without it is incomplete and never opened.
pub(crate) fn write_meta(generation: &Path, meta: &GenerationMeta) -> Result<(), IndexError> {
    let path = generation.join(META_FILE);
    write_synced(&path, &serde_json::to_vec_pretty(meta)?)?;
    sync_dir(generation)
}

/// Removes `gen-N` directories numbered below every name in `keep`. Newer directories
/// may belong to a build in progress elsewhere and are left alone. Best effort: a
/// directory that cannot be removed now is removed by a later swap.
pub(crate) fn remove_stale(root: &Path, keep: &[&str]) {
    let Some(oldest_kept) = keep.iter().filter_map(|n| generation_number(n)).min() else {
        return;
    };
    let Ok(all) = generations(root) else {
        return;
    };
    for (number, path) in all {
        if number < oldest_kept {
            // Searchers of this process still holding an old generation keep working:
            // their files stay readable until closed (POSIX unlink semantics).
            let _ = fs::remove_dir_all(&path);
        }
    }
}

/// Removes one directory we created but could not finish.
pub(crate) fn discard(path: &Path) {
    let _ = fs::remove_dir_all(path);
}

fn generations(root: &Path) -> Result<Vec<(u64, PathBuf)>, IndexError> {
    let entries = fs::read_dir(root).map_err(|e| IndexError::io(root, e))?;
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| IndexError::io(root, e))?;
        if let Some(number) = entry.file_name().to_str().and_then(generation_number) {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                found.push((number, entry.path()));
            }
        }
    }
    Ok(found)
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), IndexError> {
    let mut file = fs::File::create(path).map_err(|e| IndexError::io(path, e))?;
    file.write_all(bytes).map_err(|e| IndexError::io(path, e))?;
    file.sync_all().map_err(|e| IndexError::io(path, e))
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> Result<(), IndexError> {
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| IndexError::io(dir, e))
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> Result<(), IndexError> {
    // Directories cannot be opened for syncing on this platform; rename is still atomic.
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_names_are_recognised_strictly() {
        assert_eq!(generation_number("gen-000012"), Some(12));
        assert_eq!(generation_number("gen-"), None);
        assert_eq!(generation_number("gen-12a"), None);
        assert_eq!(generation_number("generation"), None);
    }

    #[test]
    fn pointer_round_trips_and_rejects_garbage() {
        let dir = tempfile::tempdir().unwrap();
        write_pointer(dir.path(), "gen-000003").unwrap();
        assert_eq!(read_pointer(dir.path()).unwrap(), "gen-000003");
        fs::write(dir.path().join(POINTER), "../../etc").unwrap();
        assert!(matches!(
            read_pointer(dir.path()),
            Err(IndexError::Corrupt(_))
        ));
    }

    #[test]
    fn generation_dirs_are_numbered_upwards_and_stale_ones_removed() {
        let dir = tempfile::tempdir().unwrap();
        let (a, _) = create_generation_dir(dir.path()).unwrap();
        let (b, _) = create_generation_dir(dir.path()).unwrap();
        let (c, _) = create_generation_dir(dir.path()).unwrap();
        assert_eq!(
            (a.as_str(), b.as_str(), c.as_str()),
            ("gen-000001", "gen-000002", "gen-000003")
        );
        fs::write(dir.path().join("notes.txt"), "foreign").unwrap();
        remove_stale(dir.path(), &[&b, &c]);
        assert!(!dir.path().join(&a).exists());
        assert!(dir.path().join(&b).exists() && dir.path().join(&c).exists());
        assert!(dir.path().join("notes.txt").exists());
    }
}
