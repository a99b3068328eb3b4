//! [`PolicyIndex`]: open or build the index, rebuild it with an atomic swap, search it.
//!
//! A [`Generation`] is one complete tantivy index with its reader, opened once
//! (`ReloadPolicy::Manual`: a generation never changes after it is built, so there is
//! nothing to reload; a rebuild produces a new generation with its own reader). Each
//! search takes a fresh searcher from the current generation's reader. The current
//! generation sits behind an `RwLock<Arc<_>>` held only long enough to clone the `Arc`,
//! so a search that started before a swap finishes on the generation it started with.
//!
//! This module does not parse policy files, translate queries or lay out directories
//! (see `glossary`, `query` and `store`).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use policy_engine::{PolicyDocument, PolicyStatus};
use sha2::{Digest, Sha256};
use tantivy::collector::{FilterCollector, TopDocs};
use tantivy::query::QueryParser;
use tantivy::schema::Value;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument};
use time::Date;

use crate::error::IndexError;
use crate::passage::Passage;
use crate::query::{self, VersionScope};
use crate::request::{SearchQuery, MAX_LIMIT};
use crate::schema::{self, Fields};
use crate::store::{self, GenerationMeta};
use crate::top;

/// Memory for the single indexing thread. One thread keeps document order, and so
/// tie-breaking between equal scores, deterministic.
const WRITER_MEMORY_BYTES: usize = 64 * 1024 * 1024;

/// How a filtered search finds its top sections: the answers are the same.
#[derive(Clone, Copy)]
enum Filtering {
    /// In tantivy's pruning loop, so block-max WAND applies (`top`).
    Pruning,
    /// Every matching section scored, then filtered: the path before pruning.
    EveryMatch,
}

/// One built index generation, opened for searching.
pub(crate) struct Generation {
    name: String,
    meta: GenerationMeta,
    reader: IndexReader,
    parser: QueryParser,
    fields: Fields,
    /// `meta.versions` packed for the filters, by ordinal.
    scopes: Vec<VersionScope>,
    /// Answers given by this generation, by what decides them. A generation
    /// never changes, so the same words, limit and versions in scope get the same
    /// passages; a rebuild is a new generation with an empty memory.
    answers: Mutex<HashMap<AnswerKey, Vec<Passage>>>,
}

/// What decides a search's answer within one generation: the words, how many, and
/// which versions are in scope (the filters already applied: the same in-force set is
/// the same answer, whatever day named it).
#[derive(PartialEq, Eq, Hash)]
struct AnswerKey {
    text: String,
    limit: usize,
    allowed: Option<Arc<[bool]>>,
}

/// Answers a generation keeps; past this it forgets them all and starts again (the
/// investigator asks a handful of questions; a flood of distinct ones gains nothing).
const ANSWERS_KEPT: usize = 1024;

impl Generation {
    /// Opens a complete generation; fails on anything unexpected (foreign schema, missing
    /// files, a section count that does not match the meta), which callers treat as
    /// "rebuild".
    fn open(root: &Path, name: &str, meta: GenerationMeta) -> Result<Self, IndexError> {
        let path = store::generation_path(root, name);
        let index = Index::open_in_dir(&path)?;
        let fields = schema::check(&index)?;
        schema::register(&index);
        let reader: IndexReader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let found = reader.searcher().num_docs();
        if found != meta.section_count as u64 {
            return Err(IndexError::Corrupt(format!(
                "{name} holds {found} sections, its meta says {}",
                meta.section_count
            )));
        }
        let parser = query::parser(&index, &fields);
        let scopes = meta.versions.iter().map(VersionScope::of).collect();
        Ok(Generation {
            name: name.to_string(),
            meta,
            reader,
            parser,
            fields,
            scopes,
            answers: Mutex::new(HashMap::new()),
        })
    }

    /// Writes `documents` into a new generation directory under `root` and opens it.
    /// Does not touch the pointer: the caller swaps.
    fn build(
        root: &Path,
        documents: &[PolicyDocument],
        policy_hash: String,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Self, IndexError> {
        let (name, path) = store::create_generation_dir(root)?;
        let built = write_sections(&path, documents, progress).and_then(|section_count| {
            let versions = documents.iter().map(|d| d.meta.clone()).collect();
            let meta = GenerationMeta::new(policy_hash, section_count, versions);
            store::write_meta(&path, &meta)?;
            Generation::open(root, &name, meta)
        });
        if built.is_err() {
            store::discard(&path);
        }
        built
    }
}

/// Writes one tantivy document per section and commits. `progress(done, total)` follows
/// the sections handed to the writer; the last call, `(total, total)`, comes only once
/// the commit is on disk, since the commit is where tantivy finishes indexing.
fn write_sections(
    path: &Path,
    documents: &[PolicyDocument],
    progress: &mut dyn FnMut(usize, usize),
) -> Result<usize, IndexError> {
    let (tantivy_schema, fields) = schema::build();
    let index = Index::create_in_dir(path, tantivy_schema)?;
    schema::register(&index);
    let mut writer: IndexWriter = index.writer_with_num_threads(1, WRITER_MEMORY_BYTES)?;
    let total = documents.iter().map(|d| d.sections.len()).sum();
    let mut count = 0;
    progress(0, total);
    for (ordinal, document) in (0u64..).zip(documents) {
        for section in query::section_documents(&fields, document, ordinal)? {
            writer.add_document(section)?;
            count += 1;
            if count < total {
                progress(count, total);
            }
        }
    }
    writer.commit()?;
    writer.wait_merging_threads()?;
    progress(count, total);
    Ok(count)
}

/// Policy search over a directory of index generations. `Send + Sync`; share it in an
/// `Arc`. Every method blocks (disk, CPU): call it from `spawn_blocking` in async code.
pub struct PolicyIndex {
    root: PathBuf,
    current: RwLock<Arc<Generation>>,
    /// One writer per process (STYLE): rebuilds through this value run one at a time.
    rebuild_lock: Mutex<()>,
}

impl std::fmt::Debug for PolicyIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let generation = self.generation();
        f.debug_struct("PolicyIndex")
            .field("root", &self.root)
            .field("generation", &generation.name)
            .field("policy_hash", &generation.meta.policy_hash)
            .field("section_count", &generation.meta.section_count)
            .finish()
    }
}

impl PolicyIndex {
    /// Opens the index under `dir`; (re)builds it when absent, when the recorded schema
    /// version differs, or when the hash of `documents` differs. A corrupt or foreign
    /// directory is rebuilt too (foreign files are left in place, never deleted).
    pub fn open_or_build(dir: &Path, documents: &[PolicyDocument]) -> Result<Self, IndexError> {
        std::fs::create_dir_all(dir).map_err(|e| IndexError::io(dir, e))?;
        let policy_hash = policy_hash(documents)?;
        let existing = store::read_pointer(dir).and_then(|name| {
            let meta = store::read_meta(&store::generation_path(dir, &name))?;
            if !meta.matches(&policy_hash) {
                // Schema or policies changed: rebuild, never patch.
                return Ok(None);
            }
            Generation::open(dir, &name, meta).map(Some)
        });
        let generation = match existing {
            Ok(Some(generation)) => generation,
            // Absent, stale, corrupt or foreign: all mean "build a fresh generation".
            Ok(None) | Err(_) => {
                check_unique(documents)?;
                let previous = store::read_pointer(dir).ok();
                let generation = Generation::build(dir, documents, policy_hash, &mut |_, _| {})?;
                store::write_pointer(dir, &generation.name)?;
                let mut keep = vec![generation.name.as_str()];
                keep.extend(previous.as_deref());
                store::remove_stale(dir, &keep);
                generation
            }
        };
        Ok(PolicyIndex {
            root: dir.to_path_buf(),
            current: RwLock::new(Arc::new(generation)),
            rebuild_lock: Mutex::new(()),
        })
    }

    /// Rebuilds into a new generation directory and swaps atomically; searches running
    /// during the rebuild keep working on the old generation. On error the old
    /// generation stays current.
    pub fn rebuild(&self, documents: &[PolicyDocument]) -> Result<(), IndexError> {
        self.rebuild_with_progress(documents, |_, _| {})
    }

    /// [`rebuild`](Self::rebuild), calling `progress(done, total)` as sections are
    /// indexed (`total` is the number of sections; `(total, total)` once they are
    /// committed). A plain callback, so this crate draws nothing: `refund-agent index`
    /// turns it into a progress bar.
    pub fn rebuild_with_progress(
        &self,
        documents: &[PolicyDocument],
        mut progress: impl FnMut(usize, usize),
    ) -> Result<(), IndexError> {
        let _one_writer = self
            .rebuild_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        check_unique(documents)?;
        let policy_hash = policy_hash(documents)?;
        let previous = self.generation().name.clone();
        let generation = Generation::build(&self.root, documents, policy_hash, &mut progress)?;
        store::write_pointer(&self.root, &generation.name)?;
        let name = generation.name.clone();
        // Swapping an Arc cannot leave the value half-written, so a poisoned lock
        // (a panic elsewhere while it was held) is safe to reuse.
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(generation);
        store::remove_stale(&self.root, &[&previous, &name]);
        Ok(())
    }

    /// Ranked passages for `query`. Bad query syntax is read leniently, never an error.
    pub fn search(&self, query: &SearchQuery) -> Result<Vec<Passage>, IndexError> {
        self.search_with(query, Filtering::Pruning)
    }

    /// [`search`](Self::search) as it was before A filtered search scores
    /// every matching section (`FilterCollector`). Kept as the oracle of the test that
    /// pins `search` to the same answers and for the benchmark's same-run A/B; not for
    /// answering users.
    #[doc(hidden)]
    pub fn search_filtering_every_match(
        &self,
        query: &SearchQuery,
    ) -> Result<Vec<Passage>, IndexError> {
        self.search_with(query, Filtering::EveryMatch)
    }

    /// The answer [`search`](Self::search) would give, when this generation has given it
    /// before: no index read, so a caller may skip the blocking hand-off.
    pub fn remembered(&self, query: &SearchQuery) -> Option<Vec<Passage>> {
        let generation = self.generation();
        let key = generation.key(query);
        generation.recall(&key)
    }

    fn search_with(
        &self,
        query: &SearchQuery,
        filtering: Filtering,
    ) -> Result<Vec<Passage>, IndexError> {
        let generation = self.generation();
        let key = generation.key(query);
        if let (Filtering::Pruning, Some(known)) = (filtering, generation.recall(&key)) {
            return Ok(known);
        }
        let passages = generation.search(query, filtering, key.allowed.clone())?;
        if let Filtering::Pruning = filtering {
            generation.keep(key, &passages);
        }
        Ok(passages)
    }
}

impl Generation {
    fn key(&self, query: &SearchQuery) -> AnswerKey {
        AnswerKey {
            text: query.text.clone(),
            limit: query.limit.min(MAX_LIMIT),
            allowed: query::allowed_versions(&self.scopes, query),
        }
    }

    fn recall(&self, key: &AnswerKey) -> Option<Vec<Passage>> {
        let answers = self.answers.lock().unwrap_or_else(PoisonError::into_inner);
        answers.get(key).cloned()
    }

    fn keep(&self, key: AnswerKey, passages: &[Passage]) {
        let mut answers = self.answers.lock().unwrap_or_else(PoisonError::into_inner);
        if answers.len() >= ANSWERS_KEPT {
            answers.clear();
        }
        answers.insert(key, passages.to_vec());
    }

    /// One search of this generation, `allowed` the versions in scope (`None`: all).
    fn search(
        &self,
        query: &SearchQuery,
        filtering: Filtering,
        allowed: Option<Arc<[bool]>>,
    ) -> Result<Vec<Passage>, IndexError> {
        let limit = query.limit.min(MAX_LIMIT);
        if limit == 0 {
            return Ok(Vec::new());
        }
        let Some(tantivy_query) = query::build(&self.parser, query)? else {
            return Ok(Vec::new());
        };
        let searcher = self.reader.searcher();
        let top_docs = TopDocs::with_limit(limit).order_by_score();
        let top = match allowed {
            // No filter: plain top-k, which lets tantivy skip blocks (block-max WAND).
            None => searcher.search(&*tantivy_query, &top_docs)?,
            Some(allowed) if !allowed.contains(&true) => return Ok(Vec::new()),
            // Filters are decided per policy version, once per query, and checked per
            // section with one fast-field read: exactly `PolicyMeta::in_force_on`
            // semantics; inside the pruning loop, so WAND still skips (see `top`), when
            // the query is a union of terms.
            Some(allowed) => match (filtering, query::Prunable::of(&*tantivy_query)) {
                (Filtering::Pruning, Some(prunable)) => {
                    top::top_in_scope(&searcher, &prunable, limit, &allowed)?
                }
                _ => {
                    let in_scope = move |ordinal: u64| {
                        usize::try_from(ordinal)
                            .ok()
                            .and_then(|i| allowed.get(i).copied())
                            .unwrap_or(false)
                    };
                    let filtered =
                        FilterCollector::new(schema::VERSION_ORD.to_string(), in_scope, top_docs);
                    searcher.search(&*tantivy_query, &filtered)?
                }
            },
        };
        let mut passages = Vec::with_capacity(top.len());
        for (score, address) in top {
            let stored: TantivyDocument = searcher.doc(address)?;
            passages.push(to_passage(&self.fields, &stored, score)?);
        }
        Ok(passages)
    }
}

impl PolicyIndex {
    /// Raw tantivy on this index, the baseline `search` is measured against:
    /// the same parser, fields and terms (the glossary's English for Chinese text), and
    /// the same query `search` runs: a union of terms laid out flat as `search` prunes it
    /// (`query::Prunable::flat`: one union of every clause, which tantivy's block-max
    /// WAND can skip through; the parser's union of one union per word it cannot), any
    /// other query as parsed. No filters, no second scoring and no passage building —
    /// plain top-`limit` by BM25 and a read of each hit's stored document. Returns how
    /// many hits it read. Not for answering users: it ignores which versions are in
    /// force.
    pub fn raw_tantivy_search(&self, text: &str, limit: usize) -> Result<usize, IndexError> {
        let generation = self.generation();
        let text = crate::glossary::translate(text);
        let (parsed, _syntax_errors) = generation.parser.parse_query_lenient(&text);
        let tantivy_query = match query::Prunable::of(&*parsed) {
            Some(prunable) => prunable.flat(),
            None => parsed,
        };
        let searcher = generation.reader.searcher();
        let top = searcher.search(
            &*tantivy_query,
            &TopDocs::with_limit(limit.max(1)).order_by_score(),
        )?;
        for (_, address) in &top {
            let _stored: TantivyDocument = searcher.doc(*address)?;
        }
        Ok(top.len())
    }

    /// SHA-256 (hex) of the indexed policy documents; see [`policy_hash`].
    pub fn policy_hash(&self) -> String {
        self.generation().meta.policy_hash.clone()
    }

    /// Number of indexed sections (tantivy documents).
    pub fn section_count(&self) -> usize {
        self.generation().meta.section_count
    }

    fn generation(&self) -> Arc<Generation> {
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }
}

/// SHA-256 over the documents' metadata and sections, in `(id, version)` order so the
/// order of the policy files does not matter. Each document is length-prefixed JSON of
/// `(meta, sections)`; the Markdown body is left out because the sections carry it.
pub fn policy_hash(documents: &[PolicyDocument]) -> Result<String, IndexError> {
    let mut sorted: Vec<&PolicyDocument> = documents.iter().collect();
    sorted.sort_by(|a, b| (&a.meta.id, a.meta.version).cmp(&(&b.meta.id, b.meta.version)));
    let mut hasher = Sha256::new();
    for document in sorted {
        let encoded = serde_json::to_vec(&(&document.meta, &document.sections))?;
        hasher.update((encoded.len() as u64).to_be_bytes());
        hasher.update(&encoded);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Two documents with the same `id@version` would make citations ambiguous.
fn check_unique(documents: &[PolicyDocument]) -> Result<(), IndexError> {
    let mut seen = HashSet::new();
    for document in documents {
        if !seen.insert((document.meta.id.as_str(), document.meta.version)) {
            return Err(IndexError::DuplicateDocument(document.meta.version_ref()));
        }
    }
    Ok(())
}

fn to_passage(
    fields: &Fields,
    stored: &TantivyDocument,
    score: f32,
) -> Result<Passage, IndexError> {
    let text = |field, name: &str| -> Result<String, IndexError> {
        stored
            .get_first(field)
            .and_then(|v| v.as_str().map(str::to_string))
            .ok_or_else(|| IndexError::Corrupt(format!("stored field {name} missing")))
    };
    let integer = |field, name: &str| -> Result<i64, IndexError> {
        let value = stored.get_first(field);
        value
            .as_ref()
            .and_then(|v| {
                v.as_i64()
                    .or_else(|| v.as_u64().and_then(|u| i64::try_from(u).ok()))
            })
            .ok_or_else(|| IndexError::Corrupt(format!("stored field {name} missing")))
    };
    let day = |julian: i64| -> Result<Date, IndexError> {
        i32::try_from(julian)
            .ok()
            .and_then(|j| Date::from_julian_day(j).ok())
            .ok_or_else(|| IndexError::Corrupt(format!("stored day {julian} out of range")))
    };
    let status = match text(fields.status, "status")?.as_str() {
        "published" => PolicyStatus::Published,
        "draft" => PolicyStatus::Draft,
        other => return Err(IndexError::Corrupt(format!("unknown status {other}"))),
    };
    let effective_to = match integer(fields.effective_to, "effective_to")? {
        schema::OPEN_ENDED => None,
        julian => Some(day(julian)?),
    };
    Ok(Passage {
        doc_id: text(fields.doc_id, "doc_id")?,
        version: u32::try_from(integer(fields.version, "version")?)
            .map_err(|_| IndexError::Corrupt("version out of range".into()))?,
        anchor: text(fields.anchor, "anchor")?,
        title: text(fields.title, "title")?,
        text: text(fields.text, "text")?,
        score,
        status,
        effective_from: day(integer(fields.effective_from, "effective_from")?)?,
        effective_to,
    })
}
