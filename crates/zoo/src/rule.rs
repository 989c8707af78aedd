//! The vocabulary of grading: the rules a response is checked by, the grade
//! each gets, and its reason. Shared by the contract, the manifests (whose
//! documented deviations name rules), the parity check and the reference
//! comparison.

use std::fmt;

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    // Whether there was a response to grade at all.
    Build,
    Start,
    Ready,
    Fetch,
    // The contract.
    Status,
    Body,
    ContentType,
    ContentLength,
    Framing,
    DatePresent,
    DateFresh,
    RequiredHeaders,
    ExtraHeaders,
    DynamicChanges,
    Ipv4,
    Ipv6,
    ReferenceBytes,
    // The database scenarios' content, graded against the tables.
    DbRow,
    DbCount,
    HtmlEscape,
    DbUpdate,
    /// HTTP/2: no connection-specific field (RFC 9113 §8.2.2).
    ConnectionHeaders,
    /// HTTP/2: the same fields, status and body as the server's HTTP/1.1
    /// answer.
    Http1Fields,
    /// The `Content-Encoding` a scenario expects, and a body that decodes.
    ContentEncoding,
    /// A compressed answer says `Vary: Accept-Encoding` (RFC 9110 §12.5.5).
    Vary,
}

impl Rule {
    /// The contract rules: those a manifest may name as a known deviation.
    pub const ALL: [Rule; 21] = [
        Rule::Status,
        Rule::Body,
        Rule::ContentType,
        Rule::ContentLength,
        Rule::Framing,
        Rule::DatePresent,
        Rule::DateFresh,
        Rule::RequiredHeaders,
        Rule::ExtraHeaders,
        Rule::DynamicChanges,
        Rule::Ipv4,
        Rule::Ipv6,
        Rule::ReferenceBytes,
        Rule::DbRow,
        Rule::DbCount,
        Rule::HtmlEscape,
        Rule::DbUpdate,
        Rule::ConnectionHeaders,
        Rule::Http1Fields,
        Rule::ContentEncoding,
        Rule::Vary,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Rule::Build => "build",
            Rule::Start => "start",
            Rule::Ready => "ready",
            Rule::Fetch => "fetch",
            Rule::Status => "status",
            Rule::Body => "body",
            Rule::ContentType => "content-type",
            Rule::ContentLength => "content-length",
            Rule::Framing => "framing",
            Rule::DatePresent => "date-present",
            Rule::DateFresh => "date-fresh",
            Rule::RequiredHeaders => "required-headers",
            Rule::ExtraHeaders => "extra-headers",
            Rule::DynamicChanges => "dynamic-changes",
            Rule::Ipv4 => "ipv4",
            Rule::Ipv6 => "ipv6",
            Rule::ReferenceBytes => "reference-bytes",
            Rule::DbRow => "db-row",
            Rule::DbCount => "db-count",
            Rule::HtmlEscape => "html-escape",
            Rule::DbUpdate => "db-update",
            Rule::ConnectionHeaders => "connection-headers",
            Rule::Http1Fields => "http1-fields",
            Rule::ContentEncoding => "content-encoding",
            Rule::Vary => "vary",
        }
    }

    /// A contract rule by name.
    pub fn parse(s: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.name() == s)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Grade {
    Pass,
    Warn,
    Fail,
}

impl Grade {
    pub fn as_str(self) -> &'static str {
        match self {
            Grade::Pass => "pass",
            Grade::Warn => "warn",
            Grade::Fail => "fail",
        }
    }
}

impl fmt::Display for Grade {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleResult {
    pub rule: Rule,
    pub grade: Grade,
    /// Human-readable; server-supplied text in it is escaped.
    pub detail: String,
}

impl RuleResult {
    pub fn new(rule: Rule, grade: Grade, detail: impl Into<String>) -> Self {
        RuleResult {
            rule,
            grade,
            detail: detail.into(),
        }
    }
}

/// The worst grade of a set of results (`Pass` when empty).
pub fn worst(results: &[RuleResult]) -> Grade {
    results.iter().map(|r| r.grade).max().unwrap_or(Grade::Pass)
}
