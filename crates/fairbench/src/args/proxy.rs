//! `--proxy URL` and `--proxy-from-env`: the flags and the proxy they
//! choose for a URL; crate::request_options makes the target from it, as
//! from a service's `proxy` key.
//!
//! The environment is read only when asked (`--proxy-from-env`): a
//! benchmark whose numbers change because a shell exported `http_proxy`
//! would be measuring the proxy without saying so. When asked, the
//! variables are curl's: `https_proxy`/`HTTPS_PROXY` for https:// URLs,
//! `http_proxy`/`HTTP_PROXY` for http:// ones (lower case first), and
//! `no_proxy`/`NO_PROXY` to exempt hosts; `--proxy` wins over them all.

#[derive(clap::Args, Debug, Clone, Default)]
pub struct ProxyArgs {
    /// Load through the HTTP proxy at URL: http://[USER:PASS@]HOST[:PORT] (port 1080 when
    /// none, as curl). http:// URLs are forwarded in absolute form; https:// ones go through a
    /// CONNECT tunnel (TLS, SNI, the certificate check and h2 as without one). The proxy's own
    /// time is in every latency, and the summary says so. Not with h2c, --unix-socket,
    /// --connect-to, --resolve, --vs or several generators.
    #[arg(help_heading = "Connection and TLS", long, value_name = "URL")]
    pub proxy: Option<String>,
    /// Take the proxy from the environment as curl does: https_proxy/HTTPS_PROXY for https://,
    /// http_proxy/HTTP_PROXY for http://, except hosts in no_proxy/NO_PROXY. Without this
    /// flag those variables are ignored; --proxy wins over them.
    #[arg(help_heading = "Connection and TLS", long)]
    pub proxy_from_env: bool,
}

/// The proxy URL the flags give for `url`, if any (the environment read
/// only with `--proxy-from-env`); crate::request_options makes the target.
pub fn for_url(args: &ProxyArgs, url: &str) -> Option<String> {
    chosen(args, url, &|k| std::env::var(k).ok())
}

/// The proxy URL for `url`: `--proxy`, or with `--proxy-from-env` the
/// environment's (`env` reads a variable; an empty one is unset).
fn chosen(args: &ProxyArgs, url: &str, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    if let Some(p) = &args.proxy {
        return Some(p.clone());
    }
    if !args.proxy_from_env {
        return None;
    }
    let var = |names: [&str; 2]| names.iter().find_map(|n| env(n).filter(|v| !v.is_empty()));
    let parsed = url::Url::parse(url).ok()?;
    let proxy = match parsed.scheme() {
        "https" => var(["https_proxy", "HTTPS_PROXY"]),
        _ => var(["http_proxy", "HTTP_PROXY"]),
    }?;
    let host = match parsed.host()? {
        url::Host::Ipv6(a) => a.to_string(),
        h => h.to_string(),
    };
    match var(["no_proxy", "NO_PROXY"]) {
        Some(list) if exempt(&list, &host) => None,
        _ => Some(proxy),
    }
}

/// curl's `NO_PROXY`: comma-separated; `*` alone exempts every host; a
/// name exempts itself and its subdomains (a leading dot is optional); an
/// address exempts itself, and `ADDR/BITS` a network.
fn exempt(list: &str, host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    list.split(',').map(str::trim).any(|entry| {
        let entry = entry.trim_start_matches('.').to_ascii_lowercase();
        if entry.is_empty() {
            return false;
        }
        if entry == "*" {
            return true;
        }
        if let Some((net, bits)) = entry.split_once('/') {
            return in_network(&host, net, bits);
        }
        let entry = entry.trim_matches(|c| c == '[' || c == ']');
        host == entry || host.ends_with(&format!(".{entry}"))
    })
}

/// Whether the address `host` lies in `net/bits` (both of one family).
fn in_network(host: &str, net: &str, bits: &str) -> bool {
    use std::net::IpAddr;
    let (Ok(h), Ok(n), Ok(bits)) = (
        host.parse::<IpAddr>(),
        net.trim_matches(|c| c == '[' || c == ']').parse::<IpAddr>(),
        bits.parse::<u32>(),
    ) else {
        return false;
    };
    let (h, n, width) = match (h, n) {
        (IpAddr::V4(h), IpAddr::V4(n)) => (u128::from(u32::from(h)), u128::from(u32::from(n)), 32),
        (IpAddr::V6(h), IpAddr::V6(n)) => (u128::from(h), u128::from(n), 128),
        _ => return false,
    };
    if bits > width {
        return false;
    }
    let shift = width - bits;
    shift >= 128 || (h >> shift) == (n >> shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_environment_is_read_only_when_asked_and_by_scheme() {
        let vars = [("http_proxy", "http://p:1"), ("HTTPS_PROXY", "http://s:2")];
        let off = ProxyArgs::default();
        assert_eq!(chosen(&off, "http://a/", &env(&vars)), None);
        let on = ProxyArgs {
            proxy_from_env: true,
            ..Default::default()
        };
        assert_eq!(
            chosen(&on, "http://a/", &env(&vars)).as_deref(),
            Some("http://p:1")
        );
        assert_eq!(
            chosen(&on, "https://a/", &env(&vars)).as_deref(),
            Some("http://s:2")
        );
        let flag = ProxyArgs {
            proxy: Some("http://x:3".into()),
            proxy_from_env: true,
        };
        assert_eq!(
            chosen(&flag, "http://a/", &env(&vars)).as_deref(),
            Some("http://x:3")
        );
        let lower_first = [("http_proxy", "http://l:1"), ("HTTP_PROXY", "http://u:1")];
        assert_eq!(
            chosen(&on, "http://a/", &env(&lower_first)).as_deref(),
            Some("http://l:1")
        );
        let empty = [("http_proxy", ""), ("HTTP_PROXY", "http://u:1")];
        assert_eq!(
            chosen(&on, "http://a/", &env(&empty)).as_deref(),
            Some("http://u:1")
        );
    }

    #[test]
    fn no_proxy_follows_curls_rules() {
        assert!(exempt("localhost, .example.com", "api.example.com"));
        assert!(exempt("example.com", "example.com"));
        assert!(!exempt("example.com", "badexample.com"));
        assert!(exempt("*", "anything"));
        assert!(exempt("10.0.0.0/8,::1", "10.2.3.4"));
        assert!(exempt("10.0.0.0/8,::1", "::1"));
        assert!(!exempt("10.0.0.0/8", "11.0.0.1"));
        assert!(exempt("fd00::/8", "fd12::1"));
        assert!(!exempt("", "a"));
        let vars = [("http_proxy", "http://p:1"), ("no_proxy", "127.0.0.1")];
        let on = ProxyArgs {
            proxy_from_env: true,
            ..Default::default()
        };
        assert_eq!(chosen(&on, "http://127.0.0.1:8/", &env(&vars)), None);
        assert!(chosen(&on, "http://[::1]:8/", &env(&vars)).is_some());
    }
}
