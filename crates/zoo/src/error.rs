//! Definition errors: what is wrong with a manifest or a scenario file, said
//! so that the author can fix it without reading fairbench's source.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// One problem in one definition file: the file, the field (a dotted path such
/// as `modes.native.run`) and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DefinitionError {
    /// The file as shown to the user (relative to the zoo root when possible).
    pub file: PathBuf,
    /// Dotted field path; `None` when the problem is the file as a whole.
    pub field: Option<String>,
    pub message: String,
    /// 1-based line of the problem when the TOML parser knows it.
    pub line: Option<usize>,
}

impl DefinitionError {
    pub fn file(file: &Path, message: impl Into<String>) -> Self {
        DefinitionError {
            file: file.to_path_buf(),
            field: None,
            message: message.into(),
            line: None,
        }
    }

    pub fn field(file: &Path, field: impl Into<String>, message: impl Into<String>) -> Self {
        DefinitionError {
            file: file.to_path_buf(),
            field: Some(field.into()),
            message: message.into(),
            line: None,
        }
    }
}

impl fmt::Display for DefinitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field {field}")?;
        }
        // One line, as every message is: a TOML parser's spans several.
        let lines: Vec<&str> = self
            .message
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        write!(f, ": {}", lines.join(" "))
    }
}

impl std::error::Error for DefinitionError {}

/// Parses TOML into `T`, turning serde's error into one that names the field
/// path and says what was expected in the manifest's own vocabulary.
pub(crate) fn parse_toml<T: serde::de::DeserializeOwned>(
    text: &str,
    shown: &Path,
) -> Result<T, DefinitionError> {
    let de = toml::Deserializer::new(text);
    serde_path_to_error::deserialize::<_, T>(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let line = inner.span().map(|s| line_of(text, s.start));
        let raw = inner.message().trim().to_string();
        let (field, message) = explain(&path, &raw);
        DefinitionError {
            file: shown.to_path_buf(),
            field,
            message,
            line,
        }
    })
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Rewords serde's messages ("a sequence", "struct X") into TOML terms and
/// moves the missing/unknown field name into the field path.
fn explain(path: &str, raw: &str) -> (Option<String>, String) {
    let parent = if path == "." || path.is_empty() {
        None
    } else {
        Some(path.to_string())
    };
    // serde_path_to_error ends the path at the unknown field itself but at
    // the parent of a missing one.
    let join = |name: &str| match &parent {
        Some(p) if p == name || p.ends_with(&format!(".{name}")) => p.clone(),
        Some(p) => format!("{p}.{name}"),
        None => name.to_string(),
    };
    if let Some(name) = between(raw, "missing field `", "`") {
        return (Some(join(name)), "required field is missing".to_string());
    }
    if let Some(name) = between(raw, "unknown field `", "`") {
        let expected = raw
            .split_once(", expected ")
            .map(|(_, rest)| format!("; expected one of: {}", rest.trim_start_matches("one of ")))
            .unwrap_or_default();
        return (Some(join(name)), format!("unknown field{expected}"));
    }
    if let Some(name) = between(raw, "unknown variant `", "`") {
        return (parent, format!("unknown value `{name}`{}", tail(raw)));
    }
    let message = raw
        .replace("a sequence", "an array")
        .replace("a map", "a table");
    let message = reword_struct(&message);
    // serde says "invalid type: string \"x\", expected an array"; lead with
    // the expectation, which is what the author has to act on.
    let message = match message
        .strip_prefix("invalid type: ")
        .and_then(|m| m.split_once(", expected "))
    {
        Some((found, expected)) => format!("expected {expected}, found {found}"),
        None => message,
    };
    (parent, message)
}

fn between<'a>(s: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let i = s.find(start)? + start.len();
    let j = s[i..].find(end)? + i;
    Some(&s[i..j])
}

fn tail(raw: &str) -> String {
    raw.split_once(", expected ")
        .map(|(_, rest)| format!("; expected {rest}"))
        .unwrap_or_default()
}

/// "expected struct RawMode" means nothing to a manifest author.
fn reword_struct(message: &str) -> String {
    match message.find("struct ") {
        Some(i) => {
            let rest = &message[i + "struct ".len()..];
            let end = rest
                .find(|c: char| !c.is_alphanumeric() && c != '_')
                .unwrap_or(rest.len());
            format!("{}a table{}", &message[..i], &rest[end..])
        }
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_field_moves_into_path() {
        let (field, msg) = explain("modes.native", "missing field `run`");
        assert_eq!(field.as_deref(), Some("modes.native.run"));
        assert_eq!(msg, "required field is missing");
    }

    #[test]
    fn sequence_reads_as_array() {
        let (field, msg) = explain(
            "modes.native.run",
            "invalid type: string \"x\", expected a sequence",
        );
        assert_eq!(field.as_deref(), Some("modes.native.run"));
        assert_eq!(msg, "expected an array, found string \"x\"");
    }
}

/// A regex error on one line: the regex crate's message spans four (the
/// pattern, a caret under the place, the reason); this keeps the reason and
/// says where: "unclosed group (at character 1)".
pub fn regex_message(e: &regex::Error) -> String {
    let text = e.to_string();
    let lines: Vec<&str> = text.lines().collect();
    let reason = lines
        .iter()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .map(str::to_string)
        .unwrap_or_else(|| lines.join(" "));
    match lines.iter().find(|l| l.trim_start().starts_with('^')) {
        Some(caret) => {
            // The caret line is indented like the pattern line above it.
            let pattern_indent = lines
                .iter()
                .find(|l| !l.trim().is_empty() && !l.starts_with("regex parse error"))
                .map_or(0, |l| l.len() - l.trim_start().len());
            let at = caret.len() - caret.trim_start().len() - pattern_indent + 1;
            format!("{reason} (at character {at})")
        }
        None => reason,
    }
}

#[cfg(test)]
mod regex_tests {
    #[test]
    fn regex_errors_fit_one_line() {
        // Built at run time: the patterns are invalid on purpose.
        let bad = |p: &str| regex::Regex::new(std::hint::black_box(p)).unwrap_err();
        let e = bad("ab(c");
        let m = super::regex_message(&e);
        assert_eq!(m, "unclosed group (at character 3)");
        let e = bad("x{2,1}");
        assert!(!super::regex_message(&e).contains('\n'));
    }
}
