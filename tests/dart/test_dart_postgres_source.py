"""Every package:postgres symbol a Dart server uses, re-read in the package's
source at the commit its api.toml names.

api.toml is what every machine checks (test_dart_api.py: no use goes
unlisted). This goes one step further where a git copy of
isoos/postgresql-dart is at hand (FAIRBENCH_POSTGRES_DART_GIT, by default the
mirror the listing was read from): each listed type, member and named
parameter must be declared in the listed file at that commit, with the listed
result type, and reachable through package:postgres/postgres.dart. Without
the copy (CI) it skips: the listing stands on its own there.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from test_dart_api import DART_SERVERS, SERVERS, api, uses_of
from test_dart_servers import FRAMEWORK_DEPS

GIT_DIR = Path(os.environ.get("FAIRBENCH_POSTGRES_DART_GIT",
                              "/work/.mirror/isoos+postgresql-dart/repo"))
STACK_SERVERS = [s for s in DART_SERVERS if (SERVERS / s / "lib" / "stack.dart").exists()]

# Members the package's classes inherit from the Dart SDK, which is not in
# the repository: only those the servers use, each a member of List.
SDK_MEMBERS = {"UnmodifiableListView": {"first", "last", "length", "isEmpty"}}

SYMBOL = re.compile(r"(?P<cls>\w+)(?:\.(?P<member>\w+))?(?:\((?P<param>\w+):\))?")
TYPE_DECL = re.compile(r"\b(?:(?:abstract|final|base|sealed|interface)\s+)*"
                       r"(?P<kind>class|enum|mixin)\s+(?P<name>\w+)\b")


def blank_comments_and_strings(src: str) -> str:
    """`src` with comments and string literals turned into spaces (newlines
    kept), so that braces and names in them do not count."""
    out, i, n = list(src), 0, len(src)

    def blank(a: int, b: int):
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif src[i] in "'\"":
            q = src[i] * 3 if src.startswith(src[i] * 3, i) else src[i]
            raw = i > 0 and src[i - 1] == "r"
            j = i + len(q)
            while j < n and not src.startswith(q, j):
                j += 2 if (src[j] == "\\" and not raw) else 1
            blank(i, j + len(q))
            i = j + len(q)
        else:
            i += 1
    return "".join(out)


def matching(text: str, start: int) -> int:
    """The index after the bracket closing the one at `start`."""
    pairs = {"{": "}", "(": ")", "[": "]"}
    stack = []
    for k in range(start, len(text)):
        c = text[k]
        if c in pairs:
            stack.append(pairs[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return k + 1
    raise ValueError("unbalanced")


def top_level(body: str) -> str:
    """`body` with everything inside any bracket blanked: what a class body
    declares, not what its methods do."""
    out, depth = list(body), 0
    for k, c in enumerate(body):
        if c in "({[":
            depth += 1
            if depth > 1:
                out[k] = " "
        elif c in ")}]":
            depth -= 1
            if depth > 0:
                out[k] = " "
        elif depth > 0 and c != "\n":
            out[k] = " "
    return "".join(out)


class Source:
    """package:postgres at one commit, read with `git show`."""

    def __init__(self, commit: str):
        self.commit = commit
        names = self.git("ls-tree", "-r", "--name-only", commit).split()
        self.files = {p: blank_comments_and_strings(self.git("show", f"{commit}:{p}"))
                      for p in names if p.startswith("lib/") and p.endswith(".dart")}

    def git(self, *args: str) -> str:
        return subprocess.run(["git", "-C", str(GIT_DIR), *args], check=True,
                              capture_output=True, text=True).stdout

    def pubspec(self) -> str:
        return self.git("show", f"{self.commit}:pubspec.yaml")

    def exported(self, library: str) -> set[str]:
        """The files whose declarations `library` makes visible (all of them
        unless the export says `show`)."""
        seen, out = set(), {library: None}
        todo = [library]
        while todo:
            f = todo.pop()
            if f in seen or f not in self.files:
                continue
            seen.add(f)
            raw = self.git("show", f"{self.commit}:{f}")
            for m in re.finditer(r"^export\s+'([^']+)'(?:\s+show\s+([\w\s,]+))?;", raw, re.M):
                target = os.path.normpath(os.path.join(os.path.dirname(f), m.group(1)))
                out[target] = set(re.findall(r"\w+", m.group(2))) if m.group(2) else None
                todo.append(target)
        return out

    def type_decl(self, name: str):
        """(file, header, body) of the class, enum or mixin `name`."""
        for path, text in self.files.items():
            for m in TYPE_DECL.finditer(text):
                if m.group("name") == name:
                    brace = text.index("{", m.end())
                    return path, text[m.end():brace], text[brace + 1:matching(text, brace) - 1]
        return None

    def member(self, cls: str, member: str):
        """(file, declaring class, declaring text) of `cls.member`, through
        supertypes; the text is None when the member comes from the SDK."""
        decl = self.type_decl(cls)
        if decl is None:
            return None
        path, header, body = decl
        found = declaration(top_level(body), cls, member)
        if found is not None:
            return path, cls, found
        for sup in re.findall(r"(?:extends|implements|with|,)\s*(\w+)", header):
            if self.type_decl(sup) is None:
                if member in SDK_MEMBERS.get(sup, ()):
                    return path, cls, None
                continue
            inherited = self.member(sup, member)
            if inherited is not None:
                return inherited
        return None


def declaration(top: str, cls: str, member: str) -> str | None:
    """The declaration of `member` at the top level of a class body (from the
    start of its line to the end of its blanked parameters), or None."""
    pattern = (rf"(?:\bfactory\s+{cls}\.|(?<![\w.]){cls}\.|(?<![\w.])(?:get\s+|set\s+)?)"
               rf"{member}\b\s*(?:<[^>]*>)?\s*[(;,=]")
    m = re.search(pattern, top)
    if m is None:
        return None
    end = matching(top, m.end() - 1) if top[m.end() - 1] == "(" else m.end()
    return top[top.rfind("\n", 0, m.start()) + 1:end]


def params_of(source: Source, cls: str, member: str | None) -> str | None:
    """The parameter list of `cls(` / `cls.member(` / `member(` in its class."""
    _, _, body = source.type_decl(cls)
    top = top_level(body)
    if member is None:
        pattern = rf"(?<![\w.])(?:const\s+)?{cls}\s*\("
    else:
        pattern = rf"(?:\bfactory\s+{cls}\.|(?<![\w.]){cls}\.|(?<![\w.]))(?:get\s+)?{member}\s*(?:<[^>]*>)?\s*\("
    m = re.search(pattern, top)
    if m is None:
        return None
    return body[m.end() - 1:matching(body, m.end() - 1)]


def check(source: Source, symbol: str, path: str, result_type: str | None,
          library: str) -> str | None:
    """Why `symbol`, listed at `path`, is not what the source says; or None."""
    library = library.replace("package:postgres/", "lib/")
    m = SYMBOL.fullmatch(symbol)
    cls, member, param = m.group("cls"), m.group("member"), m.group("param")
    decl = source.type_decl(cls)
    if decl is None:
        return f"{symbol}: no class, enum or mixin {cls} in the package"
    visible = source.exported(library)
    if decl[0] not in visible or (visible[decl[0]] is not None and cls not in visible[decl[0]]):
        return f"{symbol}: {cls} ({decl[0]}) is not exported by {library}"
    where, owner, text = decl[0], cls, None
    if member is not None:
        found = source.member(cls, member)
        if found is None:
            return f"{symbol}: {cls} has no member {member}"
        where, owner, text = found
    if param is not None:
        params = params_of(source, owner, member)
        if params is None:
            return f"{symbol}: no parameter list for {owner}.{member or ''} in {where}"
        named = params[params.find("{"):] if "{" in params else ""
        if not re.search(rf"(?:this\.|super\.|[\w?>\]]\s+){param}\s*(?:[,}}=]|$)", named, re.M):
            return f"{symbol}: {param} is not a named parameter of {cls}.{member or ''}"
    if where != path:
        return f"{symbol}: declared in {where}, listed as {path}"
    if result_type is not None:
        is_factory = text is not None and re.search(rf"\bfactory\s+{cls}\.{member}\b", text)
        declared = (is_factory and cls) or (
            text is not None and re.search(rf"{re.escape(result_type)}\s+{member}\b", text)
            and result_type)
        if declared != result_type:
            shown = " ".join((text or "(from the SDK)").split())
            return f"{symbol}: declared as {shown!r}, listed as {result_type}"
    return None


def postgres_package(server: str) -> dict:
    return next(p for p in api(server)["package"] if p["name"] == "postgres")


@pytest.fixture(scope="module")
def source() -> Source:
    commits = {postgres_package(s)["ref"] for s in STACK_SERVERS}
    assert len(commits) == 1, commits
    commit = commits.pop()
    assert re.fullmatch(r"[0-9a-f]{40}", commit), f"postgres ref is not a commit: {commit}"
    if shutil.which("git") is None or not GIT_DIR.exists():
        pytest.skip(f"no copy of isoos/postgresql-dart at {GIT_DIR}")
    has = subprocess.run(["git", "-C", str(GIT_DIR), "cat-file", "-e", f"{commit}^{{commit}}"],
                         capture_output=True)
    if has.returncode != 0:
        pytest.skip(f"{GIT_DIR} does not hold {commit}")
    return Source(commit)


@pytest.mark.parametrize("server", STACK_SERVERS)
def test_commit_is_the_pinned_version_and_floor(server, source):
    pkg = postgres_package(server)
    spec = source.pubspec()
    assert re.search(rf"^version:\s*{re.escape(pkg['version'])}\s*$", spec, re.M), spec
    floor = re.search(r"^\s*sdk:\s*'>=(\d+\.\d+)\.\d+", spec, re.M).group(1)
    assert floor == FRAMEWORK_DEPS[server]["postgres"][1]


@pytest.mark.parametrize("server", STACK_SERVERS)
def test_every_postgres_symbol_used_is_in_the_source(server, source):
    pkg = postgres_package(server)
    listed, types = pkg["symbols"], pkg.get("types", {})
    used = {u.key for u in uses_of(server)[0] if u.key in listed}
    assert "Pool.withEndpoints(settings:)" in used  # the reader found stack.dart's uses
    problems = [p for sym in sorted(used)
                if (p := check(source, sym, listed[sym], types.get(sym),
                               pkg["libraries"][0]))]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("symbol, path, result_type, why", [
    ("Connection.openUrl", "lib/postgres.dart", None, "has no member openUrl"),
    ("PoolSettings(maxConnections:)", "lib/src/pool/pool_api.dart", None,
     "maxConnections is not a named parameter"),
    # ConnectionSettings has it, PoolSettings does not pass it on.
    ("PoolSettings(typeRegistry:)", "lib/src/pool/pool_api.dart", None,
     "typeRegistry is not a named parameter"),
    ("ConnectionSettings(typeRegistry:)", "lib/postgres.dart", None, None),
    ("Endpoint(url:)", "lib/postgres.dart", None, "url is not a named parameter"),
    ("Session.execute(substitutionValues:)", "lib/postgres.dart", None, "not a named parameter"),
    ("Pool.withEndpoints", "lib/postgres.dart", "Pool", "declared in lib/src/pool/pool_api.dart"),
    ("Session.execute", "lib/postgres.dart", "Future<List<List<dynamic>>>", "listed as Future<List"),
    ("Result.single", "lib/postgres.dart", None, "has no member single"),
    ("SslMode.prefer", "lib/postgres.dart", None, "has no member prefer"),
    ("ResultStreamSubscription", "lib/postgres.dart", None, None),
    ("InternalQueryDescription", "lib/src/v3/query_description.dart", None, "not exported"),
])
def test_check_reports_what_the_source_does_not_have(source, symbol, path, result_type, why):
    problem = check(source, symbol, path, result_type, "package:postgres/postgres.dart")
    if why is None:
        assert problem is None, problem
    else:
        assert problem and why in problem, problem
