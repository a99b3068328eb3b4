//! The JSON API's handlers (`/api/v1/…`), one file per resource. Each reads the
//! principal and the input, calls the domain, and picks the status code.

pub mod cases;
pub mod csat;
pub mod customer_data;
pub mod mail;
pub mod policies;
pub mod reconcile;
pub mod records;
pub mod rollout;
pub mod runs;
pub mod saved_replies;
pub mod tickets;
pub mod webhooks;
