//! `{name}` placeholders in manifest argv elements and env values.

use std::collections::HashMap;

/// Placeholders valid in build commands and build env.
pub const BUILD_PLACEHOLDERS: &[&str] = &["dir", "out", "files"];
/// Placeholders valid in the run command and run env: build ones plus the
/// per-start values (`tls_cert` and `tls_key` are empty unless the start
/// serves h2 over TLS; `protocol_tag` is the protocol spelled for a file
/// name, `http1`, `h2c` or `h2`, since `http/1.1` holds a slash;
/// `unix_socket` is the path a server listens on instead of `port`, empty
/// over TCP, as `port` is over a unix socket).
pub const RUN_PLACEHOLDERS: &[&str] = &[
    "dir",
    "out",
    "files",
    "port",
    "cores",
    "scenario",
    "response",
    "mode",
    "conf",
    "protocol",
    "protocol_tag",
    "tls_cert",
    "tls_key",
    "unix_socket",
];
/// Placeholders valid in a mode's `templates` files: the run ones, `{conf}`
/// included (a pid file or temporary folder of the start's own).
pub const TEMPLATE_PLACEHOLDERS: &[&str] = RUN_PLACEHOLDERS;

/// The placeholder names used in `s`: `{word}` where word is letters and
/// underscores, in any case, so that `{PORT}` is seen (and rejected: the
/// known ones are lower case) rather than silently left in place. Anything
/// else in braces (JSON, Go templates) is text, and so is a shell's or
/// nginx's `${NAME}`.
pub fn names(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find('{') {
        let after = &rest[i + 1..];
        let dollar = rest[..i].ends_with('$');
        match after.find('}') {
            Some(j) if is_word(&after[..j]) && !dollar => {
                out.push(&after[..j]);
                rest = &after[j + 1..];
            }
            _ => rest = after,
        }
    }
    out
}

fn is_word(w: &str) -> bool {
    !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_')
}

/// The first placeholder in `s` not in `allowed`, if any.
pub fn first_unknown<'a>(s: &'a str, allowed: &[&str]) -> Option<&'a str> {
    names(s).into_iter().find(|n| !allowed.contains(n))
}

/// The error for an unknown placeholder `p`: what is known, and the known
/// one it is in the wrong case of, if any.
pub fn unknown_message(p: &str, allowed: &[&str]) -> String {
    let list = allowed
        .iter()
        .map(|n| format!("{{{n}}}"))
        .collect::<Vec<_>>()
        .join(", ");
    let lower = p.to_ascii_lowercase();
    if lower != p && allowed.contains(&lower.as_str()) {
        format!("unknown placeholder {{{p}}}: placeholders are lower case, use {{{lower}}}; expected one of {list}")
    } else {
        format!("unknown placeholder {{{p}}}; expected one of {list}")
    }
}

/// Replaces every known placeholder; unknown ones were rejected at load time
/// and are left as they are.
pub fn substitute(s: &str, values: &HashMap<&str, String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        match after.find('}') {
            Some(j)
                if is_word(&after[..j])
                    && values.contains_key(&after[..j])
                    && !rest[..i].ends_with('$') =>
            {
                out.push_str(&values[&after[..j]]);
                rest = &after[j + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_words_only() {
        assert_eq!(
            names("{out}/server --x={\"a\":1} {port}"),
            vec!["out", "port"]
        );
        assert_eq!(
            first_unknown("{out}/{oops}", BUILD_PLACEHOLDERS),
            Some("oops")
        );
        assert_eq!(first_unknown("{port}", BUILD_PLACEHOLDERS), Some("port"));
    }

    #[test]
    fn a_placeholder_in_the_wrong_case_is_unknown_and_named() {
        assert_eq!(
            first_unknown("--port={PORT}", RUN_PLACEHOLDERS),
            Some("PORT")
        );
        let m = unknown_message("PORT", RUN_PLACEHOLDERS);
        assert!(
            m.starts_with("unknown placeholder {PORT}: placeholders are lower case, use {port}"),
            "{m}"
        );
        // A shell's or nginx's ${NAME} is theirs.
        assert_eq!(first_unknown("exec srv ${PORT}", RUN_PLACEHOLDERS), None);
        assert_eq!(names("${port} {port}"), vec!["port"]);
    }

    #[test]
    fn substitutes_known() {
        let mut v = HashMap::new();
        v.insert("out", "/o".to_string());
        assert_eq!(
            substitute("{out}/s {\"k\":1} {x}", &v),
            "/o/s {\"k\":1} {x}"
        );
    }
}
