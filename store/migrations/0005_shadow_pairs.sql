-- Live shadow mode: the agent's decision and the human's, side by side, per case.
CREATE TABLE shadow_pairs (
    case_id TEXT PRIMARY KEY REFERENCES cases(id),
    agent_outcome TEXT NOT NULL,
    agent_reason TEXT NOT NULL,
    agent_refunds TEXT NOT NULL,      -- JSON [{charge_id, amount, currency}]
    agent_decision TEXT NOT NULL,     -- JSON policy_engine::Decision (never shown before the human decides)
    agent_proposal TEXT NOT NULL,     -- JSON agent::Proposal
    human_outcome TEXT,
    human_reason TEXT,
    human_refunds TEXT,
    decided_by TEXT,
    created_at BIGINT NOT NULL,
    decided_at BIGINT
);
CREATE INDEX shadow_pairs_by_decided ON shadow_pairs(decided_at);
