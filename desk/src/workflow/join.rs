//! One case per order: a second ticket about an order that a case is still
//! working on joins that case instead of becoming a second refund case. The order is the
//! one the facts resolved from the billing records (`Facts::order_id`), never a pattern
//! matched on the customer's words (docs/spec/domain.md: ids are opaque).
//!
//! Joining moves the new ticket's customer messages into the open case's conversation,
//! where a decision waiting on the old conversation is void and investigated again
//! (docs/spec/invariants.md #2), closes the new case (no approval of it can ever exist), and tells
//! the customer in their language where the work goes on.

use crate::audit;
use crate::cases::{self, Case, OrderClaim};
use crate::error::DomainResult;
use crate::tickets::{self, Ticket};
use store::Tx;

/// Claims the facts' order for `case`, or joins `case` into the open case holding it.
/// Returns the case joined into; `None` when `case` goes on to its own decision.
pub(super) async fn claim_or_join(
    tx: &mut Tx<'_>,
    versions: &harness::Versions,
    case: &Case,
    ticket: &Ticket,
    order_id: Option<&str>,
    now: i64,
) -> DomainResult<Option<Case>> {
    let Some(order_id) = order_id else {
        return Ok(None);
    };
    let into = match cases::claim_order(tx, case, order_id, now).await? {
        OrderClaim::Ours => return Ok(None),
        OrderClaim::Held(into) => *into,
    };
    for text in tickets::customer_messages_tx(tx, &ticket.id).await? {
        tickets::append_message(tx, &into.ticket_id, "customer", &text, now).await?;
    }
    let why = "the customer opened another ticket about this order";
    cases::take_customer_message(tx, versions, &into, why, now).await?;
    cases::join_into(tx, case, &into, now).await?;
    let reply = crate::replies::joined_reply(ticket.language, &into.ticket_id);
    tickets::append_message(tx, &ticket.id, "agent", &reply, now).await?;
    let kind = crate::channels::Notice::Reply;
    crate::channels::tell_customer(tx, kind, &ticket.id, &reply, now).await?;
    let what = format!(
        "ticket {} about order {order_id} joined this case",
        ticket.id
    );
    audit::record(tx, "agent", "ticket_joined", &into.id, &what, now).await?;
    let what = format!(
        "joined into {} (ticket {}): the same order",
        into.id, into.ticket_id
    );
    audit::record(tx, "agent", "case_joined", &case.id, &what, now).await?;
    Ok(Some(into))
}
