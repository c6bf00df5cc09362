"""Reading a notebook's code without running it (grader/heads_flags.py's parser): a cell as the kernel would run it,
IPython's syntax translated and the code inside its magics included; the dotted names expressions reach, the names
bindings give, and the strings a name can hold. Nothing here is run: Python's `ast` only."""
from __future__ import annotations

import ast
import functools
import re
import string

# Magics that run Python code given to them: their code is read as part of the cell (`parse`)
CODE_MAGICS = {"time", "timeit", "capture", "prun"}
# What IPython turns `%magic` and `%%magic` into, and `!cmd` (`get_ipython().system(...)`, `x = !cmd`: getoutput)
MAGIC_METHODS = ("run_line_magic", "run_cell_magic")
SHELL_METHODS = {"system", "system_raw", "system_piped", "getoutput"}
# Timers that compile a string they are given (read as code: `timed_code`)
TIMERS = {"timeit.timeit", "timeit.repeat", "timeit.Timer"}
TIMER_NAMES = {t.split(".")[-1] for t in TIMERS}   # how the call is spelled after `from timeit import ...`


@functools.lru_cache(maxsize=4096)  # the release's cells recur in every submission
def parse(source: str) -> ast.Module | None:
    """The cell as the kernel would run it (IPython syntax translated), or None if it is not Python; the code a
    magic runs (`%%time`, `%%capture`, `%timeit stmt`: a string in the translated cell) is read as part of the
    cell. The tree is shared between callers: read it, never change it."""
    try:
        tree = _translated(source)
    except (SyntaxError, ValueError, RecursionError):
        return None
    inner = [parse(code) if code is not None else None
             for code in [*magic_code(tree), *expanded_code(tree), *timed_code(tree)]]
    annotations = [ast.Expr(expr) for expr in string_annotations(tree)]   # the inner trees have read their own
    if any(t is None for t in inner):   # the code a magic runs that is not Python: read as nothing, flagged
        tree.body.append(ast.Expr(ast.Call(ast.Name("heads_unreadable_magic", ast.Load()), [], [])))
    tree.body += [stmt for t in inner if t is not None for stmt in t.body] + annotations
    return tree


def _translated(source: str) -> ast.Module:
    """The cell's tree with IPython's syntax (magics, `!ls`) translated to Python, as the kernel runs it."""
    return ast.parse(translated(source))


def translated(source: str) -> str:
    """The cell's text with IPython's syntax (magics, `!ls`) translated to Python, as the kernel runs it."""
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def string_annotations(tree: ast.AST) -> list[ast.expr]:
    """The expressions written as string annotations (`x: 'exec(note) or int'`): typing.get_type_hints and
    functools.singledispatch evaluate them, so they are read as code (a red team ran a string through one)."""
    found = []
    for node in ast.walk(tree):
        notes = [getattr(node, "returns", None), getattr(node, "annotation", None)]
        for note in notes:
            if isinstance(note, ast.Constant) and isinstance(note.value, str):
                try:
                    found.append(ast.parse(note.value, mode="eval").body)
                except (SyntaxError, ValueError, RecursionError):
                    pass   # not Python: get_type_hints would fail on it too
    return found


def magic_calls(tree: ast.AST):
    """(call, magic's name, its arguments) for each `get_ipython().run_line_magic(...)` or `run_cell_magic(...)`
    in `tree`: what IPython makes of `%name line` and `%%name line\nbody`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MAGIC_METHODS \
                and node.args and isinstance(node.args[0], ast.Constant):
            yield node, node.args[0].value, [a.value for a in node.args[1:] if isinstance(a, ast.Constant)]


def magic_code(tree: ast.AST) -> list[str]:
    """The Python a magic runs: the body of `%%time`, `%%timeit`, `%%capture`, `%%prun` (and `%%timeit`'s setup
    line), and the statement of `%time`, `%timeit`, `%prun`; options (`-n 1`) left out."""
    code = []
    for _, name, args in magic_calls(tree):
        if name in CODE_MAGICS:
            line, body = (args + ["", ""])[:2]
            code += [body] if body else []
            if name != "capture":   # %%capture's line names a variable, not code
                code.append(re.sub(r"^(\s*-[a-zA-Z](\s*\d+)?)+\s", "", " " + line).strip())
    return [c for c in code if c]


def expanded_code(tree: ast.AST) -> list[str]:
    """The Python IPython evaluates inside a magic's line or a shell command before running it: the `{expr}` of
    `%matplotlib {exec(code) or 'inline'}` or `!echo {expr}` (its FullEvalFormatter joins a field and its format
    spec with ':'). A field that is not Python is left out: IPython's eval of it fails and the line runs
    unexpanded; the fields before a malformed one are still evaluated, so they are read."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        index = 1 if node.func.attr in MAGIC_METHODS else 0 if node.func.attr in SHELL_METHODS else None   # the line
        arg = node.args[index] if index is not None and len(node.args) > index else None
        if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str) and "{" in arg.value):
            continue
        found += [field for field in _format_fields(arg.value) if parses(field, "eval")]
    return found


def _format_fields(text: str):
    """Each `{field}` of `text` as FullEvalFormatter evaluates it (`name:spec`), and its name alone too, the
    reading that flags more; up to a malformed brace, where formatting stops."""
    try:
        for _, name, spec, _ in string.Formatter().parse(text):
            if name is not None:
                yield from [f"{name}:{spec}", name] if spec else [name]
    except ValueError:
        return


def timed_code(tree: ast.AST) -> list[str]:
    """The statements given to timeit as strings (`timeit.timeit("causal_mask(64)", ...)`), read as timeit reads
    them: it compiles the setup alone, then setup and statement together, and runs nothing if either fails, so
    text that is not Python (`itertools.repeat("two words")`, read here by the call's last name) is left out."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and (dotted(node.func, {}) or "").split(".")[-1] in TIMER_NAMES):
            continue
        given = dict(zip(("stmt", "setup"), node.args[:2])) | {k.arg: k.value for k in node.keywords}
        stmt, setup = ([a.value] if isinstance(a, ast.Constant) and isinstance(a.value, str) else []
                       for a in (given.get("stmt"), given.get("setup")))
        if (not setup or parses(setup[0])) and parses("\n".join(setup + stmt)):
            found.append("\n".join(setup + stmt))
    return found


def too_deep(source: str) -> bool:
    """Whether a cell that `parse` reads as not Python is Python nested deeper than the grader's parser goes: a
    kernel whose recursion limit an earlier cell raised runs it (red team 13 hid a patch behind a sum of 3,000
    terms). A cell that is not Python at all the kernel cannot run either."""
    try:
        _translated(source)
    except (RecursionError, MemoryError):
        return True
    except (SyntaxError, ValueError):
        pass
    return False


def parses(text: str, mode: str = "exec") -> bool:
    """Whether `text` is Python: statements (mode "exec") or one expression ("eval")."""
    try:
        ast.parse(text, mode=mode)
        return True
    except (SyntaxError, ValueError, RecursionError):
        return False


def bound_values(name: str, tree: ast.Module) -> list | None:
    """The expressions `name` is bound to in `tree` (None in the list: a binding that cannot be followed)."""
    return _NameValues.of(tree).values.get(name)


def imports(tree: ast.AST) -> dict[str, str]:
    """{name bound: dotted module or object} for every import in `tree`."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def dotted(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """`a.b.c` (import aliases resolved), `f()` for a call, or None for anything else. A loop, not
    recursion: a student's chain of thousands of attributes must not exhaust the grader's stack."""
    suffix = []
    while isinstance(node, (ast.Attribute, ast.Call)):
        suffix.append(f".{node.attr}" if isinstance(node, ast.Attribute) else "()")
        node = node.value if isinstance(node, ast.Attribute) else node.func
    if not isinstance(node, ast.Name):
        return None
    return aliases.get(node.id, node.id) + "".join(reversed(suffix))


def bindings(node: ast.AST):
    """(target, value) for each binding `node` makes: assignments, loop and comprehension variables, walrus,
    with-as, and a function's parameters with their defaults."""
    if isinstance(node, ast.Assign):
        yield from ((t, node.value) for t in node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value is not None:
        yield node.target, node.value
    elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        yield node.target, node.iter
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        yield from ((i.optional_vars, i.context_expr) for i in node.items if i.optional_vars is not None)
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = node.args
        positional = [*a.posonlyargs, *a.args]
        yield from zip(positional[len(positional) - len(a.defaults):], a.defaults)
        yield from ((arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None)
    elif isinstance(node, ast.Match):   # `match json: case m:` binds m to json; `case object(x=m)`, to json.x
        for case in node.cases:
            yield from _pattern_bindings(case.pattern, node.subject)


def _pattern_bindings(pattern: ast.pattern, subject: ast.expr):
    if isinstance(pattern, ast.MatchAs) and pattern.name:
        yield ast.Name(pattern.name, ast.Store()), subject
    if isinstance(pattern, (ast.MatchAs, ast.MatchOr)):
        for inner in [pattern.pattern] if isinstance(pattern, ast.MatchAs) else pattern.patterns:
            if inner is not None:
                yield from _pattern_bindings(inner, subject)
    elif isinstance(pattern, ast.MatchClass):
        for attr, inner in zip(pattern.kwd_attrs, pattern.kwd_patterns):
            yield from _pattern_bindings(inner, ast.Attribute(subject, attr, ast.Load()))


def names_in(target: ast.AST, attributes: bool = False) -> list[str]:
    """The names a binding's target binds. With `attributes`, an attribute target is its dotted name (`self.act`
    of `self.act = getattr(F, name)`, which made every `self.x = ...` of a red team's honest head a patch),
    and a tuple's items are read one by one; a subscript binds its container (`d["a"] = json`: d holds it)."""
    if isinstance(target, ast.arg):
        return [target.arg]
    if attributes and isinstance(target, ast.Attribute) and dotted(target, {}):
        return [dotted(target, {})]
    if attributes and isinstance(target, (ast.Tuple, ast.List, ast.Starred)):
        items = target.elts if not isinstance(target, ast.Starred) else [target.value]
        return [n for item in items for n in names_in(item, attributes)]
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


def resolved(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """`dotted`, with the longest prefix that names an alias (a class attribute "A.m") resolved too."""
    name = dotted(node, aliases)
    if name is None:
        return None
    parts = name.split(".")
    for i in range(len(parts), 1, -1):
        if ".".join(parts[:i]) in aliases:
            return ".".join([aliases[".".join(parts[:i])], *parts[i:]])
    return name


def chain_root(node: ast.AST) -> ast.AST:
    """What an attribute or subscript chain starts from: `d` of `d['a'].x`, the call of `type(t).x`."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node


def root(name: str | None) -> str:
    return (name or "").split(".")[0].rstrip("()")


def module_level_stores(tree: ast.Module):
    """(name, node) for every name bound at the top level of the cell, or declared global in a
    function and bound there."""
    def walk(node, in_function, global_names):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                if not in_function and not isinstance(child, ast.Lambda):
                    yield child.name, child
                if not isinstance(child, ast.ClassDef):
                    declared = {n for g in ast.walk(child) if isinstance(g, ast.Global) for n in g.names}
                    yield from walk(child, True, declared)
                continue
            if isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
                if not in_function or child.id in global_names:
                    yield child.id, child
            if isinstance(child, (ast.Import, ast.ImportFrom)) and not in_function:
                for a in child.names:
                    yield (a.asname or a.name.split(".")[0]), child
            yield from walk(child, in_function, global_names)
    yield from walk(tree, False, set())


def names_of(expr: ast.AST, tree: ast.Module) -> set[str] | None:
    """Every string `expr` can hold, when the student's code says so: a constant, a name bound only to constants or
    looped over a literal list of them, or a parameter given only such values by its default and by the direct
    calls of its function (or class). None if unknown. `tree`: all the student's cells."""
    return _NameValues.of(tree).strings(expr, frozenset())


class TreeIndex:
    """An index of a tree, built once for the tree last asked about: a notebook of a thousand lookups (getattr calls,
    private attributes set) must not walk itself a thousand times."""
    _last: tuple = (None, None)

    @classmethod
    def of(cls, tree: ast.Module):
        if cls._last[0] is not tree:
            cls._last = (tree, cls(tree))   # on the subclass: each index keeps its own
        return cls._last[1]


class _NameValues(TreeIndex):
    """What each name of a tree can be bound to. A binding the index cannot follow (`a, b = ...`, `n += ...`, a
    function passed as a value, a method) makes the name unknown: a value left out would let a name through."""

    def __init__(self, tree: ast.Module):
        self.values: dict[str, list] = {}   # name -> the expressions bound to it (None: unknown)
        add = lambda name, value: self.values.setdefault(name, []).append(value)
        constructors = {id(f): c.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
                        for f in c.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"}
        calls: dict[str, list[ast.Call]] = {}
        called = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                calls.setdefault(node.func.id, []).append(node)
                called.add(id(node.func))
        passed = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in called}
        for node in ast.walk(tree):
            for target, value in bindings(node):
                names = names_in(target)
                plain = isinstance(target, (ast.Name, ast.arg)) and not isinstance(node, ast.AugAssign)
                for name in names:
                    add(name, value if plain else None)
            if isinstance(node, ast.FunctionDef):
                params = [a.arg for a in node.args.args]
                fn, shift = (constructors[id(node)], 1) if id(node) in constructors else (node.name, 0)
                for i, param in enumerate(params):
                    if fn in passed or id(node) not in constructors and any(
                            isinstance(n, ast.Attribute) and n.attr == fn for n in ast.walk(tree)):
                        add(param, None)   # called some other way: map(f, ...), self.f(...)
                    for call in calls.get(fn, []):
                        self.values.setdefault(param, []).extend(
                            [k.value for k in call.keywords if k.arg in (param, None)]
                            + ([call.args[i - shift]] if 0 <= i - shift < len(call.args) else [])
                            + ([None] if any(isinstance(a, ast.Starred) for a in call.args) else []))
            elif isinstance(node, (ast.Lambda, ast.AsyncFunctionDef)):
                for a in node.args.args:
                    add(a.arg, None)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                for name in node.names:
                    add(name, None)
        self.memo: dict[str, set[str] | None] = {}

    def strings(self, expr: ast.AST | None, resolving: frozenset[str]) -> set[str] | None:
        if isinstance(expr, ast.Constant):
            return {expr.value} if isinstance(expr.value, str) else None
        if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):   # what a loop over it gives: for k in KINDS
            found = [self.strings(e, resolving) for e in expr.elts]
            return None if any(f is None for f in found) else set().union(*found)
        if not isinstance(expr, ast.Name) or expr.id not in self.values:
            return None
        if expr.id in resolving:   # a name given back to itself (f(kind) inside `for kind in ...`) adds no value
            return set()
        if not resolving and expr.id in self.memo:
            return self.memo[expr.id]
        found = [self.strings(v, resolving | {expr.id}) for v in self.values[expr.id]]
        result = None if any(f is None for f in found) else set().union(*found)
        if not resolving:   # only a whole answer is kept: one found inside a cycle may lack the cycle's values
            self.memo[expr.id] = result
        return result


def plain_prefix(expr: ast.AST) -> bool:
    """Whether a name built at run time starts with a letter the code spells (f"n{n}", "w" + str(i)): it can be
    neither special (`__...`) nor private (`_...`)."""
    first = expr.values[0] if isinstance(expr, ast.JoinedStr) and expr.values else \
        expr.left if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add) else None
    while isinstance(first, ast.BinOp) and isinstance(first.op, ast.Add):
        first = first.left
    return isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value[:1].isalpha()


def shown(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


def free_names(node: ast.AST) -> set[str]:
    """The names `node` reads that it does not bind itself (a parameter, a local, a loop variable): those it takes
    from the notebook. Python's scopes, approximately: a name bound anywhere in `node` counts as its own."""
    read, own = set(), set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            (read if isinstance(n.ctx, ast.Load) else own).add(n.id)
        elif isinstance(n, ast.arg):
            own.add(n.arg)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            own |= {a.asname or a.name.split(".")[0] for a in n.names}
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:   # a match pattern's capture
            own.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            own.add(n.rest)
    return read - own


def call_root(func: ast.AST) -> tuple[str | None, bool]:
    """(the name a call's function is reached from, whether through an attribute): `pad` of `pad(x)` (False),
    `M` of `M.attention_pattern(...)` and of `M(cfg).attention_pattern(...)` (True)."""
    through = False
    while isinstance(func, (ast.Attribute, ast.Subscript, ast.Call)):
        through |= isinstance(func, ast.Attribute)
        func = func.func if isinstance(func, ast.Call) else func.value
    return (func.id if isinstance(func, ast.Name) else None), through


IMPORTED = ast.Constant("an import")   # a name's value when an import binds it: the name is where resolving stops


def top_level_bindings(trees: list[ast.Module]) -> dict[str, list[ast.AST | None]]:
    """{name: what each of its module-level bindings gives it} over `trees`: the value of an assignment (tuple
    unpacking included), a loop's iterable, a with's context, a walrus's value, the `def` or `class` itself,
    IMPORTED, or None where the value cannot be followed (`except E as e`). Bindings inside a function count when
    the function declares the name global."""
    found: dict[str, list] = {}
    for tree in trees:
        for stmt in tree.body:
            _module_level(stmt, found)
    return found


def _module_level(node: ast.AST, found: dict[str, list]) -> None:
    add = lambda name, value: found.setdefault(name, []).append(value)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        add(node.name, node)
        declared = {n for g in ast.walk(node) if isinstance(g, ast.Global) for n in g.names}
        for inner, values in _bound_inside(node).items():
            for value in values if inner in declared else []:
                add(inner, value)
        for d in [*node.decorator_list, *getattr(node, "bases", [])]:
            _module_level(d, found)
        return
    if isinstance(node, ast.Lambda):   # its names are its own
        return
    if isinstance(node, ast.comprehension):   # its variables are its own; a walrus's name is the module's
        for n in ast.walk(node):
            if isinstance(n, ast.NamedExpr):
                add(n.target.id, n.value)
        return
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        for a in node.names:
            add(a.asname or a.name.split(".")[0], IMPORTED)
    elif isinstance(node, ast.ExceptHandler) and node.name:
        add(node.name, None)
    for target, value in bindings(node):
        for name in holders(target):
            add(name, value)
    for child in ast.iter_child_nodes(node):
        _module_level(child, found)


def holders(target: ast.AST) -> list[str]:
    """The names that hold a binding's value: those it binds, an attribute it sets by its dotted name
    (`self.model = decoder`: `self.model` holds the decoder, and `self.size = tok.vocab_size` puts nothing of the
    tokenizer in `self.linear`), and the container whose item it sets (`d["a"] = json`: d holds it); never the names
    an index reads (`results[K] = ...`)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for item in target.elts for name in holders(item)]
    if isinstance(target, ast.Starred):
        return holders(target.value)
    if isinstance(target, ast.arg):
        return [target.arg]
    if isinstance(target, ast.Attribute) and dotted(target, {}) and "()" not in dotted(target, {}):
        return [dotted(target, {})]
    held_by = chain_root(target)
    return [held_by.id] if isinstance(held_by, ast.Name) else []


def local_bindings(code: ast.AST) -> dict[str, list[ast.AST | None]]:
    """{name: its values} for every name `code` binds itself (a function's parameters, with their defaults or
    None, its assignments, loops, walruses, imports, nested functions; a lambda's or a comprehension's variables),
    the names it declares global left out: Python's scopes, approximately, as free_names reads them."""
    declared = {n for g in ast.walk(code) if isinstance(g, (ast.Global, ast.Nonlocal)) for n in g.names}
    return {name: values for name, values in _bound_inside(code).items() if name not in declared}


def _bound_inside(code: ast.AST) -> dict[str, list[ast.AST | None]]:
    found: dict[str, list] = {}
    add = lambda name, value: found.setdefault(name, []).append(value)
    for node in ast.walk(code):
        for target, value in bindings(node):
            for name in holders(target):
                add(name, value)
        if isinstance(node, ast.arguments):
            for a in [*node.posonlyargs, *node.args, *node.kwonlyargs, node.vararg, node.kwarg]:
                if a is not None:
                    found.setdefault(a.arg, []).append(None)   # the caller's argument, when the default is not used
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not code:
            add(node.name, node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                add(a.asname or a.name.split(".")[0], IMPORTED)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            add(node.name, None)
    return found
