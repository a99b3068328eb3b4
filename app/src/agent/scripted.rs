//! Scripted models for tests, including ones that misbehave on purpose (being built).
