"""Mutants of a target's source, for `splitbrain mutate`: the harness
measures its own power by the share of broken copies of the target it
catches. Each mutant is one small change a Raft implementer could make by
mistake, at one place, made on the text (the rest of the file untouched,
so its line numbers still point at the code):

- `negate-condition`: an `if`'s test negated;
- `drop-guard`: an `if` without `else` whose body only leaves (return,
  raise, continue, break) taken out;
- `drop-clause`: one clause of an `if`'s compound test dropped (made
  `True` in an `and`, `False` in an `or`), the check a guard forgot: Raft's
  commit rule is such a clause (a record counted only if of the leader's
  own epoch);
- `off-by-one`: `<` and `<=` (`>` and `>=`) swapped;
- `epoch-compare`: a comparison of epochs (or terms) turned round (`<` for
  `>`, `==` for `!=`);
- `skip-persistence`: a call that writes to disk or syncs (`write_...`,
  `persist...`, `sync`, `fsync`) left out;

and the kinds a standard mutation tool makes (PIT's and mutmut's), which
are not Raft's in particular:

- `swap-arguments`: a call's first two positional arguments swapped;
- `arithmetic`: `+` and `-` swapped (in an expression, or `+=` and `-=`);
- `constant`: a number one more (`0` made `1`), `True` and `False` swapped;
- `delete-statement`: an assignment or a call in a function body left out.

The planted bugs' switches (`Bug.X in config.bugs`) are left alone: a
mutant there would turn a planted bug on.

Our own operators, not a mutation library's (mutmut, cosmic-ray): those
mutate every token (strings, log calls too) into thousands of mutants most
of which no protocol checker is meant to see, and run a test suite per
mutant (mutmut's mutants switch on a variable its pytest run sets; a copy
of the target here is run by the harness, its node processes by the
backend); the first six are the mistakes issue 39 names (a guard dropped
both whole and one clause at a time), and the last four the standard
kinds, left out of log calls and strings.

Pure: text in, mutants out, in source order; `sample` picks some by seed.
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass

OPERATORS = (
    "negate-condition",
    "drop-guard",
    "drop-clause",
    "off-by-one",
    "epoch-compare",
    "skip-persistence",
    "swap-arguments",
    "arithmetic",
    "constant",
    "delete-statement",
)
LEAVES = (ast.Return, ast.Raise, ast.Continue, ast.Break)
SYMBOLS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
STRICTNESS = {ast.Lt: "<=", ast.LtE: "<", ast.Gt: ">=", ast.GtE: ">"}
TURNED = {ast.Lt: ">", ast.Gt: "<", ast.LtE: ">=", ast.GtE: "<=", ast.Eq: "!=", ast.NotEq: "=="}
EPOCHS = re.compile(r"epoch|term", re.IGNORECASE)
PERSISTS = re.compile(r"^(write_|persist)|^f?sync$")
# The planted bugs' switches: mutating one turns a planted bug on, which measures nothing new.
PLANTED = re.compile(r"\bBug\.|\bbugs\b")
# Calls whose arguments are words for a reader (a log line), not the protocol's.
LOGGING = {"debug", "info", "warning", "error", "exception", "print"}
# Calls whose answer is the same with their two arguments swapped: swapping them makes an
# equivalent mutant, which the simulation cannot set apart in a file it does not run
# (storage.py's `min(self._indexed, records)` survived seed 11's draw so).
SYMMETRIC = {"min", "max"}
ARITHMETIC = {ast.Add: ("+", "-"), ast.Sub: ("-", "+")}
DELETABLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)


# What a mutant's probed copy calls where it changed (harness/reach.py): always True.
PROBE = '__import__("harness.reach").reach.reached()'


@dataclass(frozen=True)
class Mutant:
    """One change to one file: where, by which operator, and the file's text
    after it; `probed`: the same text with a probe at the change (an
    expression changed inside `(PROBE and ...)`, a statement left out
    replaced by the probe), or None where the change sits in an f-string."""

    path: str
    operator: str
    line: int
    before: str
    after: str
    source: str
    probed: str | None = None

    @property
    def name(self) -> str:
        return f"{self.path}:{self.line}:{self.operator}"

    def describe(self) -> str:
        return f"{self.name}: {self.before.strip()} -> {self.after.strip()}"


class _Text:
    """A file's text addressed by the AST's (line, column) positions."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.starts = [0]
        for line in source.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def at(self, line: int, col: int) -> int:
        # The AST's columns count UTF-8 bytes; the code these mutate is ASCII where it is code.
        return self.starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (
            self.at(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            self.at(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
        )

    def replaced(self, start: int, end: int, new: str) -> str:
        return self.source[:start] + new + self.source[end:]


def _clauses(test: ast.expr) -> Iterator[tuple[ast.expr, str]]:
    """Each clause of a compound test, with what leaves it out: `True` in an `and`, `False` in an `or`."""
    for node in ast.walk(test):
        if isinstance(node, ast.BoolOp):
            neutral = "True" if isinstance(node.op, ast.And) else "False"
            yield from ((clause, neutral) for clause in node.values)


def mutants(path: str, source: str) -> list[Mutant]:
    """Every mutant of `source` (the file at `path`) by every operator, in source order."""
    text = _Text(source)
    tree = ast.parse(source, path)
    formatted = [text.span(node) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)]
    found = []
    for operator, node, start, end, new, around, probed_as in [
        *_raft(tree, source, text),
        *_standard(tree, source, text),
    ]:
        # The probed copy: `probed_as` where given; else the change inside `(PROBE and ...)` around
        # the expression `around`, or (None) the probe in place of a statement left out.
        if any(a <= start and end <= b for a, b in formatted):
            probed = None  # a probe's quotes could close the f-string's
        elif probed_as is not None:
            probed = text.replaced(start, end, probed_as)
        elif around is None:
            probed = text.replaced(start, end, PROBE)
        else:
            first, last = around
            probed = text.replaced(first, last, f"({PROBE} and {source[first:start] + new + source[end:last]})")
        changed = text.replaced(start, end, new)
        found.append(Mutant(path, operator, node.lineno, source[start:end], new, changed, probed))
    return sorted(found, key=lambda m: (m.line, OPERATORS.index(m.operator)))


def _raft(tree: ast.AST, source: str, text: _Text) -> Iterator[tuple]:
    """The Raft kinds' changes: (operator, node, start, end, new, around, probed_as)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.Compare)) and PLANTED.search(source[slice(*text.span(node))]):
            continue
        if isinstance(node, ast.If):
            start, end = text.span(node.test)
            yield ("negate-condition", node, start, end, f"not ({source[start:end]})", (start, end), None)
            if not node.orelse and len(node.body) == 1 and isinstance(node.body[0], LEAVES):
                yield ("drop-guard", node, *text.span(node), "pass", None, None)
            for clause, neutral in _clauses(node.test):
                start, end = text.span(clause)
                newlines = "\n" * source.count("\n", start, end)  # kept, in parentheses that make them legal
                new = f"({neutral}{newlines})" if newlines else neutral
                yield ("drop-clause", node, start, end, new, (start, end), None)
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in SYMBOLS:
            op = type(node.ops[0])
            # The operator itself: between the operands there may be parentheses, but no other comparison.
            after_left, before_right = text.span(node.left)[1], text.span(node.comparators[0])[0]
            at = source.index(SYMBOLS[op], after_left, before_right)
            whole = text.span(node)
            if op in STRICTNESS:
                yield ("off-by-one", node, at, at + len(SYMBOLS[op]), STRICTNESS[op], whole, None)
            if op in TURNED and EPOCHS.search(source[slice(*whole)]):
                yield ("epoch-compare", node, at, at + len(SYMBOLS[op]), TURNED[op], whole, None)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and PERSISTS.match(_called(node.value)):
            yield ("skip-persistence", node, *text.span(node), "pass", None, None)


def _standard(tree: ast.AST, source: str, text: _Text) -> Iterator[tuple]:
    """The standard kinds' changes: (operator, node, start, end, new, around, probed_as)."""
    spoken = set()  # nodes inside a log call's arguments
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called(node) in LOGGING:
            spoken |= {id(inner) for inner in ast.walk(node)}
    for node in ast.walk(tree):
        if id(node) in spoken or (
            isinstance(node, (ast.Call, ast.BinOp, ast.Constant, ast.AugAssign))
            and PLANTED.search(source[slice(*text.span(node))])
        ):
            continue
        if (
            isinstance(node, ast.Call)
            and len(node.args) >= 2
            and not any(isinstance(a, ast.Starred) for a in node.args)
            and _called(node) not in SYMMETRIC
        ):
            (a_start, a_end), (b_start, b_end) = text.span(node.args[0]), text.span(node.args[1])
            first, second, between = source[a_start:a_end], source[b_start:b_end], source[a_end:b_start]
            if first != second and "\n" not in first + second:
                yield ("swap-arguments", node, a_start, b_end, second + between + first, None,
                       f"({PROBE} and {second}){between}{first}")  # fmt: skip
        elif isinstance(node, ast.BinOp) and type(node.op) in ARITHMETIC and not _concatenates(node):
            symbol, other = ARITHMETIC[type(node.op)]
            at = source.index(symbol, text.span(node.left)[1], text.span(node.right)[0])
            yield ("arithmetic", node, at, at + 1, other, text.span(node), None)
        elif isinstance(node, ast.AugAssign) and type(node.op) in ARITHMETIC:
            symbol, other = ARITHMETIC[type(node.op)]
            start, end = text.span(node)
            at = source.index(symbol + "=", text.span(node.target)[1], text.span(node.value)[0])
            changed = source[start:at] + other + source[at + 1 : end]
            yield ("arithmetic", node, start, end, changed, None, f"{PROBE}; {changed}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, int):  # (a bool is an int)
            new = str(not node.value) if isinstance(node.value, bool) else str(node.value + 1)
            yield ("constant", node, *text.span(node), new, text.span(node), None)
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from _deletions(function, source, text, spoken)


def _deletions(
    function: ast.FunctionDef | ast.AsyncFunctionDef, source: str, text: _Text, spoken: set[int]
) -> Iterator[tuple]:
    """Each assignment or call statement directly in `function`'s blocks left
    out (its lines kept as blank ones); not a persistence call
    (`skip-persistence` leaves those out), a log call or a docstring."""
    blocks = [function.body] + [
        getattr(node, field) for node in ast.walk(function) for field in ("body", "orelse", "finalbody")
        if node is not function and isinstance(getattr(node, field, None), list)
        and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))
    ]  # fmt: skip
    for block in blocks:
        for statement in block:
            if not isinstance(statement, DELETABLE) or id(statement) in spoken:
                continue
            if isinstance(statement, ast.Expr) and (
                not isinstance(statement.value, ast.Call)
                or PERSISTS.match(_called(statement.value))
                or _called(statement.value) in LOGGING
            ):
                continue
            start, end = text.span(statement)
            if PLANTED.search(source[start:end]):
                continue
            lines = "\n" * source.count("\n", start, end)
            yield ("delete-statement", statement, start, end, "pass" + lines, None, PROBE + lines)


def _called(call: ast.Call) -> str:
    return call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")


def _concatenates(node: ast.BinOp) -> bool:
    """A `+` of strings, lists or tuples (not arithmetic)."""
    literal = (ast.JoinedStr, ast.List, ast.Tuple, ast.ListComp)
    return any(
        isinstance(side, literal) or (isinstance(side, ast.Constant) and isinstance(side.value, (str, bytes)))
        for side in (node.left, node.right)
    )


def sample(found: list[Mutant], count: int, seed: int) -> list[Mutant]:
    """`count` of the mutants, drawn by `seed`, as many of each operator as can be (round robin)."""
    return sorted(drawn(found, seed)[:count], key=lambda m: (m.path, m.line, m.operator))


def drawn(found: list[Mutant], seed: int) -> list[Mutant]:
    """Every mutant, in the order `seed` draws them: one of each operator in turn, each operator's shuffled."""
    rng = random.Random(seed)
    by_operator = {op: [m for m in found if m.operator == op] for op in OPERATORS}
    for pool in by_operator.values():
        rng.shuffle(pool)
    picked: list[Mutant] = []
    while any(by_operator.values()):
        for op in OPERATORS:
            if by_operator[op]:
                picked.append(by_operator[op].pop())
    return picked
