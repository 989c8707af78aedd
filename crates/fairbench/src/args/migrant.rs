//! Flags that users of wrk, wrk2, ab, hey and oha type by habit. Those that
//! mean the same here are aliases on `load`'s own flags; the others fail with
//! one line naming the fairbench equivalent, instead of clap's advice to
//! pass them as values.

use clap::error::{ContextKind, ContextValue, ErrorKind};

/// A habit: the flag as typed, an example value when it takes one, and what
/// to do instead (`{v}` is the value typed after the flag, else the example).
struct Habit {
    flag: &'static str,
    value: Option<&'static str>,
    advice: &'static str,
}

const fn h(flag: &'static str, value: Option<&'static str>, advice: &'static str) -> Habit {
    Habit {
        flag,
        value,
        advice,
    }
}

#[rustfmt::skip]
const HABITS: &[Habit] = &[
    h("-z", Some("10s"), "`-z` is hey's and oha's duration: use `-d {v}`"),
    h("-q", Some("100"), "`-q` is oha's rate: use `-R {v}` (the total rate in requests/s; hey's -q is per worker, so multiply it by -c)"),
    h("-k", None, "`-k` is ab's keep-alive, which fairbench always uses (unless --no-keepalive): drop it (to accept any certificate, as curl's -k, use --insecure)"),
    h("-x", Some("HOST:PORT"), "`-x` is curl's, hey's and oha's proxy: use `--proxy http://{v}` (its own time is then in every latency)"),
    h("-h2", None, "`-h2` is hey's HTTP/2: use `--http2` (h2 by ALPN on https://, h2c on http://)"),
    h("--http-version", Some("2"), "`--http-version` is oha's: use `--http2` for HTTP/2 (HTTP/1.1 is the default)"),
    h("-p", Some("FILE"), "`-p` is ab's POST body file: use `-m POST --body-file {v}` (oha's -p, HTTP/2 streams per connection, is `--http2 --streams N`)"),
    h("-u", Some("FILE"), "`-u` is ab's PUT body file: use `-m PUT --body-file {v}`"),
    h("-T", Some("application/json"), "`-T` is the content type in ab, hey and oha: use `-H 'Content-Type: {v}'`"),
    h("-U", None, "`-U` is wrk2's uncorrected latency: with -R fairbench always prints the service time beside the corrected latency; drop it"),
    h("-B", None, "`-B` is wrk2's batch latency: fairbench times every request from its own planned time; drop it"),
    h("--batch_latency", None, "`--batch_latency` is wrk2's: fairbench times every request from its own planned time; drop it"),
    h("--burst-delay", Some("1s"), "`--burst-delay` is oha's: -R spreads the requests evenly, fairbench sends no bursts"),
    h("--burst-rate", Some("10"), "`--burst-rate` is oha's: -R spreads the requests evenly, fairbench sends no bursts"),
    h("--rand-regex-url", None, "`--rand-regex-url` is oha's: put a template in the URL, e.g. `/items/{{uniform 1 10000}}` (docs/targets.md)"),
    h("--urls-from-file", Some("FILE"), "`--urls-from-file` is oha's: list the requests in a targets file, `--targets FILE` (docs/targets.md)"),
    h("--debug", None, "`--debug` is oha's: use `--dump` to see one request and its response as exchanged"),
    h("--fps", Some("16"), "`--fps` is oha's TUI refresh: fairbench has no TUI; drop it"),
    h("-D", Some("FILE"), "`-D` is hey's and oha's body file: use `--body-file {v}`"),
    h("-A", Some("*/*"), "`-A` is hey's and oha's Accept header: use `-H 'Accept: {v}'`"),
    h("-a", Some("USER:PASS"), "`-a` is hey's and oha's basic auth: use `-H 'Authorization: Basic <base64 of {v}>'`"),
    h("-C", Some("NAME=VALUE"), "`-C` is ab's cookie: use `-H 'Cookie: {v}'`"),
    h("--host", Some("HOST"), "`--host` is oha's Host header: use `-H 'Host: {v}'`"),
    h("-host", Some("HOST"), "`-host` is hey's Host header: use `-H 'Host: {v}'`"),
    h("-s", Some("SCRIPT"), "`-s` is wrk's Lua script or ab's timeout: fairbench has no scripting (set the request with -m, -H and --body); for ab's timeout use `--timeout 30s`"),
    h("--script", Some("SCRIPT"), "`--script` is wrk's Lua script: fairbench has no scripting; set the request with -m, -H and --body or --body-file"),
    h("-i", None, "`-i` is ab's HEAD requests: use `-m HEAD`"),
    h("-o", Some("csv"), "`-o` is hey's and oha's output: use `--format json` (or `--hdr-log FILE` for the latency over time)"),
    h("--output-format", Some("json"), "`--output-format` is oha's: use `--format {v}`"),
    h("-e", Some("FILE"), "`-e` is ab's CSV of percentiles: use `--format json`, or `--save` and `fairbench report --format csv`"),
    h("-g", Some("FILE"), "`-g` is ab's gnuplot file: use `--hdr-log FILE`, or `--save` and `fairbench report`"),
    h("-w", None, "`-w` is oha's wait for requests in flight at the deadline, which fairbench always does (the drain): drop it (for ab's -w HTML, `--save` and `fairbench report`)"),
    h("--wait-ongoing-requests-after-deadline", None, "fairbench always waits for the requests in flight when the time is up (the drain): drop `--wait-ongoing-requests-after-deadline`"),
    h("--latency-correction", None, "`--latency-correction` is oha's: with -R fairbench always measures latency from each request's planned time; drop it"),
    h("--u_latency", None, "`--u_latency` is wrk2's: with -R fairbench always prints the uncorrected service time beside the corrected latency; drop it"),
    h("--no-tui", None, "`--no-tui` is oha's: fairbench has no TUI, only a progress line on a terminal; drop it"),
    h("--stats-success-breakdown", None, "`--stats-success-breakdown` is oha's: fairbench always counts every status code; drop it (`--expect-status` says which are successes)"),
    h("-r", None, "`-r` is ab's keep-going on socket errors, which fairbench always does (errors are counted by kind): drop it; fairbench never follows redirects (oha's -r)"),
    h("--redirect", Some("0"), "`--redirect` is oha's: fairbench never follows redirects, a 3xx is the answer (`--expect-status 2xx` to count it an error)"),
    h("--disable-redirects", None, "`--disable-redirects` is oha's: fairbench never follows redirects; drop it"),
    h("-disable-redirects", None, "`-disable-redirects` is hey's: fairbench never follows redirects; drop it"),
    h("--disable-compression", None, "`--disable-compression` is oha's: fairbench sends no Accept-Encoding, so nothing is compressed; drop it"),
    h("-disable-compression", None, "`-disable-compression` is hey's: fairbench sends no Accept-Encoding, so nothing is compressed; drop it"),
    h("-disable-keepalive", None, "`-disable-keepalive` is hey's: use `--no-keepalive`"),
    h("-cpus", Some("N"), "`-cpus` is hey's: use `-t N` for N load threads, or `--cpus 0-1` to pin them to CPUs"),
    h("--ipv6", None, "`--ipv6` is oha's: put the address in the URL, e.g. http://[::1]:8080/"),
    h("--ipv4", None, "`--ipv4` is oha's: put the address in the URL, e.g. http://127.0.0.1:8080/"),
    h("-v", None, "`-v` is ab's verbosity: use `--dump` to see one request and its response as exchanged"),
];

/// hey spells its long flags with one dash, which clap reads as a cluster of
/// short ones (`-h2` would print the help and exit 0): these are looked for
/// before clap parses `load`'s arguments.
pub fn single_dash_habit(argv: &[String]) -> Option<String> {
    if argv.get(1).map(String::as_str) != Some("load") {
        return None;
    }
    let args = until_double_dash(&argv[2..]);
    args.iter().enumerate().find_map(|(i, a)| {
        let habit = HABITS
            .iter()
            .find(|h| h.flag == a && !h.flag.starts_with("--") && h.flag.len() > 2)?;
        Some(advise(habit, args.get(i + 1).map(String::as_str)))
    })
}

/// The one line for a clap error in `load` caused by another tool's habit,
/// if it was one.
pub fn hint(argv: &[String], e: &clap::Error) -> Option<String> {
    if argv.get(1).map(String::as_str) != Some("load") {
        return None;
    }
    let args = until_double_dash(&argv[2..]);
    match e.kind() {
        ErrorKind::UnknownArgument => {
            let typed = context_string(e, ContextKind::InvalidArg)?;
            // `-z3s` or `--host=x`: the flag is the part clap names.
            let (flag, attached) = split_attached(&typed);
            let habit = HABITS.iter().find(|h| h.flag == flag)?;
            let value = attached.map(str::to_string).or_else(|| {
                let at = args.iter().position(|a| a.starts_with(&typed))?;
                match &args[at][typed.len()..] {
                    "" => args.get(at + 1).cloned(),
                    rest => Some(rest.to_string()),
                }
            });
            // wrk's -T is its timeout: a duration says which tool it was.
            if let Some(v) = value
                .as_deref()
                .filter(|v| flag == "-T" && super::duration(v).is_ok())
            {
                return Some(format!("`-T` is wrk's timeout: use `--timeout {v}`"));
            }
            Some(advise(habit, value.as_deref()))
        }
        ErrorKind::ValueValidation => {
            let arg = context_string(e, ContextKind::InvalidArg)?;
            let value = context_string(e, ContextKind::InvalidValue)?;
            if arg.starts_with("--duration") && !looks_numeric(&value) {
                Some(format!(
                    "`-d {value}` is not a duration: -d is the duration here, as in wrk; hey's and oha's -d request body is `--body '{value}'` (and -D FILE is `--body-file FILE`)"
                ))
            } else if arg.starts_with("--threads")
                && value.parse::<f64>().is_err()
                && super::duration(&value).is_ok()
            {
                Some(format!(
                    "-t is the number of load threads here, as in wrk; ab's, hey's and oha's -t timeout is `--timeout {value}`"
                ))
            } else {
                None
            }
        }
        _ => None,
    }
}

/// `load localhost:8080`: the URL without its scheme; `load unix:/path`: a
/// socket given where the URL goes.
pub fn url_hint(url: &str) -> Option<String> {
    if let Some(path) = url.strip_prefix("unix:") {
        let path = path.trim_start_matches("//");
        return Some(format!(
            "URL: {url:?}: a server on a unix socket is loaded with --unix-socket {path} http://localhost/ (the URL gives the Host header and the path)"
        ));
    }
    if url.contains("://") {
        return None;
    }
    Some(format!(
        "URL: {url:?} has no scheme: use http://{url}{} (or https://)",
        if url.contains('/') { "" } else { "/" }
    ))
}

fn advise(habit: &Habit, value: Option<&str>) -> String {
    // A value that is itself a flag was not this habit's value.
    let value = value
        .filter(|v| !v.starts_with('-') && !v.contains("://"))
        .or(habit.value)
        .unwrap_or_default();
    habit.advice.replace("{v}", value)
}

fn until_double_dash(args: &[String]) -> &[String] {
    let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    &args[..end]
}

fn split_attached(typed: &str) -> (&str, Option<&str>) {
    if let Some((flag, v)) = typed.split_once('=') {
        return (flag, Some(v));
    }
    if !typed.starts_with("--") && typed.len() > 2 {
        let (flag, v) = typed.split_at(2);
        if HABITS.iter().any(|h| h.flag == flag && h.value.is_some()) {
            return (flag, Some(v));
        }
    }
    (typed, None)
}

fn looks_numeric(v: &str) -> bool {
    v.trim_start()
        .starts_with(|c: char| c.is_ascii_digit() || c == '.')
}

fn context_string(e: &clap::Error, kind: ContextKind) -> Option<String> {
    match e.get(kind)? {
        ContextValue::String(s) => Some(s.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_habit_is_one_line_and_names_its_flag() {
        for h in HABITS {
            assert!(!h.advice.contains('\n'), "{}", h.flag);
            assert!(h.advice.contains(h.flag), "{}", h.flag);
            assert!(!h.advice.contains("{v}") || h.value.is_some(), "{}", h.flag);
        }
    }

    #[test]
    fn attached_values_are_split_off() {
        assert_eq!(split_attached("-z3s"), ("-z", Some("3s")));
        assert_eq!(split_attached("--host=a"), ("--host", Some("a")));
        assert_eq!(split_attached("-k"), ("-k", None));
    }

    #[test]
    fn a_url_without_scheme_suggests_http() {
        assert_eq!(
            url_hint("localhost:8080").unwrap(),
            "URL: \"localhost:8080\" has no scheme: use http://localhost:8080/ (or https://)"
        );
        assert!(url_hint("http://a/").is_none());
    }
}
