//! The web layer's state: the workflow's [`Services`] the process runs with, as axum
//! state. Assembled here, by [`crate::router::router`], and never imported below
//! (ARCHITECTURE.md's layers: the workflow takes what it uses, never `AppState`).
//! Derefs to the services, so a handler reads `state.db` and lends `&state` wherever
//! the workflow asks for `&Services`.

use std::ops::Deref;

use desk::state::Services;

#[derive(Clone)]
pub struct AppState(Services);

impl AppState {
    pub fn new(services: Services) -> AppState {
        AppState(services)
    }

    /// The services, for the workflow calls that take them by value.
    pub fn services(&self) -> &Services {
        &self.0
    }
}

impl Deref for AppState {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.0
    }
}
