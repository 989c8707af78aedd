//! A mistake in how fairbench was called (exit code 2), as opposed to a run
//! that failed (exit code 1). Any module may raise one; `cli` turns it into
//! the exit code.

/// The message names the flag, file or field and what was expected.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Shorthand for returning a usage error.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}
