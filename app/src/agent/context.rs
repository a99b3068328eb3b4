//! Context builder: token budgets per section and compaction (being built).
