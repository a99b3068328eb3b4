//! The crate graph is the architecture (ARCHITECTURE.md, "Code map"): arrows point down
//! only. Read from `cargo metadata`, the resolved graph cargo itself builds from, so a new
//! `use` of a crate the layer must not know fails here before review.
//!
//! Two kinds of rule: the product's crates stand on floors and a normal dependency never
//! points to a crate on the same floor or above; and a few crates must never reach (even
//! through another crate) the outside crates named beside them.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// The product's crates, bottom floor first. A crate may depend on any crate of a lower
/// floor, never on one of its own floor or above.
const FLOORS: &[&[&str]] = &[
    &["workspace-hack"],
    &["policy-engine"],
    &[
        "harness",
        "rag-index",
        "payments-mock",
        "domain",
        "store",
        "terminal",
        "mail-templates",
    ],
    // What the desk uses that knows nothing of the desk: the payment provider's only
    // client, the mail tables (the outbox, mail taken in, attachments, addresses), and one
    // raw mail read (its parts, whether it proves its sender, its new words; pure).
    &["payments-adapter", "mailbox", "mail-message"],
    &["desk"],
    // Above the workflow, side by side: shadow mode (a historical ticket through the
    // workflow's own code in memory, and the agent beside the human on live tickets) and
    // the shop importer (a shop's customers and orders, staged, all or nothing, through
    // the desk's writer of those tables).
    &["shadow", "shop-import"],
    // Above them, side by side: backtesting (a team's history, read with the importer's
    // rows and replayed through shadow mode's replay), policy authoring (drafts, what-if,
    // publishing) and the customer's data over its life (export, erasure, retention,
    // restore; its worker chores registered through `desk::chores`).
    &["backtest", "authoring", "customer-data"],
    // The HTTP edge, and the settings both binaries parse: side by side.
    &["web", "settings"],
    // The two binaries side by side: neither depends on the other.
    &["app", "refund-evals"],
];

/// Outside crates a crate must never reach, directly or through any other crate (a normal
/// dependency: what ships in the binary, not what its tests use).
const NEVER_REACHES: &[(&str, &[&str])] = &[
    // Pure rules: no I/O of any kind.
    (
        "domain",
        &[
            "sqlx",
            "axum",
            "reqwest",
            "askama",
            "tokio",
            "tantivy",
            "hyper",
            "lettre",
            "openidconnect",
            "indicatif",
        ],
    ),
    (
        "policy-engine",
        &["sqlx", "axum", "reqwest", "tokio", "hyper"],
    ),
    // The agent harness knows agents, not refunds' storage or HTTP.
    (
        "harness",
        &["sqlx", "axum", "reqwest", "policy-engine", "hyper"],
    ),
    // The database layer answers queries; it serves no HTTP and renders nothing.
    ("store", &["axum", "askama", "reqwest", "policy-engine"]),
    // The workflow knows refunds, not the web edge (its HTTP is the provider's client),
    // and draws nothing at a terminal (the binaries' `terminal` crate does).
    ("desk", &["axum", "rmcp", "indicatif", "clap"]),
    // Shadow mode replays and records; the pages, API and commands over it are `web`'s
    // and `app`'s.
    ("shadow", &["axum", "rmcp", "indicatif", "clap"]),
    // The shop importer reads a file and writes through the desk; the command and its
    // progress bars are `app`'s.
    ("shop-import", &["axum", "rmcp", "indicatif", "clap"]),
    // Backtesting reads files and replays; it serves nothing and draws nothing.
    ("backtest", &["axum", "rmcp", "indicatif", "clap"]),
    // Policy authoring drafts, checks and publishes; the API and the console over it
    // are `web`'s, its command line `app`'s.
    ("authoring", &["axum", "rmcp", "indicatif", "clap"]),
    // The customer's data is handed out and erased through `web` and the CLI, never here.
    ("customer-data", &["axum", "rmcp", "indicatif", "clap"]),
    // The provider's client speaks HTTP as a client only: it serves nothing, stores
    // nothing, renders nothing and draws nothing (its wire tests' axum server is a
    // dev-dependency).
    (
        "payments-adapter",
        &[
            "axum",
            "rmcp",
            "clap",
            "indicatif",
            "sqlx",
            "askama",
            "utoipa",
            "desk",
            "payments-mock",
        ],
    ),
    // The mail tables are rows, not the wire: no server is spoken to or served, no mail
    // parsed or rendered here (that is `desk::mail`).
    (
        "mailbox",
        &[
            "axum",
            "rmcp",
            "clap",
            "indicatif",
            "askama",
            "reqwest",
            "lettre",
            "async-imap",
            "mail-parser",
            "desk",
        ],
    ),
    // A raw mail is read, not fetched, stored or answered: no store, no server, no I/O.
    (
        "mail-message",
        &[
            "sqlx",
            "axum",
            "rmcp",
            "clap",
            "indicatif",
            "askama",
            "utoipa",
            "reqwest",
            "tokio",
            "lettre",
            "async-imap",
            "desk",
            "store",
        ],
    ),
    // A mail's bodies are rendered from its words, and nothing else: no store, no I/O.
    (
        "mail-templates",
        &["sqlx", "axum", "reqwest", "tokio", "hyper", "lettre"],
    ),
];

/// Outside crates a crate must not use itself, though a crate below it does: the web edge
/// asks `desk` and writes no SQL of its own; the workflow and the crates just above it
/// render no template (the mails' bodies are `mail-templates`', the pages `web`'s).
const NEVER_USES_DIRECTLY: &[(&str, &[&str])] = &[
    ("web", &["sqlx"]),
    ("app", &["sqlx", "askama"]),
    ("desk", &["askama"]),
    ("shadow", &["askama"]),
    ("shop-import", &["askama"]),
];

/// The platform this machine builds for, as `rustc -vV` names it.
fn host_platform() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc)
        .arg("-vV")
        .output()
        .expect("rustc -vV runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names its host")
        .to_string()
}

/// The normal (non-dev, non-build) dependencies of every package in the resolved graph,
/// by package name.
fn normal_graph() -> &'static BTreeMap<String, BTreeSet<String>> {
    // Read once for the binary: every rule below asks the same graph.
    static GRAPH: std::sync::OnceLock<BTreeMap<String, BTreeSet<String>>> =
        std::sync::OnceLock::new();
    GRAPH.get_or_init(read_graph)
}

fn read_graph() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // This machine's platform only: a fresh machine has downloaded the crates its build
    // needs, not those of other platforms' dependencies (`--offline` would fail on them).
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(["--filter-platform", &host_platform()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata is JSON");
    let name_of: BTreeMap<&str, &str> = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| {
            (
                p["id"].as_str().unwrap_or(""),
                p["name"].as_str().unwrap_or(""),
            )
        })
        .collect();
    let mut graph = BTreeMap::new();
    for node in meta["resolve"]["nodes"].as_array().expect("resolve.nodes") {
        let from = name_of[node["id"].as_str().expect("node id")].to_string();
        let deps: BTreeSet<String> = node["deps"]
            .as_array()
            .expect("node deps")
            .iter()
            .filter(|d| {
                d["dep_kinds"]
                    .as_array()
                    .is_some_and(|kinds| kinds.iter().any(|k| k["kind"].is_null()))
            })
            .map(|d| name_of[d["pkg"].as_str().expect("dep pkg")].to_string())
            .collect();
        graph.entry(from).or_insert_with(BTreeSet::new).extend(deps);
    }
    graph
}

fn reachable(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_string()];
    while let Some(next) = stack.pop() {
        for dep in graph.get(&next).into_iter().flatten() {
            if seen.insert(dep.clone()) {
                stack.push(dep.clone());
            }
        }
    }
    seen
}

fn floor_of(name: &str) -> Option<usize> {
    FLOORS.iter().position(|floor| floor.contains(&name))
}

#[test]
fn every_product_crate_depends_only_on_crates_of_lower_floors() {
    let graph = normal_graph();
    let mut upward = Vec::new();
    for (from, deps) in graph {
        let Some(from_floor) = floor_of(from) else {
            continue;
        };
        for dep in deps {
            if let Some(dep_floor) = floor_of(dep) {
                if dep_floor >= from_floor {
                    upward.push(format!(
                        "{from} (floor {from_floor}) -> {dep} (floor {dep_floor})"
                    ));
                }
            }
        }
    }
    assert!(
        upward.is_empty(),
        "arrows that do not point down: {upward:#?}"
    );
    for floor in FLOORS.iter().flat_map(|f| f.iter()) {
        assert!(
            graph.contains_key(*floor),
            "{floor} is not in the workspace: update FLOORS"
        );
    }
}

#[test]
fn no_crate_reaches_the_outside_crates_its_layer_must_not_know() {
    let graph = normal_graph();
    let mut found = Vec::new();
    for (krate, forbidden) in NEVER_REACHES {
        let reach = reachable(graph, krate);
        for name in *forbidden {
            if reach.contains(*name) {
                found.push(format!("{krate} reaches {name}"));
            }
        }
    }
    for (krate, forbidden) in NEVER_USES_DIRECTLY {
        let direct = graph.get(*krate).cloned().unwrap_or_default();
        for name in *forbidden {
            if direct.contains(*name) {
                found.push(format!("{krate} uses {name} itself"));
            }
        }
    }
    assert!(found.is_empty(), "forbidden edges: {found:#?}");
}

#[test]
fn the_workspace_has_no_crate_outside_the_floors() {
    // A new crate has to be given a floor, or the rules above would not see it.
    let meta = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    let meta: Value = serde_json::from_slice(&meta.stdout).expect("cargo metadata is JSON");
    let unplaced: Vec<&str> = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .filter(|name| floor_of(name).is_none())
        .collect();
    assert!(unplaced.is_empty(), "crates without a floor: {unplaced:?}");
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)
        .expect("the directory reads")
        .flatten()
    {
        let path = entry.path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

#[test]
fn the_harness_speaks_of_agents_and_offers_no_downcast() {
    // The harness knows agents, not refunds (ARCHITECTURE.md, `harness/`): a product
    // word in it, or a way to reach the concrete model behind the trait, is a layer leak.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../harness");
    let mut leaks = Vec::new();
    for dir in ["src", "tests"] {
        for file in rust_files(&root.join(dir)) {
            let text = std::fs::read_to_string(&file).expect("a source file reads");
            for (n, line) in text.lines().enumerate() {
                let lower = line.to_lowercase();
                if ["refund", "as_any", "downcast"]
                    .iter()
                    .any(|w| lower.contains(w))
                {
                    leaks.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(leaks.is_empty(), "{leaks:#?}");
}

#[test]
fn only_the_web_layer_names_app_state() {
    // `AppState` is assembled in `web` and never imported below it (ARCHITECTURE.md):
    // the workflow takes what it uses, or the `Services` the process runs with. A line
    // of code below `web` naming it is a layer leak; a comment may say why it is absent.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let below_web = FLOORS
        .iter()
        .take_while(|floor| !floor.contains(&"web"))
        .flat_map(|floor| floor.iter());
    let mut leaks = Vec::new();
    for krate in below_web {
        let dir = root.join(krate).join("src");
        if !dir.exists() {
            continue;
        }
        for file in rust_files(&dir) {
            let text = std::fs::read_to_string(&file).expect("a source file reads");
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                if code.contains("AppState") {
                    leaks.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(leaks.is_empty(), "{leaks:#?}");
    let web = std::fs::read_to_string(root.join("web/src/state.rs")).expect("web/src/state.rs");
    assert!(
        web.contains("pub struct AppState"),
        "web assembles AppState"
    );
}

#[test]
fn the_workflow_tells_people_through_the_channel_seam_and_names_no_channel() {
    // ARCHITECTURE.md, "Adding a channel": what to tell whom is said once, through
    // `desk::channels`; a module that sequences the work and writes a mail row itself
    // would have to be edited for every new channel. The worker too: each pass lends the
    // channels a `Reach` to deliver, and never names mail.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let sequencing = [
        "desk/src/workflow",
        "desk/src/approvals.rs",
        "desk/src/conversation.rs",
        "desk/src/customer.rs",
        "desk/src/refunds",
        "desk/src/cases",
        "desk/src/worker.rs",
        "shadow/src/live.rs",
    ];
    let mut leaks = Vec::new();
    for place in sequencing {
        let path = root.join(place);
        let files = match path.is_dir() {
            true => rust_files(&path),
            false => vec![path],
        };
        for file in files {
            let text = std::fs::read_to_string(&file).expect("a source file reads");
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                if [
                    "mailbox::outbox",
                    "MailKind",
                    "mail::send",
                    "mail::inbound",
                    "imap_watch",
                    ".mail",
                ]
                .iter()
                .any(|w| code.contains(w))
                {
                    leaks.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(leaks.is_empty(), "{leaks:#?}");
}

#[test]
fn the_desk_reaches_the_provider_through_the_adapter_below_it_and_re_exports_none_of_it() {
    // ARCHITECTURE.md, `payments-adapter/`: the provider's only client stands on a floor
    // below the desk, and every caller names it directly: a `pub use` of it in the desk
    // would let callers above keep reaching the provider through the workflow's crate.
    let graph = normal_graph();
    assert!(
        graph["desk"].contains("payments-adapter"),
        "the desk uses the payments adapter"
    );
    assert!(floor_of("payments-adapter") < floor_of("desk"));
    let desk = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../desk/src");
    let mut shims = Vec::new();
    for file in rust_files(&desk) {
        let text = std::fs::read_to_string(&file).expect("a source file reads");
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("pub use payments_adapter") {
                shims.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(shims.is_empty(), "{shims:#?}");
}
