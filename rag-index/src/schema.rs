//! The tantivy schema of the policy index and the English analyzer it uses.
//!
//! One tantivy document per policy section. This module only describes fields; it does
//! not open directories, write documents or build queries. Any change here that alters
//! what is stored or how text is analysed must bump [`crate::store::SCHEMA_VERSION`]: an index
//! with another version is rebuilt from the policy files, never patched.

use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions, FAST,
    INDEXED, STORED, STRING,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
};
use tantivy::Index;

use crate::error::IndexError;

/// Name under which [`analyzer`] is registered on every index we open or create.
pub(crate) const ANALYZER: &str = "policy_en";

/// Fast field holding the version ordinal, by name (the filter collector looks it up).
pub(crate) const VERSION_ORD: &str = "version_ord";

/// Stored value of `effective_to` for a version with no last day.
pub(crate) const OPEN_ENDED: i64 = i64::MAX;

/// English words that carry no meaning for policy search. Deliberately short and free of
/// negations ("not", "no", "never") and of time words ("within", "after"), which do
/// matter in policy text ("What is not a duplicate", "within 180 days").
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "has", "have",
    "i", "if", "in", "is", "it", "its", "me", "my", "of", "on", "or", "our", "so", "that", "the",
    "their", "them", "they", "this", "to", "was", "we", "were", "what", "which", "who", "will",
    "with", "you", "your", "how", "can", "should", "there", "these", "those", "am", "been",
    "being", "into", "than", "then",
];

/// The fields of the section documents.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields {
    pub doc_id: Field,
    pub version: Field,
    pub status: Field,
    pub effective_from: Field,
    pub effective_to: Field,
    pub regions: Field,
    pub products: Field,
    pub doc_title: Field,
    pub title: Field,
    pub anchor: Field,
    pub text: Field,
    /// Position of the section's policy version in the generation's version table
    /// (`GenerationMeta::versions`); filters test it per matching document.
    pub version_ord: Field,
}

/// Builds the schema this version of the crate writes.
pub(crate) fn build() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let analysed = |stored: bool| {
        let options = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(ANALYZER)
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        );
        if stored {
            options.set_stored()
        } else {
            options
        }
    };
    let date = || NumericOptions::default() | INDEXED | FAST | STORED;
    let fields = Fields {
        doc_id: builder.add_text_field("doc_id", STRING | STORED),
        version: builder.add_u64_field("version", INDEXED | FAST | STORED),
        status: builder.add_text_field("status", STRING | STORED),
        effective_from: builder.add_i64_field("effective_from", date()),
        effective_to: builder.add_i64_field("effective_to", date()),
        regions: builder.add_text_field("regions", STRING),
        products: builder.add_text_field("products", STRING),
        doc_title: builder.add_text_field("doc_title", analysed(false)),
        title: builder.add_text_field("title", analysed(true)),
        anchor: builder.add_text_field("anchor", STRING | STORED),
        text: builder.add_text_field("text", analysed(true)),
        version_ord: builder.add_u64_field(VERSION_ORD, FAST),
    };
    (builder.build(), fields)
}

/// Simple tokens, lowercased, stop words removed, English stems: "released" finds
/// "release", "holds" finds "hold". Stop-word removal keeps token positions, so phrase
/// queries across a removed word still line up.
pub(crate) fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(StopWordFilter::remove(
            STOP_WORDS.iter().map(|w| (*w).to_string()),
        ))
        .filter(Stemmer::new(Language::English))
        .build()
}

/// Registers [`analyzer`] on `index`; tantivy does not persist custom analyzers.
pub(crate) fn register(index: &Index) {
    index.tokenizers().register(ANALYZER, analyzer());
}

/// Checks that an opened index has exactly the schema this crate writes.
pub(crate) fn check(index: &Index) -> Result<Fields, IndexError> {
    let (expected, fields) = build();
    if index.schema() != expected {
        return Err(IndexError::Corrupt(
            "tantivy schema differs from this build".into(),
        ));
    }
    Ok(fields)
}
