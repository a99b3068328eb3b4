-- Which policy index a case's decision used: `schema_version:policy_hash`. Several
-- instances build their own index from the same published policies; this shows they agreed.
ALTER TABLE cases ADD COLUMN policy_index TEXT;
