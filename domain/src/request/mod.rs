//! What the customer asks for, read from their words and, where the words leave it
//! unclear or the order's charges contradict them, from the records: the request kind
//! (`classify`, from the words per kind and language in `keywords`, `keywords_more` and
//! `keywords_other`), whether a text speaks of money at all, whether it asks for money
//! back (`asks`), words that point at one charge among several (`pointers`), and the
//! kind the billing records show (`records`). Pure: the investigator and the workflow
//! call it with text and records.

pub mod asks;
pub mod classify;
mod keywords;
mod keywords_more;
mod keywords_other;
pub mod pointers;
pub mod records;

pub use classify::{classify, kinds_named, speaks_of_money};
