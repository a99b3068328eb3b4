//! The policy set an instance decides with, and how it follows the database.
//!
//! `Policies` is what `Services` holds: a snapshot of the current generation (a
//! `PolicySet` and the hash of the sources it was built from) plus the cell every copy
//! of the state shares. Cloning takes the cell's current generation, so each request
//! (axum clones the state per request) and each worker pass works on one consistent
//! set from start to end, and a swap is seen by the next one. `refresh` is the only
//! writer of the cell: it notices a new hash in `policy_versions`, rebuilds the index
//! into a new generation directory (`PolicyIndex::rebuild`: searches meanwhile use the
//! old generation) and then swaps the set.

use std::ops::Deref;
use std::sync::{Arc, PoisonError, RwLock};

use policy_engine::{PolicySet, PolicySource};
use rag_index::PolicyIndex;

use super::versions;
use crate::error::{DomainError, DomainResult};
use store::Db;

struct Generation {
    set: Arc<PolicySet>,
    hash: String,
    /// The policy index's hash of this set's documents, made on first need (`/readyz`
    /// asks on every probe; hashing every section each time was 7% of its CPU).
    index_hash: std::sync::OnceLock<Option<String>>,
}

struct Cell {
    current: RwLock<Arc<Generation>>,
    /// One refresh at a time per process, so an older set never lands after a newer;
    /// it holds the `versions::marker` last seen.
    refreshing: tokio::sync::Mutex<Option<(i64, i64)>>,
    /// The hash of the generation whose open approvals this process last checked
    /// (`publish::follow`), held while checking; at start, the generation it started on.
    swept: tokio::sync::Mutex<String>,
}

pub struct Policies {
    cell: Arc<Cell>,
    snapshot: Arc<Generation>,
}

impl Clone for Policies {
    /// A copy sees the generation current now, not the one this copy was taken at.
    fn clone(&self) -> Self {
        Policies {
            cell: self.cell.clone(),
            snapshot: self.cell.load(),
        }
    }
}

impl Deref for Policies {
    type Target = PolicySet;
    fn deref(&self) -> &PolicySet {
        &self.snapshot.set
    }
}

impl std::fmt::Debug for Policies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policies")
            .field("hash", &self.snapshot.hash)
            .finish()
    }
}

impl Cell {
    fn load(&self) -> Arc<Generation> {
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Policies {
    /// A set built from `sources` (the database's, or files' for offline tools).
    pub fn from_sources(
        sources: Vec<PolicySource>,
    ) -> Result<Policies, policy_engine::PolicyError> {
        let hash = versions::sources_hash(&sources);
        let set = PolicySet::from_sources(super::supersede(sources))?;
        let generation = Arc::new(Generation {
            set: Arc::new(set),
            hash: hash.clone(),
            index_hash: Default::default(),
        });
        Ok(Policies {
            cell: Arc::new(Cell {
                current: RwLock::new(generation.clone()),
                refreshing: tokio::sync::Mutex::new(None),
                swept: tokio::sync::Mutex::new(hash),
            }),
            snapshot: generation,
        })
    }

    /// The set of this snapshot, to hand to work that outlives a borrow.
    pub fn set(&self) -> Arc<PolicySet> {
        self.snapshot.set.clone()
    }

    /// The hash the policy index records for this snapshot's documents
    /// (`rag_index::policy_hash`), made once per generation; `None` when they cannot be
    /// hashed.
    pub fn index_hash(&self) -> Option<&str> {
        self.snapshot
            .index_hash
            .get_or_init(|| rag_index::policy_hash(self.snapshot.set.documents()).ok())
            .as_deref()
    }

    /// The hash of the sources this snapshot was built from.
    pub fn sources_hash(&self) -> &str {
        &self.snapshot.hash
    }

    /// The current generation and the lock over the hash of the one last swept: the
    /// caller checks the open approvals against the generation, then writes its hash.
    /// One sweep at a time per process.
    pub async fn sweep_lock(&self) -> (tokio::sync::MutexGuard<'_, String>, Policies) {
        let swept = self.cell.swept.lock().await;
        (swept, self.clone())
    }

    /// Whether the database holds other policies than the cell: if so, rebuilds the
    /// index into a new generation, then swaps the set. Returns whether it swapped.
    /// Called by every worker pass (each instance on its own) and after a publish.
    pub async fn refresh(&self, db: &Db, index: &Arc<PolicyIndex>) -> DomainResult<bool> {
        let mut seen = self.cell.refreshing.lock().await;
        let marker = versions::marker(db).await?;
        if *seen == Some(marker) {
            return Ok(false);
        }
        let sources = versions::sources(db).await?;
        let hash = versions::sources_hash(&sources);
        if hash == self.cell.load().hash {
            *seen = Some(marker);
            return Ok(false);
        }
        let set = PolicySet::from_sources(super::supersede(sources))
            .map_err(|e| DomainError::Internal(anyhow::anyhow!("stored policies: {e}")))?;
        let documents = set.documents().to_vec();
        let index = index.clone();
        tokio::task::spawn_blocking(move || index.rebuild(&documents))
            .await
            .map_err(|e| DomainError::Internal(e.into()))?
            .map_err(|e| DomainError::Internal(anyhow::anyhow!("policy index: {e}")))?;
        *self
            .cell
            .current
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(Generation {
            set: Arc::new(set),
            hash: hash.clone(),
            index_hash: Default::default(),
        });
        *seen = Some(marker);
        tracing::info!(policy_sources = %hash, "policies changed: index rebuilt, set swapped");
        Ok(true)
    }
}
