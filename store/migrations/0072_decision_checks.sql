-- Quality review (docs/spec/interfaces.md, "QA"): every decision a person or the agent
-- makes on a case, checked against the policy in force when it was made. One row per
-- decision; written in the decision's own transaction by `desk::qa`, its one owner.
CREATE TABLE decision_checks (
    id TEXT PRIMARY KEY,
    case_id TEXT NOT NULL REFERENCES cases(id),
    -- a staff id, or 'agent' for the agent's proposal
    actor TEXT NOT NULL,
    -- proposal | approve | reject | hand_decision
    action TEXT NOT NULL,
    -- the decision's outcome (refund, no_refund, request_info, escalate) and reason code
    outcome TEXT NOT NULL,
    reason TEXT NOT NULL,
    -- the ticket's language (en, de, …)
    language TEXT NOT NULL,
    -- 1 when the decision is within the policy, 0 when it is not
    within_policy BIGINT NOT NULL,
    -- what the policy engine decides on the same facts
    policy_outcome TEXT NOT NULL,
    -- why, in words: the rule and clause, or what the policy does not allow
    why TEXT NOT NULL,
    decided_at BIGINT NOT NULL
);
CREATE INDEX decision_checks_decided ON decision_checks (decided_at);
CREATE INDEX decision_checks_case ON decision_checks (case_id);
