//! The app's integration tests, in one binary (one link instead of one per file): each
//! module is one area of the product, driven from outside through the router, the CLI,
//! the real `serve` process, the payments mock and headless Chromium. `support` holds
//! the shared helpers (`spawn_app()` and the typed requests).
//!
//! Run one area with a filter: `cargo test -p app --test it access::`.

mod support;

mod access;
mod accounts;
mod api;
mod approving;
mod authoring;
mod backtest_report;
mod browser;
mod bulk_reply;
mod cli;
mod commits;
mod console;
mod conversation;
mod csat;
mod customer;
mod customer_language;
mod customer_page;
mod data_lifecycle;
mod day;
mod demo;
mod falls_through;
mod files;
mod harness_loop;
mod history;
mod invitations;
mod kill;
mod layers;
mod lead_tools;
mod leads;
mod lifecycle;
mod llm;
mod mail;
mod mcp;
mod newcomer;
mod observability;
mod onboarding;
mod openapi;
mod payments;
mod policy_truth;
mod presence;
mod qa;
mod queue_glance;
mod repeats;
mod resolve_properties;
mod restart;
mod rollout;
mod routing;
mod scale;
mod served_links;
mod shadow;
mod shadow_live;
mod sla;
mod sso;
mod steps;
mod subagents;
mod team_tools;
mod translation;
mod watchdog;
