"""The Dart servers' `study` response shape: the code the Dart-vs-Go study
published (quoted in docs/servers/study-code.md), checked without a Dart SDK.

lib/study.dart of each server must write the quoted bodies byte for byte
(the literals are read from the quotations, not restated here), keep the
quoted setup (Alfred's error-only log, shelf's bare Pipeline, Jaguar's
default address, one isolate) and format the dynamic time as the study did
(local time, no `Z`). Parsing and the API list of lib/study.dart are checked
by test_dart_servers.py and test_dart_api.py like every other Dart file.
"""

import re

import pytest

from test_dart_servers import ROOT, STUDY_SERVERS, SERVERS, Source, manifest

QUOTES = ROOT / "docs" / "servers" / "study-code.md"


def quotation(server: str) -> str:
    text = QUOTES.read_text()
    marker = f"<!-- quote: {server} -->"
    assert marker in text, f"{QUOTES.name} quotes no {server}"
    return text.split(marker, 1)[1].split("```", 2)[1]


def literals(code: str) -> list[str]:
    """The Dart single-quoted string literals of `code` with their escapes
    decoded (interpolations kept as written)."""
    escapes = {"n": "\n", "\\": "\\", "'": "'", "$": "$"}
    return [re.sub(r"\\(.)", lambda e: escapes[e.group(1)], m[1:-1])
            for m in re.findall(r"'(?:[^'\\\n]|\\.)*'", code)]


def code_only(text: str) -> str:
    """`text` without its // comments."""
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def study(server: str) -> Source:
    return Source(SERVERS / server / "lib" / "study.dart")


ISO = "${DateTime.now().toIso8601String()}"


@pytest.mark.parametrize("server", STUDY_SERVERS)
def test_study_bodies_are_the_quoted_ones(server):
    quoted = [q for q in literals(quotation(server)) if q.startswith(("Hello", "The time"))]
    static = next(q for q in quoted if q.startswith("Hello"))
    code = study(server).bytes.decode()
    written = literals(code)
    assert static in written, (static, written)
    assert static in {"Hello World!\n", "Hello World\n"}
    # The dynamic body: the quoted text with ${ISO} standing for the
    # expression the study used.
    dynamic = "The time is ${ISO}\n".replace("${ISO}", ISO)
    assert "The time is ${ISO}\n" in quoted
    assert dynamic in written, written
    # Local time: no toUtc() and no `Z` appended anywhere.
    assert "toUtc" not in code and "Z\\n" not in code


def test_the_study_bodies_differ_where_the_study_said():
    bodies = {s: next(q for q in literals(study(s).bytes.decode()) if q.startswith("Hello"))
              for s in STUDY_SERVERS}
    assert bodies == {
        "dart-io": "Hello World!\n",
        "dart-shelf": "Hello World!\n",
        "dart-alfred": "Hello World\n",
        "dart-jaguar": "Hello World\n",
        # Written as the study wrote it; Conduit JSON-encodes it on the wire.
        "dart-conduit": "Hello World!\n",
    }


@pytest.mark.parametrize("server", STUDY_SERVERS)
def test_study_runs_one_isolate_and_is_chosen_by_response(server):
    code = code_only(study(server).bytes.decode())
    assert "Platform.environment['RESPONSE'] == 'study'" in code
    main = " ".join(Source(SERVERS / server / "bin" / "server.dart").function("main").split())
    if server == "dart-conduit":
        # The study's one multi-isolate Dart server: Conduit's own switch,
        # one isolate on the current one, N through numberOfInstances, N
        # being WORKERS (a suite's `workers`) or else CORES.
        assert "env['WORKERS'] ?? env['CORES']" in code
        one = code.index("await app.startOnCurrentIsolate()")
        many = code.index("await app.start(numberOfInstances: isolates)")
        assert code.index("if (isolates == 1)") < one < many
        assert "studyRequested ? serveStudy() : runServer(args, start, spawnIsolates: false)" in main
        return
    for isolates in ("Isolate", "shared: true", "multiThread", "runServer", "CORES", "WORKERS"):
        assert isolates not in code, (server, isolates)
    assert "studyRequested ? serveStudy() : runServer(args, start)" in main


def test_study_setups_are_the_quoted_ones():
    alfred = study("dart-alfred").bytes.decode()
    assert "Alfred(logLevel: LogType.error)" in quotation("dart-alfred")
    assert "Alfred(logLevel: LogType.error)" in alfred
    shelf = study("dart-shelf").bytes.decode()
    assert "const Pipeline().addHandler" in quotation("dart-shelf")
    assert shelf.count("const Pipeline().addHandler") == 2
    assert "Router" not in shelf and "shelf_router" not in shelf
    conduit = code_only(study("dart-conduit").bytes.decode())
    assert "Response.ok('Hello World!\\n')" in quotation("dart-conduit")
    # Conduit's default content type (JSON) left alone, as published.
    assert "contentType" not in conduit and "ContentType" not in conduit
    assert conduit.count("Response.ok(") == 2
    jaguar = study("dart-jaguar").bytes.decode()
    assert "Jaguar()" in quotation("dart-jaguar")
    # Only the port is given (fairbench's); the address stays Jaguar's default.
    assert re.search(r"Jaguar\(port: [^,()]*\([^()]*\)\)", jaguar), jaguar
    assert "address" not in jaguar.split("Jaguar(port:", 1)[1].split(";", 1)[0]


@pytest.mark.parametrize("server", STUDY_SERVERS)
def test_manifest_declares_the_published_differences(server):
    devs = manifest(server)["responses"]["study"]["known_deviations"]
    rules = {(d.get("rule"), d.get("scenario")) for d in devs}
    assert ("body", "dynamic") in rules
    assert (("body", "static") in rules) == (
        server in ("dart-alfred", "dart-jaguar", "dart-conduit"))
    assert (("ipv6", None) in rules) == (server == "dart-jaguar")
    json = {("content-type", "static"), ("content-type", "dynamic")}
    assert (json <= rules) == (server == "dart-conduit")


def test_dart_frog_has_no_study_shape():
    """dart_frog was not in the study."""
    assert "study" not in manifest("dart-frog")["responses"]
    assert not (SERVERS / "dart-frog" / "lib" / "study.dart").exists()
