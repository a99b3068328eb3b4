//! OpenAI-compatible chat-completions model client (being built).
