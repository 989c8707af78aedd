//! Terminal output: progress, summaries and warnings.
