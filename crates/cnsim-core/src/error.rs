//! Errors: scenario (input) errors carry the field path; run errors are internal failures.

use thiserror::Error;

/// An invalid scenario IR. The message names the field path and what is allowed.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ScenarioError {
    #[error("{path}: {message}")]
    Field { path: String, message: String },
    #[error("invalid IR JSON at {path}: {message}")]
    Json { path: String, message: String },
}

impl ScenarioError {
    pub fn field(path: impl Into<String>, message: impl Into<String>) -> Self {
        ScenarioError::Field { path: path.into(), message: message.into() }
    }
}

/// A failure while running.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum RunError {
    /// A conservation identity or invariant did not hold at the end of the run (a model bug).
    #[error("invariant violation: {0}")]
    Invariant(String),
    /// The run was interrupted (Ctrl-C) before its end.
    #[error("interrupted at t = {0} ps")]
    Interrupted(u64),
}
