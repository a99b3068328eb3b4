//! What an import says back, shared by its steps (`import`, `link`): why it wrote
//! nothing ([`ImportError`]), how customers were linked to the provider ([`Links`]), and
//! where it reports progress ([`Progress`]). Plain types: no I/O.

use serde::Serialize;

use crate::rows::RowError;
use payments_adapter::ProviderError;

/// Why an import wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file cannot be read at all (missing, no header row).
    #[error("{0}")]
    File(String),
    /// Some rows are bad: each with its line. Nothing was imported.
    #[error("{count} bad rows; nothing was imported")]
    Rows { errors: Vec<RowError>, count: u64 },
    /// The provider could not be asked (linking by email, checking a given customer).
    #[error("the payment provider could not be asked: {0}; nothing was imported")]
    Provider(String),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<sqlx::Error> for ImportError {
    fn from(e: sqlx::Error) -> Self {
        ImportError::Internal(e.into())
    }
}

/// How the imported customers are linked to provider customers.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Links {
    /// By the `provider_customer_id` the file gave (checked at the provider).
    pub given: u64,
    /// By email, through the provider's customer list.
    pub by_email: u64,
    /// Already linked in the desk, no id given: the link is kept.
    pub kept: u64,
    /// No provider customer has the email (or no provider was asked): not linked, so
    /// their cases see no charges and a paid order goes to a person.
    pub unlinked: u64,
    /// Several provider customers have the email: not linked, a person links it.
    pub ambiguous: u64,
    /// The provider customer found by email is already another customer's: not linked.
    pub conflicts: u64,
    /// The first customers left unlinked, for the summary.
    pub unlinked_ids: Vec<String>,
}

/// Where an import reports its progress: `(stage, done, total)`, the stage `reading`
/// (bytes of the file) or `linking` (customers asked about).
pub type Progress<'a> = &'a mut (dyn FnMut(&'static str, u64, u64) + Send);

/// A provider failure while importing: nothing is written, say why.
pub(crate) fn provider_failed(e: ProviderError) -> ImportError {
    ImportError::Provider(e.to_string())
}
