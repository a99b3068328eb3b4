-- Issue 36: provider charges and the shop's orders. A charge names its order in its
-- metadata under PAYMENTS_ORDER_KEY; the ones that name no order of ours are listed for
-- staff (`unlinked_charges`, refreshed by a sync over the provider's charges and by
-- charge webhooks), and a link staff make is kept here (`charge_links`) and read beside
-- the metadata. Portable as 0001 is. Writer: `onboarding::charges`.
CREATE TABLE unlinked_charges (
    charge_id TEXT PRIMARY KEY,
    -- the charge's provider customer; NULL for a guest charge
    provider_customer_id TEXT,
    -- ours, when a customer of ours is linked to that provider customer
    customer_id TEXT,
    amount_minor BIGINT NOT NULL,
    currency TEXT NOT NULL,
    status TEXT NOT NULL,
    charge_created_at BIGINT NOT NULL,
    -- what the charge's metadata names under the key, when it names an order we do not
    -- have; NULL when it names none
    named_order TEXT,
    seen_at BIGINT NOT NULL
);
CREATE INDEX unlinked_charges_by_created ON unlinked_charges(charge_created_at, charge_id);

CREATE TABLE charge_links (
    charge_id TEXT PRIMARY KEY,
    order_id TEXT NOT NULL REFERENCES orders(id),
    -- the staff id who linked it, or `cli`
    linked_by TEXT NOT NULL,
    linked_at BIGINT NOT NULL
);
CREATE INDEX charge_links_by_order ON charge_links(order_id);
