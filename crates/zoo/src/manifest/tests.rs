//! The unit tests of `manifest`.

use super::*;

fn load(text: &str) -> Result<Server, Vec<DefinitionError>> {
    let dir = tempfile::tempdir().unwrap();
    let sdir = dir.path().join("demo");
    std::fs::create_dir(&sdir).unwrap();
    std::fs::write(sdir.join("server.toml"), text).unwrap();
    Server::load(&sdir, Path::new("servers/demo/server.toml"))
}

const GOOD: &str = r#"
name = "demo"
language = "Go"
framework = "net/http"
framework_version = "stdlib"
[toolchain]
name = "go"
probe = ["go", "version"]
version_regex = 'go(\d+\.\d+(?:\.\d+)?)'
[modes.native]
build = [["go", "build", "-o", "{out}/server", "."]]
run = ["{out}/server"]
[modes.exe]
unsupported = "no such thing"
[responses.default]
[responses.normalized]
known_deviations = [{ header = "X-Powered-By", reason = "always added" }]
"#;

#[test]
fn good_manifest_loads_in_order() {
    let s = load(GOOD).unwrap();
    assert_eq!(s.modes.keys().collect::<Vec<_>>(), vec!["native", "exe"]);
    assert_eq!(s.variants().len(), 4);
    assert_eq!(s.variants()[1].to_string(), "native/normalized");
    assert_eq!(s.normalized_response.known_deviations.len(), 1);
    assert!(!s.has_response(ResponseKind::Study));
}

#[test]
fn the_2012_posts_handlers_are_optional_responses_in_their_own_order() {
    // Given out of order, listed in ResponseKind::ALL's.
    let s = load(&format!(
        "{GOOD}[responses.post2012-local]\nworkers = \"one\"\n[responses.post2012-exists]\n[responses.study]\n"
    ))
    .unwrap();
    assert_eq!(
        s.responses(),
        vec![
            ResponseKind::Default,
            ResponseKind::Normalized,
            ResponseKind::Study,
            ResponseKind::Post2012Exists,
            ResponseKind::Post2012Local,
        ]
    );
    assert!(!s.has_response(ResponseKind::Post2012Session));
    assert_eq!(
        s.response(ResponseKind::Post2012Local).workers,
        Workers::One
    );
    assert_eq!(s.variants()[4].to_string(), "native/post2012-local");
    for k in ResponseKind::ALL {
        assert_eq!(ResponseKind::parse(k.as_str()), Some(k));
        assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
    }
    let e = load(&format!(
        "{GOOD}[responses.post2012-session]\nknown_deviations = [{{ rule = \"nope\", reason = \"x\" }}]\n"
    ))
    .unwrap_err();
    assert_eq!(
        e[0].field.as_deref(),
        Some("responses.post2012-session.known_deviations[0].rule"),
        "{}",
        e[0]
    );
}

#[test]
fn a_study_response_is_optional_and_adds_variants() {
    let s = load(&format!(
        "{GOOD}[responses.study]\nenv = {{ STUDY = \"1\" }}\nknown_deviations = [{{ rule = \"body\", reason = \"published body\", scenario = \"static\" }}]\n"
    ))
    .unwrap();
    assert_eq!(
        s.responses(),
        vec![
            ResponseKind::Default,
            ResponseKind::Normalized,
            ResponseKind::Study
        ]
    );
    assert_eq!(s.variants().len(), 6);
    assert_eq!(s.variants()[2].to_string(), "native/study");
    let study = s.response(ResponseKind::Study);
    assert_eq!(study.env["STUDY"], "1");
    assert_eq!(study.deviations_for("static").len(), 1);
    assert_eq!(study.deviations_for("dynamic").len(), 0);
    assert_eq!(ResponseKind::parse("study"), Some(ResponseKind::Study));
    let e = load(&format!(
        "{GOOD}[responses.study]\nknown_deviations = [{{ rule = \"nope\", reason = \"x\" }}]\n"
    ))
    .unwrap_err();
    assert_eq!(
        e[0].field.as_deref(),
        Some("responses.study.known_deviations[0].rule"),
        "{}",
        e[0]
    );
}

#[test]
fn install_is_one_line_of_text() {
    // `install` is written as TOML basic-string text, escapes and all.
    let with = |install: &str| {
        GOOD.replace(
            "version_regex = 'go",
            &format!("install = \"{install}\"\nversion_regex = 'go"),
        )
    };
    let s = load(&with("apt-get install golang")).unwrap();
    assert_eq!(
        s.toolchain.install.as_deref(),
        Some("apt-get install golang")
    );
    assert_eq!(load(GOOD).unwrap().toolchain.install, None);
    for bad in ["", r"apt-get install\ngolang", r"\u001b[31mred"] {
        let e = load(&with(bad)).unwrap_err();
        assert_eq!(e[0].field.as_deref(), Some("toolchain.install"), "{}", e[0]);
        assert!(e[0].message.contains("one line of text"), "{}", e[0]);
    }
}

#[test]
fn wrong_type_names_file_field_and_expectation() {
    let e = load(&GOOD.replace("run = [\"{out}/server\"]", "run = \"{out}/server\"")).unwrap_err();
    let msg = e[0].to_string();
    assert!(
        msg.starts_with("servers/demo/server.toml:")
            && msg.contains("field modes.native.run: expected an array"),
        "{msg}"
    );
}

#[test]
fn missing_and_unknown_fields() {
    let e = load(&GOOD.replace("language = \"Go\"\n", "")).unwrap_err();
    assert_eq!(e[0].field.as_deref(), Some("language"), "{}", e[0]);
    let e = load(&GOOD.replace("[modes.native]\n", "[modes.native]\nbulid = []\n")).unwrap_err();
    assert_eq!(
        e[0].field.as_deref(),
        Some("modes.native.bulid"),
        "{}",
        e[0]
    );
    assert!(e[0].message.contains("unknown field"), "{}", e[0]);
}

#[test]
fn semantic_errors_are_all_collected() {
    let text = GOOD
        .replace("name = \"demo\"", "name = \"other\"")
        .replace(
            "{out}/server\"]\n[modes.exe]",
            "{out}/{nope}\"]\n[modes.exe]",
        )
        .replace("header = \"X-Powered-By\"", "rule = \"no-such-rule\"");
    let e = load(&text).unwrap_err();
    let fields: Vec<_> = e.iter().map(|e| e.field.clone().unwrap()).collect();
    assert!(fields.contains(&"name".to_string()), "{fields:?}");
    assert!(
        fields.contains(&"modes.native.run[0]".to_string()),
        "{fields:?}"
    );
    assert!(
        fields.contains(&"responses.normalized.known_deviations[0].rule".to_string()),
        "{fields:?}"
    );
}

#[test]
fn run_required_unless_unsupported() {
    let e = load(&GOOD.replace("run = [\"{out}/server\"]\n", "")).unwrap_err();
    assert_eq!(e[0].field.as_deref(), Some("modes.native.run"));
}

#[test]
fn a_placeholder_in_the_wrong_case_is_an_error_naming_it() {
    let e = load(&GOOD.replace(
        "run = [\"{out}/server\"]",
        "run = [\"{out}/server\", \"{PORT}\"]",
    ))
    .unwrap_err();
    assert_eq!(
        e[0].field.as_deref(),
        Some("modes.native.run[1]"),
        "{}",
        e[0]
    );
    assert!(
        e[0].message.contains("{PORT}") && e[0].message.contains("use {port}"),
        "{}",
        e[0]
    );
}

#[test]
fn db_pool_from_the_manifest_else_four_per_core() {
    let s = load(&format!("{GOOD}\n[db]\npool = 16\n")).unwrap();
    assert_eq!(s.db_pool(1), 16);
    assert_eq!(load(GOOD).unwrap().db_pool(3), 12);
    let e = load(&format!("{GOOD}\n[db]\npool = 0\n")).unwrap_err();
    assert_eq!(e[0].field.as_deref(), Some("db.pool"), "{}", e[0]);
    assert!(
        e[0].to_string().contains("from 1 to 1000, found 0"),
        "{}",
        e[0]
    );
}

#[test]
fn scenarios_listed_and_deviations_scoped() {
    let s = load(
        &GOOD
            .replace(
                "[toolchain]",
                "scenarios = [\"static\", \"dynamic\"]\n[toolchain]",
            )
            .replace(
                "reason = \"always added\" }",
                "reason = \"always added\", scenario = \"dynamic\" }",
            ),
    )
    .unwrap();
    assert!(s.implements("static") && !s.implements("file"));
    assert!(load(GOOD).unwrap().implements("file"));
    let n = &s.normalized_response;
    assert_eq!(n.deviations_for("dynamic").len(), 1);
    assert_eq!(n.deviations_for("static").len(), 0);
    let e = load(&GOOD.replace("[toolchain]", "scenarios = []\n[toolchain]")).unwrap_err();
    assert_eq!(e[0].field.as_deref(), Some("scenarios"), "{}", e[0]);
}

#[test]
fn templates_are_files_of_the_folder_with_known_placeholders() {
    let with = |name: &str, body: Option<&str>| {
        let dir = tempfile::tempdir().unwrap();
        let sdir = dir.path().join("demo");
        std::fs::create_dir(&sdir).unwrap();
        if let Some(b) = body {
            std::fs::write(sdir.join("app.conf"), b).unwrap();
        }
        let text = GOOD.replace(
            "run = [\"{out}/server\"]",
            &format!("templates = [\"{name}\"]\nrun = [\"{{out}}/server\", \"{{conf}}/app.conf\"]"),
        );
        std::fs::write(sdir.join("server.toml"), text).unwrap();
        Server::load(&sdir, Path::new("servers/demo/server.toml"))
    };
    let ok = with("app.conf", Some("listen {port};\nhttp { ${x} }\n")).unwrap();
    assert_eq!(ok.modes["native"].templates, vec!["app.conf"]);
    let e = with("app.conf", Some("listen {PORT};\n")).unwrap_err();
    assert_eq!(e[0].field.as_deref(), Some("modes.native.templates[0]"));
    assert!(
        e[0].message
            .contains("app.conf: unknown placeholder {PORT}"),
        "{}",
        e[0]
    );
    let e = with("app.conf", None).unwrap_err();
    assert!(e[0].message.contains("cannot read app.conf"), "{}", e[0]);
    let e = with("../app.conf", Some("")).unwrap_err();
    assert!(
        e[0].message.contains("a file in the server folder"),
        "{}",
        e[0]
    );
}

#[test]
fn protocols_default_to_http1_and_others_say_why_not() {
    let s = load(GOOD).unwrap();
    assert_eq!(s.protocols, vec![Protocol::Http1]);
    assert!(!s.serves(Protocol::H2c));
    assert!(s
        .why_not(Protocol::H2)
        .contains("not in its server.toml's protocols (http/1.1)"));
    let with = |extra: &str| load(&GOOD.replace("[toolchain]", &format!("{extra}\n[toolchain]")));
    let s = with("protocols = [\"h2\", \"http/1.1\", \"h3\", \"h2c\"]").unwrap();
    assert_eq!(s.protocols, Protocol::ALL.to_vec());
    let s = load(&format!(
        "{GOOD}[protocols_unsupported]\nh2c = \"no HTTP/2 server\"\n"
    ))
    .unwrap();
    assert_eq!(s.why_not(Protocol::H2c), "no HTTP/2 server");
    for (bad, field, needle) in [
        (
            "protocols = [\"h4\"]",
            "protocols[0]",
            "unknown protocol \"h4\"",
        ),
        (
            "protocols = [\"h2c\"]",
            "protocols",
            "\"http/1.1\" among them",
        ),
        (
            "protocols = [\"http/1.1\", \"http/1.1\"]",
            "protocols[1]",
            "listed twice",
        ),
    ] {
        let e = with(bad).unwrap_err();
        assert_eq!(e[0].field.as_deref(), Some(field), "{}", e[0]);
        assert!(e[0].message.contains(needle), "{}", e[0]);
    }
    for (table, needle) in [
        ("h2c = \"x\"", "is in protocols"),
        ("spdy = \"x\"", "unknown protocol \"spdy\""),
        ("h2 = \" \"", "non-empty"),
    ] {
        let e = load(&format!(
            "{}[protocols_unsupported]\n{table}\n",
            GOOD.replace(
                "[toolchain]",
                "protocols = [\"http/1.1\", \"h2c\"]\n[toolchain]"
            )
        ))
        .unwrap_err();
        assert!(
            e[0].field
                .as_deref()
                .unwrap()
                .starts_with("protocols_unsupported."),
            "{}",
            e[0]
        );
        assert!(e[0].message.contains(needle), "{}", e[0]);
    }
}

#[test]
fn sockets_default_to_tcp_and_a_unix_socket_is_declared_or_explained() {
    let s = load(GOOD).unwrap();
    assert_eq!(s.sockets, vec![Socket::Tcp]);
    assert!(s.listens(Socket::Tcp) && !s.listens(Socket::Unix));
    assert_eq!(
        s.why_not_listen(Socket::Unix),
        "not in its server.toml's sockets (tcp)"
    );
    let with = |extra: &str| load(&GOOD.replace("[toolchain]", &format!("{extra}\n[toolchain]")));
    let s = with("sockets = [\"unix\", \"tcp\"]").unwrap();
    assert_eq!(s.sockets, vec![Socket::Tcp, Socket::Unix]);
    let s = load(&format!(
        "{GOOD}[sockets_unsupported]\nunix = \"binds a port only\"\n"
    ))
    .unwrap();
    assert_eq!(s.why_not_listen(Socket::Unix), "binds a port only");
    for (bad, field, needle) in [
        (
            "sockets = [\"udp\"]",
            "sockets[0]",
            "unknown socket \"udp\"",
        ),
        ("sockets = [\"unix\"]", "sockets", "\"tcp\" among them"),
        ("sockets = [\"tcp\", \"tcp\"]", "sockets[1]", "listed twice"),
        (
            "sockets = [\"tcp\", \"unix\"]\n[sockets_unsupported]\nunix = \"x\"",
            "sockets_unsupported.unix",
            "is in sockets",
        ),
    ] {
        let e = with(bad).unwrap_err();
        assert_eq!(e[0].field.as_deref(), Some(field), "{}", e[0]);
        assert!(e[0].message.contains(needle), "{}", e[0]);
    }
    let e = load(&format!("{GOOD}[sockets_unsupported]\nunix = \" \"\n")).unwrap_err();
    assert!(e[0].message.contains("non-empty"), "{}", e[0]);
}

#[test]
fn syntax_error_has_line() {
    let e = load("name = \"demo\"\nlanguage = \n").unwrap_err();
    assert_eq!(e[0].line, Some(2), "{}", e[0]);
}

#[test]
fn workers_says_what_a_response_runs_and_a_wrong_value_is_named() {
    let s = load(&GOOD.replace(
        "[responses.default]\n",
        "[responses.default]\nworkers = \"env\"\n",
    ))
    .unwrap();
    assert_eq!(s.response(ResponseKind::Default).workers, Workers::Env);
    assert_eq!(s.response(ResponseKind::Normalized).workers, Workers::Cores);
    assert_eq!(Workers::Env.runs(4, Some(1)), 1);
    assert_eq!(Workers::Cores.runs(4, Some(1)), 4);
    assert_eq!(Workers::One.runs(4, None), 1);
    let e = load(&GOOD.replace(
        "[responses.default]\n",
        "[responses.default]\nworkers = \"all\"\n",
    ))
    .unwrap_err();
    let text = e
        .iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        text.contains("responses.default.workers")
            && text.contains("\"env\", \"one\" or \"cores\""),
        "{text}"
    );
}
