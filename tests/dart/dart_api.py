"""Which framework symbols a Dart server uses, read from its source with
tree-sitter-dart, for tests/dart/test_dart_api.py.

A "use" is named the way each server's api.toml lists it:

- `Name`: a name imported from a framework library (`show Name`), or reached
  through an import prefix (`shelf_io.serve` is `serve`);
- `Name.member`: a member of a framework type, read, written, called or torn
  off, whether reached statically (`Response.ok`), on a value whose type the
  reader can follow (`router.get`, `server.servers`), through a cascade
  (`..options.port`), through `super`, or inherited by a class extending a
  framework class (`writeAllButBody(resp)` in a `StringResponse` subclass);
- `Name(param:)` / `Name.member(param:)`: a named argument of a framework
  constructor, function or method, including `super(param: …)` in the
  constructor of a subclass; `Name.call` is calling a value of a framework
  function type (`Handler`);
- `@override` members of a class extending a framework class, as
  `Name.member`.

The reader follows types the way a person reading the code would, without
the framework's source: a variable's type is its declared type or that of
its initializer; a framework member's result type is what api.toml says it
is (`type = …`). What it cannot follow (the result of a dart: call, an index)
is not a framework value, with one exception it refuses: a member used on a
closure parameter without a type, which is how framework callbacks receive
framework objects; such parameters must be given their type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import tree_sitter_dart
from tree_sitter import Language, Node, Parser

PARSER = Parser(Language(tree_sitter_dart.language()))

# Names from dart:core, dart:convert and dart:io that code inside a class
# extending a framework class uses unqualified; everything else there that is
# not declared in the server's own code is taken to be inherited.
DART_TOP_LEVEL = {"utf8", "print", "identical", "exit", "stdout", "stderr"}

UNTYPED = "<untyped parameter>"

SELECTORS = {"selector", "unconditional_assignable_selector",
             "conditional_assignable_selector", "cascade_section"}
HEADS = {"identifier", "const_object_expression", "new_expression", "super", "this"}


@dataclass
class Imports:
    """The framework side of a file's imports."""
    shown: dict[str, str] = field(default_factory=dict)     # name -> package
    prefixes: dict[str, str] = field(default_factory=dict)  # prefix -> package
    own_prefixes: set[str] = field(default_factory=set)
    uris: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass
class Use:
    key: str
    file: str
    line: int


def text(src: bytes, n: Node) -> str:
    return src[n.start_byte:n.end_byte].decode()


def walk(n: Node):
    stack = [n]
    while stack:
        x = stack.pop()
        yield x
        stack.extend(reversed(x.children))


def strip_type(t: str | None) -> str | None:
    """`Future<X>`, `FutureOr<X>`, `X?` -> X."""
    if t is None:
        return None
    t = t.strip().rstrip("?")
    m = re.fullmatch(r"(?:Future|FutureOr)<(.*)>", t)
    return strip_type(m.group(1)) if m else t


def element_type(t: str | None) -> str | None:
    m = re.fullmatch(r"(?:Iterable|List|Set)<(.*)>", t or "")
    return strip_type(m.group(1)) if m else None


def read_imports(src: bytes, root: Node, own_package: str) -> Imports:
    imp = Imports()
    for spec in (n for n in walk(root) if n.type == "import_specification"):
        uri = text(src, next(n for n in walk(spec) if n.type == "uri")).strip("'\"")
        prefix_node = None
        kids = spec.children
        for i, k in enumerate(kids):
            if k.type == "as":
                prefix_node = kids[i + 1]
        shown = [text(src, i) for c in kids if c.type == "combinator"
                 for i in c.children if c.children[0].type == "show" and i.type == "identifier"]
        hides = any(c.children[0].type == "hide" for c in kids if c.type == "combinator")
        m = re.match(r"package:([a-z0-9_]+)/", uri)
        framework = m is not None and m.group(1) != own_package
        if not framework:
            if prefix_node is not None:
                imp.own_prefixes.add(text(src, prefix_node))
            continue
        package = m.group(1)
        imp.uris.append(uri)
        if prefix_node is not None:
            imp.prefixes[text(src, prefix_node)] = package
        elif not shown or hides:
            imp.problems.append(
                f"{uri}: import framework libraries with `show` (or `as`), so that every "
                "name used from them is explicit")
        for name in shown:
            imp.shown[name] = package
    return imp


class Reader:
    """Collects the framework uses of one file."""

    def __init__(self, path: str, src: bytes, imports: Imports, types: dict[str, str],
                 type_names: set[str], own_returns: dict[str, str], declared: set[str]):
        self.path, self.src, self.imp = path, src, imports
        self.types = types            # api key -> result type
        self.type_names = type_names  # framework names api.toml lists
        self.own_returns = own_returns  # own top-level function -> return type
        self.declared = declared      # every name the server's own code declares
        self.uses: list[Use] = []
        self.problems: list[str] = []
        self.scope: dict[str, str | None] = {}
        self.superclass: str | None = None

    # -- what counts as framework -------------------------------------------

    def is_framework_type(self, t: str | None) -> bool:
        return t is not None and (t in self.imp.shown or t in self.type_names)

    def use(self, key: str, node: Node):
        self.uses.append(Use(key, self.path, node.start_point[0] + 1))

    # -- declarations ---------------------------------------------------------

    def declare(self, name: str, t: str | None):
        t = strip_type(t)
        if name in self.scope and self.scope[name] != t:
            if self.is_framework_type(t) or self.is_framework_type(self.scope[name]):
                self.problems.append(f"{self.path}: `{name}` is declared with two types "
                                     f"({self.scope[name]}, {t}); rename one")
            self.scope[name] = None
        else:
            self.scope[name] = t

    def declared_type(self, n: Node) -> str | None:
        for c in n.children:
            if c.type in ("type_identifier",):
                args = c.next_sibling
                t = text(self.src, c)
                if args is not None and args.type == "type_arguments":
                    t += text(self.src, args)
                return t
            if c.type == "identifier":
                return None
        return None

    def collect_scope(self, decl: Node):
        for n in walk(decl):
            if n.type == "formal_parameter":
                ident = [c for c in n.children if c.type == "identifier"]
                if ident:
                    t = self.declared_type(n)
                    in_closure = n.parent is not None and n.parent.parent is not None and \
                        n.parent.parent.type == "function_expression"
                    self.declare(text(self.src, ident[-1]),
                                 t if t is not None else (UNTYPED if in_closure else None))
            elif n.type in ("initialized_variable_definition", "declaration"):
                ident = next((c for c in n.children if c.type == "identifier"), None)
                if n.type == "declaration":
                    ids = [i for i in walk(n) if i.type == "initialized_identifier"]
                    for i in ids:
                        self.declare(text(self.src, i.children[0]), self.declared_type(n))
                    continue
                if ident is None:
                    continue
                t = self.declared_type(n)
                if t is None:
                    kids = n.children
                    eq = next((i for i, c in enumerate(kids) if c.type == "="), None)
                    if eq is not None:
                        t = self.expression_type(kids[eq + 1:], record=False)
                self.declare(text(self.src, ident), t)
            elif n.type == "for_loop_parts":
                kids = n.children
                if any(c.type == "in" for c in kids):
                    i = next(i for i, c in enumerate(kids) if c.type == "in")
                    ident = [c for c in kids[:i] if c.type == "identifier"]
                    if ident:
                        source = [c for c in kids[i + 1:] if c.type != ")"]
                        self.declare(text(self.src, ident[-1]),
                                     element_type(self.expression_type(source, record=False)))

    # -- expressions ------------------------------------------------------------

    def expression_type(self, nodes: list[Node], record: bool = True) -> str | None:
        """Type of an expression given as sibling nodes (head, selectors…)."""
        nodes = [n for n in nodes if n.type not in (";", ",")]
        if not nodes:
            return None
        if len(nodes) == 1 and nodes[0].type in ("unary_expression", "await_expression",
                                                  "parenthesized_expression"):
            inner = [c for c in nodes[0].children if c.type not in ("await", "(", ")")]
            return self.expression_type(inner, record)
        if nodes[0].type == "await":
            return self.expression_type(nodes[1:], record)
        if nodes[0].type in HEADS:
            return self.chain(nodes[0], nodes[1:], record)
        return None

    def member(self, owner: tuple[str, str] | None, name: str, node: Node,
               record: bool) -> tuple[tuple[str, str] | None, str | None]:
        """Looks up `.name` on `owner` (kind, value); returns the key used and
        the resulting value (kind, type)."""
        if owner is None:
            return None, None
        kind, value = owner
        if kind == "prefix":
            key = name
        elif kind in ("static", "instance"):
            if kind == "instance" and value == UNTYPED:
                # Only a file that imports a framework gets framework objects
                # through callbacks.
                if record and (self.imp.shown or self.imp.prefixes):
                    self.problems.append(
                        f"{self.path}:{node.start_point[0] + 1}: `.{name}` on a closure "
                        "parameter without a type; give the parameter its type")
                return None, None
            if not self.is_framework_type(value):
                return None, None
            key = f"{value}.{name}"
        else:
            return None, None
        if record:
            self.use(key, node)
        result = strip_type(self.types.get(key))
        return ("key", key), result

    def chain(self, head: Node, rest: list[Node], record: bool = True) -> str | None:
        src = self.src
        key: str | None = None        # the api key of the last member/callee
        head_name = text(src, head) if head.type == "identifier" else None
        cur: tuple[str, str] | None = None   # what the next selector applies to
        cur_type: str | None = None

        def call(args: Node, callee: str | None):
            if callee is None:
                return
            for named in (c for c in args.children if c.type == "named_argument"):
                label = next(c for c in named.children if c.type == "label")
                name = text(src, label.children[0])
                if record:
                    self.use(f"{callee}({name}:)", named)

        if head.type in ("const_object_expression", "new_expression"):
            t = next((c for c in head.children if c.type == "type_identifier"), None)
            name = text(src, t) if t is not None else None
            ctor = next((c for c in head.children if c.type == "identifier"), None)
            args = next((c for c in head.children if c.type == "arguments"), None)
            if name in self.imp.shown:
                key = name if ctor is None else f"{name}.{text(src, ctor)}"
                if record:
                    self.use(key, head)
                if args is not None:
                    call(args, key)
                cur_type = name
                cur = ("instance", name)
            else:
                cur_type = name
                cur = ("instance", name) if name else None
        elif head.type == "super":
            cur = ("static", self.superclass) if self.superclass else None
        elif head.type == "this":
            cur = None
        else:
            name = text(src, head)
            if name in self.imp.prefixes:
                cur = ("prefix", name)
            elif name in self.imp.own_prefixes:
                cur = None
            elif name in self.imp.shown:
                if record:
                    self.use(name, head)
                cur = ("static", name)
                key = name
                cur_type = name
            elif name in self.scope:
                cur_type = self.scope[name]
                cur = ("instance", cur_type) if cur_type else None
            elif name in self.own_returns:
                cur = None
                cur_type = strip_type(self.own_returns[name])
                key = None
                if rest and rest[0].type == "selector" and rest[0].children and \
                        rest[0].children[0].type == "argument_part":
                    rest = rest[1:]
                    cur = ("instance", cur_type) if cur_type else None
            elif (self.superclass and name[:1].islower() and name not in self.declared
                  and name not in DART_TOP_LEVEL):
                # Inherited from the framework class this class extends.
                key = f"{self.superclass}.{name}"
                if record:
                    self.use(key, head)
                cur_type = strip_type(self.types.get(key))
                cur = ("instance", cur_type) if cur_type else None
            else:
                cur = None

        rest = [s for s in rest if s.type != "comment"]
        for sel in rest:
            if sel.type == "cascade_section":
                # Applies to the receiver before the cascades, not the last value.
                continue
            kids = sel.children if sel.type == "selector" else [sel]
            for k in kids:
                if k.type in ("unconditional_assignable_selector",
                              "conditional_assignable_selector"):
                    ident = next((c for c in k.children if c.type == "identifier"), None)
                    if ident is None:  # an index: not a framework member
                        cur, key, cur_type = None, None, None
                        continue
                    ref, result = self.member(cur, text(src, ident), k, record)
                    key = ref[1] if ref else None
                    cur_type = result
                    cur = ("instance", result) if result else None
                elif k.type == "argument_part":
                    args = next(c for c in k.children if c.type == "arguments")
                    if key is None and cur is not None and cur[0] == "instance" and \
                            self.is_framework_type(cur[1]):
                        # Calling a value of a framework function type.
                        key = f"{cur[1]}.call"
                        if record:
                            self.use(key, k)
                        cur_type = strip_type(self.types.get(key))
                    else:
                        call(args, key)
                        if key is not None and key == head_name:
                            # A framework class's constructor yields the class;
                            # a framework function what api.toml says.
                            cur_type = strip_type(self.types.get(key)) or (
                                key if key[:1].isupper() else None)
                    cur = ("instance", cur_type) if cur_type else None
                    key = None
                elif k.type == "!":
                    continue
                else:
                    cur, key, cur_type = None, None, None

        receiver_type = None
        for sel in rest:
            if sel.type != "cascade_section":
                continue
            if receiver_type is None:
                receiver_type = self.chain(head, [s for s in rest if s.type != "cascade_section"],
                                           record=False)
            self.cascade(receiver_type, sel, record)
        return cur_type if receiver_type is None else receiver_type

    def cascade(self, receiver: str | None, section: Node, record: bool):
        kids = section.children
        first = next((c for c in kids if c.type == "cascade_selector"), None)
        if first is None or receiver is None:
            return
        ident = next((c for c in first.children if c.type == "identifier"), None)
        if ident is None:
            return
        ref, result = self.member(("instance", receiver), text(self.src, ident), first, record)
        key = ref[1] if ref else None
        cur = ("instance", result) if result else None
        for k in kids[kids.index(first) + 1:]:
            if k.type == "selector" and k.children:
                k = k.children[0]
            if k.type in ("unconditional_assignable_selector", "conditional_assignable_selector"):
                i = next((c for c in k.children if c.type == "identifier"), None)
                if i is None:
                    return
                ref, result = self.member(cur, text(self.src, i), k, record)
                key = ref[1] if ref else None
                cur = ("instance", result) if result else None
            elif k.type != "argument_part":
                break  # `=` and the value assigned: not part of the member chain
            else:
                args = next(c for c in k.children if c.type == "arguments")
                if key is not None and record:
                    for named in (c for c in args.children if c.type == "named_argument"):
                        label = next(c for c in named.children if c.type == "label")
                        self.use(f"{key}({text(self.src, label.children[0])}:)", named)
                cur, key = None, None

    # -- the walk -----------------------------------------------------------------

    def read_declaration(self, nodes: list[Node], superclass: str | None):
        self.scope = {}
        self.superclass = superclass if self.is_framework_type(superclass) else None
        for n in nodes:
            self.collect_scope(n)
        for n in nodes:
            self.visit(n)

    def visit(self, n: Node):
        kids = n.children
        i = 0
        while i < len(kids):
            k = kids[i]
            if k.type in HEADS:
                j = i + 1
                while j < len(kids) and kids[j].type in SELECTORS | {"comment"}:
                    j += 1
                if j > i + 1 or k.type in ("const_object_expression", "new_expression") or \
                        (k.type == "identifier" and self.is_used_alone(k)):
                    self.chain(k, kids[i + 1:j])
                for s in kids[i:j]:
                    self.visit(s)
                i = j
                continue
            if k.type == "initializer_list_entry" and self.superclass:
                sup = next((c for c in k.children if c.type == "super"), None)
                args = next((c for c in k.children if c.type == "arguments"), None)
                if sup is not None and args is not None:
                    self.use(self.superclass, sup)
                    for named in (c for c in args.children if c.type == "named_argument"):
                        label = next(c for c in named.children if c.type == "label")
                        self.use(f"{self.superclass}({text(self.src, label.children[0])}:)", named)
            self.visit(k)
            i += 1

    def is_used_alone(self, ident: Node) -> bool:
        """A bare identifier that is an expression (not a declaration, label,
        type or part of a selector)."""
        p = ident.parent
        return p is not None and p.type in (
            "argument", "return_statement", "expression_statement", "function_expression_body",
            "initialized_variable_definition", "assignment_expression", "list_literal",
            "pair", "conditional_expression") and \
            not (p.type == "initialized_variable_definition" and ident == next(
                (c for c in p.children if c.type == "identifier"), None))


def top_level_declarations(root: Node):
    """Groups a file's top-level nodes: (nodes, superclass) per function,
    getter, variable or class."""
    group: list[Node] = []
    for n in root.children:
        if n.type in ("import_or_export", "comment", "library_name"):
            continue
        group.append(n)
        if n.type in ("function_body", "class_definition", ";", "extension_declaration"):
            yield group
            group = []
    if group:
        yield group


def override_members(src: bytes, cls: Node) -> list[tuple[str, Node]]:
    body = next(c for c in cls.children if c.type == "class_body")
    out, pending = [], False
    for c in body.children:
        if c.type == "annotation":
            pending = text(src, c).strip() == "@override"
            continue
        if pending and c.type in ("method_signature", "declaration", "getter_signature",
                                  "function_signature"):
            ident = next((i for i in walk(c) if i.type == "identifier"), None)
            if ident is not None:
                out.append((text(src, ident), ident))
            pending = False
    return out


def read_server(folder: Path, own_package: str, types: dict[str, str], symbols: set[str]):
    """All framework uses and problems of the server in `folder`, given the
    symbols and result types its api.toml lists (which only help follow
    types: a use is reported whether listed or not)."""
    type_names = {k for k in symbols if "." not in k and "(" not in k}
    files = sorted(p for p in folder.rglob("*.dart") if ".dart_tool" not in p.parts)
    parsed = {p: (p.read_bytes(), None) for p in files}
    parsed = {p: (b, PARSER.parse(b)) for p, (b, _) in parsed.items()}
    own_returns: dict[str, str] = {}
    declared: set[str] = set()
    for p, (b, tree) in parsed.items():
        for n in walk(tree.root_node):
            if n.type in ("function_signature", "getter_signature"):
                ident = next((c for c in n.children if c.type == "identifier"), None)
                ret = next((c for c in n.children if c.type == "type_identifier"), None)
                if ident is not None:
                    declared.add(text(b, ident))
                    if ret is not None and n.parent.type == "program":
                        own_returns[text(b, ident)] = text(b, ret)
            elif n.type in ("formal_parameter", "initialized_variable_definition",
                            "initialized_identifier", "for_loop_parts", "class_definition",
                            "constructor_signature", "static_final_declaration"):
                idents = [c for c in n.children if c.type == "identifier"]
                if n.type == "initialized_variable_definition":
                    # Only the variable: an initializer whose head is a bare
                    # identifier (`final c = options!.context`) is a child
                    # too, and is a use, not a declaration.
                    idents = idents[:1]
                for c in idents:
                    declared.add(text(b, c))
    uses: list[Use] = []
    problems: list[str] = []
    uris: list[str] = []
    for p, (b, tree) in parsed.items():
        rel = str(p.relative_to(folder))
        imp = read_imports(b, tree.root_node, own_package)
        problems += [f"{rel}: {x}" for x in imp.problems]
        uris += imp.uris
        reader = Reader(rel, b, imp, types, type_names, own_returns, declared)
        for spec in (n for n in walk(tree.root_node) if n.type == "combinator"):
            # A name imported from a framework is used, if only as a type.
            for ident in (c for c in spec.children if c.type == "identifier"):
                if text(b, ident) in imp.shown:
                    reader.use(text(b, ident), ident)
        for group in top_level_declarations(tree.root_node):
            cls = next((n for n in group if n.type == "class_definition"), None)
            superclass = None
            if cls is not None:
                sup = next((c for c in cls.children if c.type == "superclass"), None)
                if sup is not None:
                    t = next(c for c in sup.children if c.type == "type_identifier")
                    superclass = text(b, t)
            reader.read_declaration(group, superclass)
            if cls is not None and reader.superclass:
                for name, node in override_members(b, cls):
                    reader.use(f"{reader.superclass}.{name}", node)
        uses += reader.uses
        problems += reader.problems
    return uses, problems, uris
