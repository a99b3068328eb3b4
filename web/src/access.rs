//! Who may call what: the one authorization layer of every surface (docs/spec/roles.md,
//! docs/spec/invariants.md #12).
//!
//! Every route — JSON API, console page and form, customer page, MCP endpoint, export —
//! is registered through [`Routes`], which takes its [`Rule`] beside its handler, so a
//! route cannot be added without one. The router is built from that registry, and
//! [`check`], one middleware over the whole router, looks the matched route up in the
//! same registry (`web::gate`, above everything it answers for): it identifies the caller once (bearer token, console session or
//! customer session), refuses what the rule does not allow in the surface's own shape
//! (JSON, a JSON-RPC error, a page or a redirect to sign in), and hands the identified
//! [`Caller`] to the handler in the request's extensions. A route the registry does not
//! know is refused for everyone (deny by default). The MCP tools declare their
//! capability in [`MCP_TOOLS`], checked by [`tool_allowed`].
//!
//! What it deliberately does not decide: rules that depend on the record — a customer
//! sees only their own tickets, an approval needs the role RP-004 asks for that amount,
//! nobody approves what they proposed — stay with the domain functions that read the
//! record. CSRF is checked where the form or cookie is used (`extract`, `pages::common`).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::Request;
use axum::handler::Handler;
use axum::http::Method;
use axum::response::IntoResponse;
use axum::routing::{MethodFilter, MethodRouter};
use axum::Router;

use crate::state::AppState;
use desk::auth::{Principal, Service, ServiceKind, Staff, StaffRole};

/// What a staff member may do, one row of docs/spec/roles.md each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Capability {
    /// Read the published policies and their diffs (every staff role).
    ReadPolicies,
    /// Read cases, customers, runs and the audit log; the MCP tools.
    ReadCases,
    /// Reply, note, take or assign a case, decide a shadow case by hand, hand a refund up.
    WorkCases,
    /// Approve or reject a refund (the amount limit of RP-004 is checked on the case).
    DecideRefunds,
    /// Close a case (one that awaits a refund also needs the authority to reject it).
    CloseCases,
    /// Take over an escalated case and propose by hand.
    TakeOver,
    /// Add and remove the saved replies every agent uses.
    ManageSavedReplies,
    /// Draft policies and run what-ifs.
    AuthorPolicies,
    /// Publish a policy (never one the publisher last changed: `authoring::publish`).
    PublishPolicies,
    /// Rollout, staff, retention, erasure.
    Administer,
    /// Correct the records: link a provider charge to an order.
    CorrectRecords,
    /// Review every decision against the policy: the lead's QA page.
    ReviewDecisions,
}

impl Capability {
    /// Every capability, for tables and tests.
    pub const ALL: [Capability; 12] = [
        Capability::ReadPolicies,
        Capability::ReadCases,
        Capability::WorkCases,
        Capability::DecideRefunds,
        Capability::CloseCases,
        Capability::TakeOver,
        Capability::ManageSavedReplies,
        Capability::AuthorPolicies,
        Capability::PublishPolicies,
        Capability::Administer,
        Capability::CorrectRecords,
        Capability::ReviewDecisions,
    ];

    /// The roles allowed, from docs/spec/roles.md: the one place it is written down.
    pub fn roles(self) -> &'static [StaffRole] {
        use StaffRole::*;
        match self {
            Capability::ReadPolicies => &[Agent, Supervisor, PolicyAuthor, Admin],
            Capability::ReadCases
            | Capability::WorkCases
            | Capability::DecideRefunds
            | Capability::CloseCases => &[Agent, Supervisor, Admin],
            Capability::TakeOver
            | Capability::ManageSavedReplies
            | Capability::CorrectRecords
            | Capability::ReviewDecisions => &[Supervisor, Admin],
            Capability::AuthorPolicies | Capability::PublishPolicies => &[PolicyAuthor, Admin],
            Capability::Administer => &[Admin],
        }
    }

    pub fn allows(self, role: StaffRole) -> bool {
        self.roles().contains(&role)
    }

    /// In words, for a refusal: "… may not <this>".
    pub fn describe(self) -> &'static str {
        match self {
            Capability::ReadPolicies => "read policies",
            Capability::ReadCases => "read cases, customers, runs or the audit log",
            Capability::WorkCases => "work on cases",
            Capability::DecideRefunds => "approve or reject refunds",
            Capability::CloseCases => "close cases",
            Capability::TakeOver => "take over escalated cases",
            Capability::ManageSavedReplies => "manage saved replies",
            Capability::AuthorPolicies => "draft policies",
            Capability::PublishPolicies => "publish policies",
            Capability::Administer => "administer the desk",
            Capability::CorrectRecords => "link charges to orders",
            Capability::ReviewDecisions => "review decisions against the policy",
        }
    }
}

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Anyone, signed in or not: sign-in pages, health, the OpenAPI document, scripts.
    Anyone,
    /// A customer (their own records only: checked on the record).
    Customer,
    /// Any signed-in staff member, whatever the role (signing out).
    AnyStaff,
    /// A staff member whose role has the capability.
    Staff(Capability),
    /// The payment provider: anyone at this layer, the handler verifies the signature.
    ProviderSigned,
    /// `/metrics`: anyone, or the bearer of `METRICS_TOKEN` when one is set.
    Metrics,
    /// `POST /api/v1/inbound/email`: the bearer of `INBOUND_EMAIL_TOKEN`, and
    /// nobody while it is unset (a mail server, not a person).
    InboundMail,
    /// A service token of this kind: a shop backend's `integration` token (customers and
    /// orders), the identity provider's `scim` token (provisioning).
    Service(ServiceKind),
    /// A service token of this kind, or a staff member with the capability (a shop
    /// backend's writes, which an admin may also make by hand).
    ServiceOrStaff(ServiceKind, Capability),
}

/// The shape a surface answers a refusal in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    Api,
    /// `/scim/v2/…`: SCIM's own error shape (RFC 7644 §3.12).
    Scim,
    Mcp,
    Console,
    CustomerPage,
}

impl Surface {
    pub fn of(path: &str) -> Surface {
        if path == "/mcp" || path == "/api/v1/mcp" {
            Surface::Mcp
        } else if path.starts_with("/scim/") {
            Surface::Scim
        } else if path.starts_with("/api/") || path == "/metrics" {
            Surface::Api
        } else if path.starts_with("/console") || path == "/" {
            Surface::Console
        } else {
            Surface::CustomerPage
        }
    }
}

/// One declared route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    pub method: Method,
    pub path: String,
    pub rule: Rule,
}

/// The registry every route goes through, and the router built from it.
pub struct Routes {
    router: Router<AppState>,
    declared: Vec<Declared>,
}

impl Default for Routes {
    fn default() -> Self {
        Self::new()
    }
}

impl Routes {
    pub fn new() -> Routes {
        Routes {
            router: Router::new(),
            declared: Vec::new(),
        }
    }

    pub fn get<H, T>(self, path: &str, rule: Rule, handler: H) -> Routes
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        self.on(Method::GET, path, rule, handler)
    }

    pub fn post<H, T>(self, path: &str, rule: Rule, handler: H) -> Routes
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        self.on(Method::POST, path, rule, handler)
    }

    pub fn put<H, T>(self, path: &str, rule: Rule, handler: H) -> Routes
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        self.on(Method::PUT, path, rule, handler)
    }

    pub fn patch<H, T>(self, path: &str, rule: Rule, handler: H) -> Routes
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        self.on(Method::PATCH, path, rule, handler)
    }

    pub fn delete<H, T>(self, path: &str, rule: Rule, handler: H) -> Routes
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        self.on(Method::DELETE, path, rule, handler)
    }

    fn on<H, T>(self, method: Method, path: &str, rule: Rule, handler: H) -> Routes
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        let filter = MethodFilter::try_from(method.clone())
            .expect("GET, POST, PUT, PATCH and DELETE are method filters");
        self.method_router(path, &[(method, rule)], axum::routing::on(filter, handler))
    }

    /// A route whose method router was built elsewhere (with a layer of its own), with
    /// the rule of each method it answers.
    pub fn method_router(
        mut self,
        path: &str,
        rules: &[(Method, Rule)],
        method_router: MethodRouter<AppState>,
    ) -> Routes {
        self.declare(path, rules);
        self.router = self.router.route(path, method_router);
        self
    }

    /// A whole service at one path (the MCP transport), answering `methods`.
    pub fn service<S>(mut self, path: &str, rules: &[(Method, Rule)], service: S) -> Routes
    where
        S: tower::Service<Request, Error = std::convert::Infallible>
            + Clone
            + Send
            + Sync
            + 'static,
        S::Response: IntoResponse,
        S::Future: Send + 'static,
    {
        self.declare(path, rules);
        self.router = self.router.route_service(path, service);
        self
    }

    fn declare(&mut self, path: &str, rules: &[(Method, Rule)]) {
        for (method, rule) in rules {
            self.declared.push(Declared {
                method: method.clone(),
                path: path.to_string(),
                rule: *rule,
            });
        }
    }

    /// Another group's routes beside these.
    pub fn merge(mut self, other: Routes) -> Routes {
        self.router = self.router.merge(other.router);
        self.declared.extend(other.declared);
        self
    }

    /// Another group's routes under `prefix`.
    pub fn nest(mut self, prefix: &str, inner: Routes) -> Routes {
        self.router = self.router.nest(prefix, inner.router);
        self.declared
            .extend(inner.declared.into_iter().map(|d| Declared {
                path: format!("{prefix}{}", d.path),
                ..d
            }));
        self
    }

    /// The same routes with something applied to their router (a layer, a fallback).
    pub fn map_router(mut self, f: impl FnOnce(Router<AppState>) -> Router<AppState>) -> Routes {
        self.router = f(self.router);
        self
    }

    /// Every declared route.
    pub fn declared(&self) -> &[Declared] {
        &self.declared
    }

    /// The router and the table [`check`] reads.
    pub fn finish(self) -> (Router<AppState>, AccessTable) {
        let mut by_path: HashMap<String, Vec<(Method, Rule)>> = HashMap::new();
        for d in &self.declared {
            let rules = by_path.entry(d.path.clone()).or_default();
            assert!(
                !rules.iter().any(|(m, _)| *m == d.method),
                "{} {} is declared twice",
                d.method,
                d.path
            );
            rules.push((d.method.clone(), d.rule));
        }
        (
            self.router,
            AccessTable {
                by_path: Arc::new(by_path),
            },
        )
    }
}

/// The declared rules by route template, as [`check`] reads them.
#[derive(Clone)]
pub struct AccessTable {
    by_path: Arc<HashMap<String, Vec<(Method, Rule)>>>,
}

impl AccessTable {
    /// The rule of `method` on the route template `path`: `Err(None)` for a path nobody
    /// declared, `Err(Some(allowed))` for a method the path does not answer.
    pub fn rule(&self, method: &Method, path: &str) -> Result<Rule, Option<Vec<Method>>> {
        let rules = self.by_path.get(path).ok_or(None)?;
        let wanted = if method == Method::HEAD {
            &Method::GET
        } else {
            method
        };
        rules
            .iter()
            .find(|(m, _)| m == wanted)
            .map(|(_, rule)| *rule)
            .ok_or_else(|| Some(rules.iter().map(|(m, _)| m.clone()).collect()))
    }
}

/// The caller as the layer identified them, in the request's extensions for handlers.
#[derive(Debug, Clone)]
pub enum Caller {
    Anonymous,
    Customer {
        customer_id: String,
        /// The browser session the request came with, if it came with one.
        session: Option<BrowserSession>,
    },
    Staff {
        staff: Staff,
        session: Option<BrowserSession>,
    },
    Service(Service),
}

/// A browser session's token and CSRF token (a cookie, never a bearer token).
#[derive(Debug, Clone)]
pub struct BrowserSession {
    pub token: String,
    pub csrf_token: String,
}

impl Caller {
    pub fn principal(&self) -> Option<Principal> {
        match self {
            Caller::Anonymous => None,
            Caller::Customer { customer_id, .. } => Some(Principal::Customer {
                customer_id: customer_id.clone(),
            }),
            Caller::Staff { staff, .. } => Some(Principal::Staff(staff.clone())),
            Caller::Service(service) => Some(Principal::Service(service.clone())),
        }
    }

    pub fn session(&self) -> Option<&BrowserSession> {
        match self {
            Caller::Anonymous | Caller::Service(_) => None,
            Caller::Customer { session, .. } | Caller::Staff { session, .. } => session.as_ref(),
        }
    }
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No valid credential.
    SignIn,
    /// Known, but not allowed this (the message says what).
    Forbidden(String),
}

/// Marks a response the layer refused, so tests tell its refusals from a handler's.
#[derive(Debug, Clone, Copy)]
pub struct RefusedByAccess;

/// Whether `rule` lets `caller` through.
pub fn decide(rule: Rule, caller: &Caller) -> Result<(), Refusal> {
    match (rule, caller) {
        (Rule::Anyone | Rule::ProviderSigned | Rule::Metrics | Rule::InboundMail, _) => Ok(()),
        (_, Caller::Anonymous) => Err(Refusal::SignIn),
        (Rule::Service(kind) | Rule::ServiceOrStaff(kind, _), Caller::Service(service))
            if service.kind == kind =>
        {
            Ok(())
        }
        (Rule::ServiceOrStaff(_, capability), caller @ Caller::Staff { .. }) => {
            decide(Rule::Staff(capability), caller)
        }
        (Rule::Service(kind), _) => Err(Refusal::Forbidden(format!(
            "this route takes a {} token only",
            kind.as_str()
        ))),
        (_, Caller::Service(service)) => Err(Refusal::Forbidden(format!(
            "a {} token may use its own routes only",
            service.kind.as_str()
        ))),
        (Rule::Customer, Caller::Customer { .. }) => Ok(()),
        (Rule::Customer, Caller::Staff { .. }) => Err(Refusal::Forbidden(
            "this is a customer's page or endpoint; staff work in the console".into(),
        )),
        (Rule::Staff(_) | Rule::AnyStaff | Rule::ServiceOrStaff(..), Caller::Customer { .. }) => {
            Err(Refusal::Forbidden("staff only".into()))
        }
        (Rule::AnyStaff, Caller::Staff { .. }) => Ok(()),
        (Rule::Staff(capability), Caller::Staff { staff, .. }) => {
            if capability.allows(staff.role) {
                Ok(())
            } else {
                Err(Refusal::Forbidden(format!(
                    "a {} may not {}",
                    staff.role.as_str(),
                    capability.describe()
                )))
            }
        }
    }
}

/// The capability each MCP tool needs; a tool not listed here is refused to everyone.
pub const MCP_TOOLS: &[(&str, Capability)] = &[
    ("get_customer", Capability::ReadCases),
    ("list_orders", Capability::ReadCases),
    ("list_charges", Capability::ReadCases),
    ("list_refunds", Capability::ReadCases),
    ("list_customer_history", Capability::ReadCases),
    ("search_policy", Capability::ReadCases),
    ("get_case", Capability::ReadCases),
    ("get_run", Capability::ReadCases),
];

/// Whether `role` may call the MCP tool `name`.
pub fn tool_allowed(name: &str, role: StaffRole) -> bool {
    MCP_TOOLS
        .iter()
        .find(|(tool, _)| *tool == name)
        .is_some_and(|(_, capability)| capability.allows(role))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_author_reads_policies_and_drafts_but_no_case() {
        let author = StaffRole::PolicyAuthor;
        assert!(Capability::ReadPolicies.allows(author));
        assert!(Capability::AuthorPolicies.allows(author));
        assert!(Capability::PublishPolicies.allows(author));
        for c in [
            Capability::ReadCases,
            Capability::WorkCases,
            Capability::DecideRefunds,
            Capability::CloseCases,
            Capability::TakeOver,
            Capability::Administer,
        ] {
            assert!(!c.allows(author), "{c:?}");
        }
    }

    #[test]
    fn only_an_admin_administers_and_agents_neither_take_over_nor_author() {
        for role in [
            StaffRole::Agent,
            StaffRole::Supervisor,
            StaffRole::PolicyAuthor,
        ] {
            assert!(!Capability::Administer.allows(role));
        }
        assert!(!Capability::TakeOver.allows(StaffRole::Agent));
        assert!(!Capability::AuthorPolicies.allows(StaffRole::Agent));
        assert!(Capability::ALL.iter().all(|c| c.allows(StaffRole::Admin)));
    }

    #[test]
    fn every_mcp_tool_needs_the_right_to_read_cases() {
        for (tool, _) in MCP_TOOLS {
            assert!(tool_allowed(tool, StaffRole::Agent));
            assert!(!tool_allowed(tool, StaffRole::PolicyAuthor));
        }
        assert!(!tool_allowed("approve_refund", StaffRole::Admin));
    }

    #[test]
    fn a_path_nobody_declared_has_no_rule_and_an_undeclared_method_is_named() {
        let (_, table) = Routes::new()
            .get("/x", Rule::Anyone, || async { "x" })
            .finish();
        assert_eq!(table.rule(&Method::GET, "/x"), Ok(Rule::Anyone));
        assert_eq!(table.rule(&Method::HEAD, "/x"), Ok(Rule::Anyone));
        assert_eq!(table.rule(&Method::GET, "/y"), Err(None));
        assert_eq!(
            table.rule(&Method::POST, "/x"),
            Err(Some(vec![Method::GET]))
        );
    }
}
