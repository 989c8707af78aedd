//! Quoting for the POSIX shell that runs an ssh command on the far side.
//!
//! ssh joins its command arguments with spaces and hands the string to the
//! remote user's shell, so every argument is quoted here exactly once.

/// `arg` as one word of a POSIX shell command line.
pub fn word(arg: &str) -> String {
    if !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@%+,".contains(&b))
    {
        return arg.to_string();
    }
    format!("'{}'", arg.replace('\'', r"'\''"))
}

/// Every argument quoted, joined by spaces.
pub fn line<S: AsRef<str>>(argv: &[S]) -> String {
    argv.iter()
        .map(|a| word(a.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_words_stay_plain() {
        assert_eq!(word("/usr/bin/python3"), "/usr/bin/python3");
        assert_eq!(word("PORT=8080"), "PORT=8080");
    }

    #[test]
    fn everything_else_is_single_quoted() {
        assert_eq!(word(""), "''");
        assert_eq!(word("a b"), "'a b'");
        assert_eq!(word("it's"), r"'it'\''s'");
        assert_eq!(word("$HOME;rm -rf /"), "'$HOME;rm -rf /'");
        assert_eq!(line(&["echo", "{\"a\": 1}"]), "echo '{\"a\": 1}'");
    }

    #[test]
    fn the_shell_reads_back_what_was_quoted() {
        let args = ["x y", "it's", "$(id)", "\\n", "\"q\"", "*"];
        let out = std::process::Command::new("sh")
            .args(["-c", &format!("printf '%s\\n' {}", line(&args))])
            .output()
            .unwrap();
        let back: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(back, args);
    }
}
