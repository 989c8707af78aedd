//! A server that asks for a client certificate may refuse it (or its
//! absence) not in the handshake but in HTTP: nginx with `ssl_verify_client
//! on` completes every handshake and answers each request `400 No required
//! SSL certificate was sent` (or `The SSL certificate error`). A run would
//! then measure nothing but that refusal, so before it, such a server is
//! sent one GET of the URL and a refusal of that kind stops the run in one
//! line.

use std::io::{Read, Write};

use crate::dial::Dialed;
use crate::target::Target;
use crate::tls::TlsClient;

/// How much of the answer is read: its status line and the start of its
/// body, where nginx names the refusal.
const LOOK: usize = 4096;

/// `Err` with the refusal in words when the server asked `client` for a
/// certificate and refused the request over `conn` for the certificate's
/// sake; `Ok` otherwise, including when the answer does not come.
pub(crate) fn check(conn: &mut Dialed, client: &TlsClient, target: &Target) -> Result<(), String> {
    if !client.certificate_asked() {
        return Ok(());
    }
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        target.path, target.host_header
    );
    if conn.write_all(request.as_bytes()).is_err() {
        return Ok(());
    }
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    while answer.len() < LOOK && !enough(&answer) {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
        }
    }
    let answer = String::from_utf8_lossy(&answer);
    match refusal(&answer) {
        Some(said) => Err(in_words(client.has_certificate(), &said, target, conn)),
        None => Ok(()),
    }
}

/// Whether what was read decides: an answer other than a `400` needs no
/// more than its status line, a `400` until it names a certificate (a
/// server that keeps the connection open despite `Connection: close` is
/// then not waited for).
fn enough(answer: &[u8]) -> bool {
    let text = String::from_utf8_lossy(answer);
    let Some((status, _)) = text.split_once("\r\n") else {
        return false;
    };
    status.split(' ').nth(1) != Some("400") || refusal(&text).is_some()
}

/// What a `400` answer says about a certificate (nginx's page title), when
/// it is about one.
fn refusal(answer: &str) -> Option<String> {
    let status = answer.lines().next()?;
    if !status.starts_with("HTTP/1.") || status.split(' ').nth(1) != Some("400") {
        return None;
    }
    let said = answer
        .lines()
        .map(strip_tags)
        .find(|l| l.to_ascii_lowercase().contains("certificate"))?;
    Some(said.chars().take(100).collect())
}

fn strip_tags(line: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in line.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.trim().to_string()
}

fn in_words(given: bool, said: &str, target: &Target, conn: &Dialed) -> String {
    let who = match conn.peer() {
        Some(a) => format!("{} ({a})", target.host),
        None => target.host.clone(),
    };
    if given {
        format!("{who} refused the client certificate given by --cert (it answered \"{said}\"): is it signed by a CA the server trusts (nginx: ssl_client_certificate), valid today and meant for client authentication?")
    } else {
        format!("{who} asked for a client certificate and refused the request without one (it answered \"{said}\"): --cert FILE --key FILE give one")
    }
}

#[cfg(test)]
mod tests {
    use super::refusal;

    #[test]
    fn nginx_refusals_are_found_by_their_title() {
        let page = "HTTP/1.1 400 Bad Request\r\nServer: nginx\r\n\r\n<html>\r\n<head><title>400 No required SSL certificate was sent</title></head>\r\n";
        assert_eq!(
            refusal(page).as_deref(),
            Some("400 No required SSL certificate was sent")
        );
    }

    #[test]
    fn reading_stops_once_the_answer_decides() {
        assert!(!super::enough(b"HTTP/1.1 40"));
        assert!(super::enough(b"HTTP/1.1 200 OK\r\n"));
        assert!(!super::enough(b"HTTP/1.1 400 Bad Request\r\n\r\n<html>"));
        assert!(super::enough(
            b"HTTP/1.1 400 Bad Request\r\n\r\n<title>400 The SSL certificate error</title>\r\n"
        ));
    }

    #[test]
    fn other_answers_are_not_refusals() {
        assert_eq!(refusal("HTTP/1.1 200 OK\r\n\r\ncertificate"), None);
        assert_eq!(refusal("HTTP/1.1 400 Bad Request\r\n\r\nbad JSON"), None);
        assert_eq!(refusal(""), None);
    }
}
