"""Static checks of the Dart servers (servers/dart-*).

No Dart SDK is available to fairbench's CI, so these tests prove what can be
proven without running Dart: every .dart file parses (tree-sitter-dart), every
pubspec and manifest is well-formed and consistent with the others and with
docs/servers/dart.md, and the literal bytes the normalized code paths write
match the scenario contracts. They read the source, so a change that breaks
normalization (e.g. deleting the clear of defaultResponseHeaders) fails here.

Run: python3 -m pip install -r tests/requirements.txt
     python3 -m pytest tests/dart
"""

from __future__ import annotations

import ast
import hashlib
import re
import tomllib
from datetime import datetime, timezone
from email.utils import format_datetime
from pathlib import Path

import pytest
import tree_sitter_dart
import yaml
from tree_sitter import Language, Node, Parser

ROOT = Path(__file__).resolve().parents[2]
SERVERS = ROOT / "servers"
SCENARIOS = ROOT / "scenarios"
DOC = ROOT / "docs" / "servers" / "dart.md"

DART_SERVERS = [
    "dart-io",
    "dart-shelf",
    "dart-alfred",
    "dart-jaguar",
    "dart-conduit",
    "dart-frog",
]

# The framework dependencies of each server, pinned to exact versions, and
# the minimum Dart SDK each version declares in its own pubspec.yaml at the
# source the server was checked against (see each server's api.toml).
FRAMEWORK_DEPS = {
    # postgres for the database routes: floor from its pubspec.yaml at the
    # commit api.toml names (sdk: '>=3.0.0 <4.0.0').
    "dart-io": {"postgres": ("3.0.0", "3.0")},
    "dart-shelf": {"shelf": ("1.4.2", "3.4"), "shelf_router": ("1.1.4", "2.17"),
                   "shelf_static": ("1.1.3", "3.3"), "postgres": ("3.0.0", "3.0")},
    "dart-alfred": {"alfred": ("1.1.2+1", "2.17"), "postgres": ("3.0.0", "3.0")},
    "dart-jaguar": {"jaguar": ("3.1.4", "2.12")},
    "dart-conduit": {"conduit_core": ("6.0.0", "3.11")},
    "dart-frog": {"dart_frog": ("1.2.6", "3.0")},
}
# The language version the servers' own code is written for: the SDK floor
# of a server with no stricter dependency.
LANGUAGE_FLOOR = "3.0"
# The package whose version the manifest's framework_version names.
MAIN_PACKAGE = {
    "dart-io": None,
    "dart-shelf": "shelf",
    "dart-alfred": "alfred",
    "dart-jaguar": "jaguar",
    "dart-conduit": "conduit_core",
    "dart-frog": "dart_frog",
}

# The servers with a `study` response shape (the study's code, lib/study.dart).
STUDY_SERVERS = ["dart-io", "dart-shelf", "dart-alfred", "dart-jaguar", "dart-conduit"]

MODES = ["jit", "kernel", "jit-snapshot", "exe", "aot-snapshot"]
AOT_MODES = {"exe", "aot-snapshot"}

_PARSER = Parser(Language(tree_sitter_dart.language()))


# --- helpers -----------------------------------------------------------------


class Source:
    """A parsed .dart file."""

    def __init__(self, path: Path):
        self.path = path
        self.bytes = path.read_bytes()
        self.tree = _PARSER.parse(self.bytes)

    def text(self, node: Node) -> str:
        return self.bytes[node.start_byte : node.end_byte].decode()

    def nodes(self, kind: str, node: Node | None = None):
        stack = [node or self.tree.root_node]
        while stack:
            n = stack.pop()
            if n.type == kind:
                yield n
            stack.extend(reversed(n.children))

    def problems(self) -> list[str]:
        out = []
        stack = [self.tree.root_node]
        while stack:
            n = stack.pop()
            if n.type == "ERROR" or n.is_missing:
                line = n.start_point[0] + 1
                out.append(f"{self.path.relative_to(ROOT)}:{line}: {n.type} {self.text(n)[:60]!r}")
            stack.extend(n.children)
        return out

    def function(self, name: str) -> str:
        """Signature and body of the top-level function or method `name`."""
        for sig in self.nodes("function_signature"):
            ident = next((c for c in sig.children if c.type == "identifier"), None)
            if ident is None or self.text(ident) != name:
                continue
            # A method's signature is wrapped in a method_signature node.
            outer = sig.parent if sig.parent.type == "method_signature" else sig
            body = outer.next_sibling
            while body is not None and body.type == "comment":
                body = body.next_sibling
            assert body is not None and body.type == "function_body", (
                f"{self.path.name}: {name} has no body"
            )
            return self.text(sig) + self.text(body)
        raise AssertionError(f"{self.path.relative_to(ROOT)}: no function {name}")

    def class_text(self, name: str) -> str:
        for cls in self.nodes("class_definition"):
            ident = next((c for c in cls.children if c.type == "identifier"), None)
            if ident is not None and self.text(ident) == name:
                return self.text(cls)
        raise AssertionError(f"{self.path.relative_to(ROOT)}: no class {name}")

    def guarded(self) -> tuple[str, str]:
        """Text run only when the response is normalized, and its else branches.

        The branches of every `if` whose condition names `normalized`.
        """
        normalized, default = [], []
        for stmt in self.nodes("if_statement"):
            kids = stmt.children
            open_i = next(i for i, c in enumerate(kids) if c.type == "(")
            close_i = next(i for i, c in enumerate(kids) if c.type == ")")
            condition = "".join(self.text(c) for c in kids[open_i + 1 : close_i])
            if "normalized" not in condition:
                continue
            assert not condition.lstrip().startswith("!"), (
                f"{self.path.name}: write `if (config.normalized)`, not a negation"
            )
            branches = [c for c in kids[close_i + 1 :] if c.type not in ("else", "comment")]
            normalized.append(self.text(branches[0]))
            if len(branches) > 1:
                default.append(self.text(branches[1]))
        return "\n".join(normalized), "\n".join(default)

    def string_constant(self, name: str) -> str:
        """Value of a top-level `const name = '...';` (no interpolation)."""
        m = re.search(rf"^const {name} = ('(?:[^'\\]|\\.)*');$", self.bytes.decode(), re.M)
        assert m, f"{self.path.relative_to(ROOT)}: no const {name}"
        return dart_string(m.group(1))


def dart_string(literal: str) -> str:
    """Decodes a single-quoted Dart string literal without interpolation."""
    assert literal[0] == literal[-1] == "'" and "$" not in literal, literal
    return ast.literal_eval(literal)


def server_sources(server: str) -> dict[str, Source]:
    folder = SERVERS / server
    return {str(p.relative_to(folder)): Source(p) for p in sorted(folder.rglob("*.dart"))
            if ".dart_tool" not in p.parts}


def load_toml(path: Path) -> dict:
    with path.open("rb") as f:
        return tomllib.load(f)


def manifest(server: str) -> dict:
    return load_toml(SERVERS / server / "server.toml")


def pubspec(server: str) -> dict:
    return yaml.safe_load((SERVERS / server / "pubspec.yaml").read_text())


def scenario(name: str) -> dict:
    return load_toml(SCENARIOS / f"{name}.toml")


def version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def caret_lower_bound(constraint: str) -> str:
    assert re.fullmatch(r"\^\d+\.\d+\.\d+", constraint), f"expected ^x.y.z, found {constraint!r}"
    return constraint[1:]


def is_exact_version(constraint: str) -> bool:
    return re.fullmatch(r"\d+\.\d+\.\d+(\+\d+)?", constraint) is not None


def sdk_floor(server: str) -> str:
    """The highest of the dependencies' floors and the language floor."""
    floors = [LANGUAGE_FLOOR] + [m for _, m in FRAMEWORK_DEPS[server].values()]
    return max(floors, key=version_tuple)


# --- the parser itself ---------------------------------------------------------


def test_parser_reports_errors():
    """Guards the parse checks below against a grammar that accepts anything."""
    broken = _PARSER.parse(b"void main() { final x = ; print('a' }")
    assert broken.root_node.has_error
    fine = _PARSER.parse(b"void main() { final x = 1; print('a$x'); }")
    assert not fine.root_node.has_error


# --- every server ----------------------------------------------------------------


def test_the_six_servers_exist():
    found = sorted(p.name for p in SERVERS.glob("dart-*") if p.is_dir())
    assert found == sorted(DART_SERVERS)


@pytest.mark.parametrize("server", DART_SERVERS)
def test_dart_files_parse_without_errors(server):
    sources = server_sources(server)
    assert "bin/server.dart" in sources and "lib/fairbench.dart" in sources
    problems = [p for s in sources.values() for p in s.problems()]
    assert not problems, "\n".join(problems)


def test_database_routes_are_one_file_wherever_they_are():
    """lib/stack.dart (issue 26) is framework-neutral: the same bytes in every
    server that has it, each of which pins the same postgres."""
    having = [s for s in DART_SERVERS if (SERVERS / s / "lib" / "stack.dart").exists()]
    assert {"dart-io", "dart-shelf", "dart-alfred"} <= set(having)
    digests = {hashlib.sha256((SERVERS / s / "lib" / "stack.dart").read_bytes()).hexdigest()
               for s in having}
    assert len(digests) == 1
    for s in having:
        assert pubspec(s)["dependencies"]["postgres"] == FRAMEWORK_DEPS[s]["postgres"][0]


def test_shared_helper_is_identical_everywhere():
    digests = {s: hashlib.sha256((SERVERS / s / "lib" / "fairbench.dart").read_bytes()).hexdigest()
               for s in DART_SERVERS}
    assert len(set(digests.values())) == 1, digests


@pytest.mark.parametrize("server", DART_SERVERS)
def test_pubspec(server):
    spec = pubspec(server)
    assert spec["name"] == "fairbench_" + server.replace("-", "_")
    assert spec.get("publish_to") == "none"
    sdk = spec["environment"]["sdk"]
    deps = spec.get("dependencies") or {}
    expected = FRAMEWORK_DEPS[server]
    assert deps == {k: c for k, (c, _) in expected.items()}
    # Exact versions: a resolution cannot move a server to code nobody read.
    assert all(is_exact_version(c) for c in deps.values()), deps
    # The floor is exactly the strictest dependency's (or the language's):
    # lower and `dart pub get` can fail; higher and it refuses SDKs that work.
    assert version_tuple(caret_lower_bound(sdk)) == version_tuple(sdk_floor(server)) + (0,), (
        f"{server}: sdk {sdk}, expected ^{sdk_floor(server)}.0")
    # bin/server.dart imports the shared helper through this package name.
    bin_src = (SERVERS / server / "bin" / "server.dart").read_text()
    assert f"package:{spec['name']}/fairbench.dart" in bin_src


@pytest.mark.parametrize("server", DART_SERVERS)
def test_manifest_fields(server):
    m = manifest(server)
    allowed_top = {"name", "language", "framework", "framework_version", "description",
                   "toolchain", "build", "modes", "responses", "scenarios",
                   "protocols_unsupported", "scenarios_unsupported"}
    assert set(m) <= allowed_top, set(m) - allowed_top
    # The database scenarios (issue 26) are written only where lib/stack.dart
    # is (dart-io); any other Dart manifest must say so rather than let a
    # check run and fail them, listing exactly Config.scenarios.
    helper_src = (SERVERS / server / "lib" / "fairbench.dart").read_text()
    accepted = re.search(r"static const scenarios = \[(.*?)\];", helper_src).group(1)
    if (SERVERS / server / "lib" / "stack.dart").exists():
        assert "scenarios" not in m
    else:
        assert m.get("scenarios") == re.findall(r"'(\w+)'", accepted) == ["static", "dynamic", "file"]
    # dart:io's HttpServer serves HTTP/1.1 only: every Dart server says so
    # for both HTTP/2 protocols and for HTTP/3 (docs/server-manifest.md,
    # "Protocols").
    assert "protocols" not in m
    assert set(m["protocols_unsupported"]) == {"h2c", "h2", "h3"}
    assert all("dart:io's HttpServer" in r for r in m["protocols_unsupported"].values())
    assert m["name"] == server
    assert m["language"] == "Dart"
    assert m["framework"].strip()
    package = MAIN_PACKAGE[server]
    if package is None:
        assert m["framework_version"] == "stdlib"
    else:
        assert m["framework_version"] == pubspec(server)["dependencies"][package]
    assert m["toolchain"] == {
        "name": "dart",
        "probe": ["dart", "--version"],
        "version_regex": r"Dart SDK version: (\d+\.\d+\.\d+)",
        # The SDK's official route, named for `fairbench servers`, never run.
        "install": "sudo apt-get install dart  (from Google's Dart apt repository, "
                   "added as dart.dev/get-dart describes)",
    }
    assert re.search(m["toolchain"]["version_regex"],
                     'Dart SDK version: 3.9.2 (stable) on "linux_x64"').group(1) == "3.9.2"
    assert m["build"] == {"commands": [["dart", "pub", "get"]]}
    # `study`: the code the study published, for the servers it measured
    # (tests/dart/test_dart_study.py).
    # `post2012-*`: the 2012 post's three handlers, dart:io's alone
    # (lib/post2012.dart, one isolate each).
    post2012 = {"post2012-exists", "post2012-session", "post2012-local"}
    assert set(m["responses"]) == {"default", "normalized"} | (
        {"study"} if server in STUDY_SERVERS else set()) | (
        post2012 if server == "dart-io" else set())
    for kind in post2012 & set(m["responses"]):
        assert m["responses"][kind].get("workers") == "one"
    for kind, response in m["responses"].items():
        assert set(response) <= {"env", "known_deviations", "workers"}
        assert response.get("workers", "cores") in {"env", "one", "cores"}
        for d in response.get("known_deviations", []):
            keys = {"header", "rule", "reason"} | (
                {"scenario"} if kind == "study" or kind in post2012 else set())
            assert set(d) <= keys and d["reason"].strip(), (kind, d)
            assert ("header" in d) != ("rule" in d), (kind, d)


@pytest.mark.parametrize("server", DART_SERVERS)
def test_manifest_modes(server):
    m = manifest(server)
    modes = m["modes"]
    assert list(modes) == MODES
    build_placeholders = {"dir", "out", "files"}
    run_placeholders = build_placeholders | {"port", "cores", "scenario", "response", "mode"}
    for name, mode in modes.items():
        assert set(mode) <= {"description", "build", "run", "env", "build_env", "params",
                             "unsupported"}, (name, set(mode))
        assert all(isinstance(v, str) for v in mode.get("params", {}).values())
        for argv in mode.get("build", []):
            for arg in argv:
                assert set(re.findall(r"\{([a-z_]+)\}", arg)) <= build_placeholders, (name, arg)
        for arg in mode.get("run", []):
            assert set(re.findall(r"\{([a-z_]+)\}", arg)) <= run_placeholders, (name, arg)
        for value in mode.get("build_env", {}).values():
            assert set(re.findall(r"\{([a-z_]+)\}", value)) <= build_placeholders, (name, value)

        unsupported = server == "dart-conduit" and name in AOT_MODES
        if unsupported:
            reason = mode.get("unsupported", "")
            assert "dart:mirrors" in reason and "run" not in mode and "build" not in mode
            continue
        assert "unsupported" not in mode, name
        assert mode["run"], name
        # The isolate layout is recorded with every runnable variant.
        assert mode["params"]["isolates"] == "CORES"
        assert "CORES isolates" in mode["params"]["isolate_layout"]
        # Whatever the mode builds is what it runs.
        if name == "jit":
            assert "build" not in mode
            assert mode["run"] == ["dart", "run", "bin/server.dart"]
            continue
        [build] = mode["build"]
        out = build[build.index("-o") + 1]
        assert out.startswith("{out}/")
        assert build[:3] == ["dart", "compile", name] and build[3] == "bin/server.dart"
        expected_run = {
            "kernel": ["dart", "run", out],
            "jit-snapshot": ["dart", "run", out],
            "exe": [out],
            "aot-snapshot": ["dartaotruntime", out],
        }[name]
        assert mode["run"] == expected_run
    # The training run needs to know it is one, and where the file scenario's
    # file is: build steps get no FILES_DIR from fairbench otherwise.
    assert modes["jit-snapshot"]["build_env"] == {"FAIRBENCH_TRAIN": "1", "FILES_DIR": "{files}"}


def test_only_conduit_has_unsupported_modes():
    for server in DART_SERVERS:
        flagged = {n for n, mode in manifest(server)["modes"].items() if "unsupported" in mode}
        assert flagged == (AOT_MODES if server == "dart-conduit" else set()), server


# --- the contract literals -------------------------------------------------------


@pytest.fixture(scope="module")
def helper() -> Source:
    return Source(SERVERS / "dart-io" / "lib" / "fairbench.dart")


def test_static_body_and_content_type_match_the_contracts(helper):
    static = scenario("static")
    assert helper.string_constant("staticBody") == static["expect"]["body"] == "Hello World!\n"
    content_type = helper.string_constant("plainTextUtf8")
    for name in ("static", "dynamic", "file"):
        assert content_type == scenario(name)["expect"]["content_type"]


def test_paths_match_the_contracts(helper):
    file = scenario("file")
    assert helper.string_constant("filePath") == file["path"]
    assert helper.string_constant("fileName") == Path(file["expect"]["body_file"]).name
    assert (SCENARIOS / file["expect"]["body_file"]).is_file()
    assert scenario("static")["path"] == scenario("dynamic")["path"] == "/"
    assert "String get path => scenario == 'file' ? filePath : '/';" in helper.bytes.decode()
    scenario_names = re.search(r"static const scenarios = \[(.*?)\];", helper.bytes.decode()).group(1)
    names = [dart_string(s.strip()) for s in scenario_names.split(",")]
    # The database scenarios (issue 26) are accepted by route, so that a
    # `<route>-<detail>` variant (queries-1) needs no change here.
    stack = re.search(r"static const stackScenarios = \[(.*?)\];", helper.bytes.decode()).group(1)
    routes = [dart_string(s.strip()) for s in stack.split(",")]
    assert names == ["static", "dynamic", "file"]
    # A scenario every Dart server declares unsupported, with its reason
    # (`[scenarios_unsupported]`), is the only one the helper may lack.
    declared = set.intersection(*(
        set(manifest(s).get("scenarios_unsupported", {})) for s in DART_SERVERS))
    assert sorted(names + routes) == sorted(
        {p.stem.split("-")[0] for p in SCENARIOS.glob("*.toml")} - declared)


def iso8601_like_dart(t: datetime) -> str:
    """DateTime.toIso8601String() of a UTC time: milliseconds always, then
    microseconds only when they are not 0, then Z."""
    ms, us = divmod(t.microsecond, 1000)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + f".{ms:03d}" + (f"{us:03d}" if us else "") + "Z"


def test_dynamic_body_matches_the_contract(helper):
    """Replays dynamicBody's two formats on a Python clock."""
    body = helper.function("dynamicBody")
    assert "final iso = DateTime.now().toUtc().toIso8601String();" in body
    assert "return 'The time is ${iso.substring(0, 19)}Z\\n';" in body
    assert "return 'The time is $iso\\n';" in body
    expect = scenario("dynamic")["expect"]
    for t, default_len in [
        (datetime(2026, 11, 21, 23, 12, 0, 123456, tzinfo=timezone.utc), 40),
        # The microsecond digits are left out when they are 0.
        (datetime(2026, 11, 21, 23, 12, 0, 123000, tzinfo=timezone.utc), 37),
        (datetime(2026, 11, 21, 23, 12, 0, 0, tzinfo=timezone.utc), 37),
        (datetime.now(timezone.utc), None),
    ]:
        iso = iso8601_like_dart(t)
        normalized = "The time is " + iso[0:19] + "Z\n"
        default = "The time is " + iso + "\n"
        assert re.fullmatch(expect["body_regex"], normalized)
        assert re.fullmatch(expect["body_regex"], default)
        assert len(normalized.encode()) == 33
        if default_len is not None:
            assert len(default.encode()) == default_len, default


def test_docs_state_the_dynamic_body_lengths():
    text = " ".join(DOC.read_text().split())
    assert "40 bytes" in text and "or 37" in text


@pytest.mark.parametrize("server", DART_SERVERS)
def test_normalized_bodies_are_second_precision(server):
    """Default variants keep Dart's own formatter; normalized cut it."""
    text = "\n".join(s.bytes.decode() for k, s in server_sources(server).items()
                     if k != "lib/fairbench.dart")
    assert text.count("dynamicBody(secondPrecision: true)") == 1
    assert text.count("dynamicBody(secondPrecision: false)") == 1


def test_normalized_static_response_has_gos_shape(helper):
    """The bytes a normalized static response carries, header by header.

    Go's net/http sends Date, Content-Length and Content-Type; dart:io sends
    the same three (in lower case, the same length on the wire).
    """
    body = helper.string_constant("staticBody").encode()
    date = format_datetime(datetime(2026, 11, 21, 23, 10, 43, tzinfo=timezone.utc), usegmt=True)
    assert date == "Sat, 21 Nov 2026 23:10:43 GMT"  # HttpDate.format's RFC 1123 form
    go = {"Date": date, "Content-Length": str(len(body)),
          "Content-Type": scenario("static")["expect"]["content_type"]}
    dart = {"date": date, "content-length": str(len(body)),
            "content-type": helper.string_constant("plainTextUtf8")}
    wire = lambda headers: b"".join(f"{k}: {v}\r\n".encode() for k, v in headers.items())
    assert {k.lower(): v for k, v in go.items()} == dart
    assert len(wire(go)) == len(wire(dart))
    required = {h.lower() for h in scenario("static")["expect"]["required_headers"]}
    assert set(dart) == required


# --- normalization, server by server -------------------------------------------


@pytest.mark.parametrize("server", DART_SERVERS)
def test_servers_bind_any_dual_stack_and_shared(server):
    sources = server_sources(server)
    code = "\n".join(s.bytes.decode() for k, s in sources.items() if k != "lib/fairbench.dart")
    assert "InternetAddress.anyIPv6" in code
    assert "v6Only: true" not in code and "isIpv6Only = true" not in code
    assert "localhost" not in code and "loopback" not in code
    sharing = {
        "dart-io": "shared: true",
        "dart-shelf": "shared: true",
        "dart-alfred": "app.listen(config.port, InternetAddress.anyIPv6, true)",
        "dart-jaguar": "multiThread: true",
        "dart-conduit": "app.start(numberOfInstances: config.cores)",
        "dart-frog": "shared: true",
    }[server]
    assert sharing in code
    main = sources["bin/server.dart"].function("main")
    if server == "dart-conduit":
        assert "runServer(args, start, spawnIsolates: false)" in main
        assert "options.isIpv6Only = false" in code
    else:
        assert "runServer(args, start)" in main


@pytest.mark.parametrize("server", DART_SERVERS)
def test_default_variants_do_not_normalize(server):
    """What is removed in `normalized` is only removed there."""
    for rel, src in server_sources(server).items():
        if rel == "lib/fairbench.dart":
            continue
        whole = src.bytes.decode()
        normalized, _ = src.guarded()
        for op in ("defaultResponseHeaders.clear()", "poweredByHeader: null",
                   "serverHeader = null"):
            assert whole.count(op) == normalized.count(op), (rel, op)


def _normalized_parts(server: str) -> tuple[dict[str, Source], str]:
    sources = server_sources(server)
    guarded = "\n".join(s.guarded()[0] for s in sources.values())
    return sources, guarded


def test_dart_io_normalization():
    sources, guarded = _normalized_parts("dart-io")
    assert "server.defaultResponseHeaders.clear();" in guarded
    assert "server.serverHeader = null;" in guarded
    assert "server.listen(withStack(normalizedHandler(config), normalized: true));" in guarded
    src = sources["bin/server.dart"]
    # The database routes (lib/stack.dart) in front: Go's headers only when normalized.
    stack = src.function("withStack")
    assert re.search(r"if \(normalized\) \{[^}]*\.\.contentLength = result\.body\.length"
                     r"[^}]*\.\.date = DateTime\.now\(\)", stack), stack
    handler = src.function("normalizedHandler")
    # Each of the three scenarios sets the three headers Go sends.
    assert handler.count("..set(HttpHeaders.contentTypeHeader, plainTextUtf8)") == 3
    assert handler.count("..contentLength = ") == 3
    assert handler.count("..date = DateTime.now()") == 3
    default = src.function("defaultHandler")
    assert "contentLength" not in default and "date" not in default and "plainTextUtf8" not in default


def test_shelf_normalization():
    sources, guarded = _normalized_parts("dart-shelf")
    assert "server.defaultResponseHeaders.clear();" in guarded
    assert "poweredByHeader: null" in guarded
    assert "normalizedHandler(config)" in guarded
    # Cleared before serveRequests starts reading requests.
    assert guarded.index("defaultResponseHeaders.clear()") < guarded.index("serveRequests(")
    src = sources["bin/server.dart"]
    handler = src.function("normalizedHandler")
    assert "const headers = {HttpHeaders.contentTypeHeader: plainTextUtf8};" in handler
    assert handler.count("headers: headers") == 2
    assert ".addMiddleware(plainFileHeaders)" in handler
    file_mw = src.function("plainFileHeaders")
    assert "HttpHeaders.contentTypeHeader: plainTextUtf8" in file_mw
    assert "HttpHeaders.contentLengthHeader: length" in file_mw
    assert "plainTextUtf8" not in src.function("defaultHandler")


def test_alfred_normalization():
    sources, guarded = _normalized_parts("dart-alfred")
    assert "server.defaultResponseHeaders.clear();" in guarded
    assert "addNormalizedRoutes(app, config);" in guarded
    src = sources["bin/server.dart"]
    assert src.function("addNormalizedRoutes").count("plainHeaders(res, ") == 3
    headers = src.function("plainHeaders")
    assert "..set(HttpHeaders.contentTypeHeader, plainTextUtf8)" in headers
    assert "..contentLength = length" in headers
    assert "..date = DateTime.now()" in headers
    assert "plainHeaders" not in src.function("addDefaultRoutes")
    # Only normalized silences alfred's per-request log; default is Alfred()
    # as shipped (LogType.info).
    normalized, default = src.guarded()
    assert "app = Alfred(logLevel: LogType.error);" in normalized
    assert "app = Alfred();" in default
    assert src.bytes.decode().count("logLevel") == 1


def test_jaguar_normalization():
    sources, guarded = _normalized_parts("dart-jaguar")
    assert "addNormalizedRoutes(server, config);" in guarded
    src = sources["bin/server.dart"]
    start = src.function("start")
    # Once per server, through jaguar's public `servers` getter, after serve().
    assert "for (final httpServer in server.servers)" in guarded
    assert "httpServer.defaultResponseHeaders.clear();" in guarded
    assert start.index("await server.serve();") < start.index("server.servers")
    # Nothing is removed per response any more.
    assert "removeAll" not in src.bytes.decode()
    routes = src.function("addNormalizedRoutes")
    assert routes.count("PlainResponse(") == 2 and routes.count("PlainFileResponse(") == 1
    length_date = src.function("setLengthAndDate")
    assert "..contentLength = length" in length_date and "..date = DateTime.now()" in length_date
    for cls in ("PlainResponse", "PlainFileResponse"):
        text = src.class_text(cls)
        assert "headers: {HttpHeaders.contentTypeHeader: plainTextUtf8}" in text
        assert "setLengthAndDate(resp, " in text
    assert "Plain" not in src.function("addDefaultRoutes")


def test_conduit_normalization():
    sources, guarded = _normalized_parts("dart-conduit")
    channel = sources["lib/channel.dart"]
    hook = channel.function("willStartReceivingRequests")
    assert "server.server.defaultResponseHeaders.clear();" in hook
    assert "server.server.serverHeader = null;" in hook
    assert "if (config.normalized)" in hook
    assert "addNormalizedRoutes(router, config);" in guarded
    routes = channel.function("addNormalizedRoutes")
    assert "final plain = ContentType.parse(plainTextUtf8);" in routes
    assert routes.count("headers: dateHeader()") == 3
    assert routes.count("..contentType = plain") == 3
    assert "HttpHeaders.dateHeader: HttpDate.format(DateTime.now().toUtc())" in \
        channel.function("dateHeader")
    assert "dateHeader" not in channel.function("addDefaultRoutes")


def test_dart_frog_normalization():
    sources, guarded = _normalized_parts("dart-frog")
    entry = sources["main.dart"]
    run = entry.function("run")
    normalized, _ = entry.guarded()
    assert "poweredByHeader: null" in normalized
    assert "server.defaultResponseHeaders.clear();" in normalized
    assert "handler.use(plainFileHeaders)" in normalized
    assert run.count("shared: true") == 2
    # The custom entrypoint keeps the signature dart_frog's docs require.
    assert run.startswith("Future<HttpServer> run(Handler handler, InternetAddress ip, int port)")
    route = sources["routes/index.dart"]
    on_request = route.function("onRequest")
    normalized, default = route.guarded()
    assert "headers: plainHeaders" in normalized and "headers" not in default
    assert "const plainHeaders = {HttpHeaders.contentTypeHeader: plainTextUtf8};" in \
        route.bytes.decode()
    assert "dynamicBody(secondPrecision: true)" in route.function("normalizedBody")
    assert "dynamicBody(secondPrecision: false)" in route.function("defaultBody")
    assert on_request.startswith("Response onRequest(RequestContext context)")
    file_mw = entry.function("plainFileHeaders")
    assert "HttpHeaders.contentTypeHeader: plainTextUtf8" in file_mw
    assert "HttpHeaders.contentLengthHeader: length" in file_mw


def test_dart_frog_default_is_the_generated_server():
    """bin/server.dart has the shape of the server `dart_frog build` writes
    (bricks/dart_frog_prod_server/__brick__/build/bin/server.dart): the routes
    are registered on a Router built per request under a mount of `/`, both
    variants go through it, and the handler goes to the custom entrypoint."""
    src = server_sources("dart-frog")["bin/server.dart"]
    text = src.bytes.decode()
    assert "import '../main.dart' as entrypoint;" in text
    assert "import '../routes/index.dart' as index;" in text
    root = src.function("buildRootHandler")
    assert "Router()..mount('/', (context) => buildHandler()(context))" in root
    assert "pipeline.addHandler(" in root
    directory = src.function("buildHandler")
    assert "Router()..all('/', (context) => index.onRequest(context))" in directory
    create = src.function("createServer")
    assert "cascade.add(buildRootHandler()).handler" in create
    assert "entrypoint.run(handler, address, port)" in create
    assert "createStaticFileHandler(path: served.filesDir)" in create
    # No response-shape branch anywhere in the generated part.
    assert "normalized" not in text


@pytest.mark.parametrize("server", DART_SERVERS)
def test_no_known_deviations_needed(server):
    """Every Dart server can send exactly Go's headers; if one stops being able
    to, its manifest must say so, and this test must change with it."""
    m = manifest(server)
    assert m["responses"]["normalized"].get("known_deviations", []) == []


# --- the training run ----------------------------------------------------------------


def test_training_covers_every_scenario_and_response(helper):
    train = helper.function("train")
    assert "for (final scenario in Config.scenarios)" in train
    assert "for (final normalized in const [false, true])" in train
    assert "await stop();" in train and "client.close(force: true);" in train
    run = helper.function("runServer")
    assert "args.contains('--train')" in run
    assert "Platform.environment['FAIRBENCH_TRAIN'] == '1'" in run
    # The training run returns instead of serving, so the compile finishes.
    assert re.search(r"await train\(.*?\);\s*return;", run, re.S)


# --- docs stay honest --------------------------------------------------------------------


def test_docs_record_the_pubspec_constraints():
    text = DOC.read_text()
    rows = re.findall(r"^\| *(dart-[a-z-]+) *\| *`([a-z_]+)` *\| *`([^`]+)` *\| *([0-9.]+) *\|",
                      text, re.M)
    recorded = {(server, package): (constraint, min_sdk) for server, package, constraint, min_sdk in rows}
    expected = {(server, package): value for server, deps in FRAMEWORK_DEPS.items()
                for package, value in deps.items()}
    assert recorded == expected
    for server in DART_SERVERS:
        for package, constraint in (pubspec(server).get("dependencies") or {}).items():
            assert recorded[(server, package)][0] == constraint
        assert f"## {server}" in text, f"docs/servers/dart.md has no section for {server}"
    floors = dict(re.findall(r"^\| *(dart-[a-z-]+) *\| *`(\^[0-9.]+)` *\|", text, re.M))
    assert floors == {s: pubspec(s)["environment"]["sdk"] for s in DART_SERVERS}
