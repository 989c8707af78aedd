"""Every framework symbol a Dart server uses is listed, with the version and
the source it was checked against, in the server's api.toml.

No Dart SDK runs here, so a server that calls an API its pinned framework
version does not have would be found only by whoever first runs the study.
These tests read each server's Dart code with tree-sitter-dart (dart_api.py
says what counts as a use) and fail when a use is not in api.toml: a change
that reaches for an unchecked API must list it, with where it was checked.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

import dart_api

ROOT = Path(__file__).resolve().parents[2]
SERVERS = ROOT / "servers"
DART_SERVERS = sorted(p.name for p in SERVERS.glob("dart-*") if p.is_dir())
FRAMEWORK_SERVERS = [s for s in DART_SERVERS if s != "dart-io"]


def own_package(server: str) -> str:
    return "fairbench_" + server.replace("-", "_")


def api(server: str) -> dict:
    path = SERVERS / server / "api.toml"
    if not path.exists():
        return {"package": []}
    with path.open("rb") as f:
        return tomllib.load(f)


def listed(server: str) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """symbol -> package, symbol -> verified path, symbol -> result type."""
    owner, where, types = {}, {}, {}
    for pkg in api(server)["package"]:
        for cls, path in pkg.get("classes", {}).items():
            where[cls] = path
        for sym, path in pkg.get("symbols", {}).items():
            assert sym not in owner, f"{server}: {sym} listed twice"
            owner[sym], where[sym] = pkg["name"], path
        for sym, t in pkg.get("types", {}).items():
            types[sym] = t
    return owner, where, types


def uses_of(server: str, folder: Path | None = None):
    owner, _, types = listed(server)
    classes = {c for p in api(server)["package"] for c in p.get("classes", {})}
    return dart_api.read_server(folder or SERVERS / server, own_package(server), types,
                                set(owner) | classes)


def test_every_dart_server_is_checked():
    assert len(DART_SERVERS) == 6 and "dart-io" in DART_SERVERS


@pytest.mark.parametrize("server", FRAMEWORK_SERVERS)
def test_api_list_names_pinned_versions_and_sources(server):
    spec = yaml.safe_load((SERVERS / server / "pubspec.yaml").read_text())
    deps = spec.get("dependencies") or {}
    packages = api(server)["package"]
    assert packages, f"{server}: no api.toml"
    for pkg in packages:
        assert set(pkg) <= {"name", "version", "repository", "ref", "libraries", "symbols",
                            "types", "classes"}, set(pkg)
        # Exactly the version the pubspec pins: the list is only true of it.
        assert deps.get(pkg["name"]) == pkg["version"], (pkg["name"], deps)
        assert re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", pkg["repository"])
        assert pkg["ref"].strip()
        assert all(lib.startswith(f"package:{pkg['name']}/") for lib in pkg["libraries"])
        for sym, path in pkg.get("symbols", {}).items():
            assert re.fullmatch(r"[A-Za-z_]\w*(\.\w+)?(\(\w+:\))?", sym), sym
            assert path.endswith(".dart") and not path.startswith("/"), (sym, path)
        for sym in pkg.get("types", {}):
            assert sym in pkg.get("symbols", {}), f"{sym} has a type but is not listed"
        # `classes`: framework types the code reaches only as a member's
        # result, never by name; each is some listed member's type.
        results = {dart_api.strip_type(t) for p in packages for t in p.get("types", {}).values()}
        for cls, path in pkg.get("classes", {}).items():
            assert cls in results, f"{cls} is no listed member's type"
            assert path.endswith(".dart"), (cls, path)
    assert {p["name"] for p in packages} == set(deps)


@pytest.mark.parametrize("server", DART_SERVERS)
def test_every_framework_symbol_used_is_listed(server):
    owner, _, _ = listed(server)
    uses, problems, uris = uses_of(server)
    assert not problems, "\n".join(problems)
    libraries = {lib for p in api(server)["package"] for lib in p["libraries"]}
    assert set(uris) <= libraries, f"imports not in api.toml: {set(uris) - libraries}"
    missing = sorted({f"{u.key}  ({u.file}:{u.line})" for u in uses if u.key not in owner})
    assert not missing, f"{server}: used but not in api.toml:\n" + "\n".join(missing)


@pytest.mark.parametrize("server", FRAMEWORK_SERVERS)
def test_every_listed_symbol_is_used(server):
    """A list that keeps symbols the code no longer uses stops saying what
    was checked for this code."""
    owner, _, _ = listed(server)
    used = {u.key for u in uses_of(server)[0]}
    assert not set(owner) - used, f"{server}: listed but unused: {sorted(set(owner) - used)}"


# --- the reader finds what it must -------------------------------------------


def _scratch(tmp_path: Path, server: str, extra: str) -> Path:
    """A copy of `server` with one more file."""
    folder = tmp_path / server
    for p in (SERVERS / server).rglob("*.dart"):
        dest = folder / p.relative_to(SERVERS / server)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(p.read_bytes())
    (folder / "lib" / "extra.dart").write_text(extra)
    return folder


@pytest.mark.parametrize("snippet, expected", [
    # A named argument the pinned version may not have.
    ("final s = Jaguar(port: 1, logRequests: true);", "Jaguar(logRequests:)"),
    # A member reached through a variable's inferred type.
    ("void f() { final s = Jaguar(); s.staticFiles('/', 'x'); }", "Jaguar.staticFiles"),
    # A member of a declared parameter, and a named argument of it.
    ("void f(Jaguar s) { s.serve(logRequests: true); }", "Jaguar.serve(logRequests:)"),
    # Through a getter's listed result type, in a cascade.
    ("void f(Jaguar s) { s..alsoTo(x); }", "Jaguar.alsoTo"),
    # A member inherited by a subclass, and an override.
    ("class R extends StringResponse { void g() { deleteCookie('a'); } }",
     "StringResponse.deleteCookie"),
    ("class R extends StringResponse { @override\n  int get statusCode => 1; }",
     "StringResponse.statusCode"),
    # An inherited member read into a local: the initializer's head is a use,
    # not a declaration of the server's own.
    ("class R extends StringResponse { void g() { final c = cookies; } }",
     "StringResponse.cookies"),
])
def test_reader_reports_unlisted_uses(tmp_path, snippet, expected):
    header = "import 'package:jaguar/jaguar.dart' show Jaguar, StringResponse;\n"
    folder = _scratch(tmp_path, "dart-jaguar", header + snippet + "\n")
    uses, problems, _ = uses_of("dart-jaguar", folder)
    assert not problems, problems
    owner, _, _ = listed("dart-jaguar")
    found = {u.key for u in uses if u.file == "lib/extra.dart"}
    assert expected in found, found
    assert expected not in owner


def test_reader_refuses_unexplicit_imports_and_untyped_callback_parameters(tmp_path):
    folder = _scratch(tmp_path, "dart-alfred", "import 'package:alfred/alfred.dart';\n"
                      "void f(Alfred app) { app.get('/', (req, res) => res.headers); }\n")
    _, problems, _ = uses_of("dart-alfred", folder)
    assert any("import framework libraries with `show`" in p for p in problems), problems
    folder = _scratch(tmp_path / "b", "dart-alfred",
                      "import 'package:alfred/alfred.dart' show Alfred;\n"
                      "void f(Alfred app) { app.get('/', (req, res) => res.headers); }\n")
    _, problems, _ = uses_of("dart-alfred", folder)
    assert any("`.headers` on a closure parameter without a type" in p for p in problems)


def test_prefixed_imports_are_followed(tmp_path):
    folder = _scratch(tmp_path, "dart-shelf",
                      "import 'package:shelf/shelf_io.dart' as io;\n"
                      "void f(h) { io.serve(h, 'x', 1, backlog: 5); }\n")
    uses, _, _ = uses_of("dart-shelf", folder)
    found = {u.key for u in uses if u.file == "lib/extra.dart"}
    assert found == {"serve", "serve(backlog:)"}, found
