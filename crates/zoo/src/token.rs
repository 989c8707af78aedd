//! HTTP tokens (RFC 9110 §5.6.2): what a method or a header name may be,
//! for manifests and scenarios alike.

/// A non-empty run of token characters.
pub(crate) fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c))
}
