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
  `persist...`, `sync`, `fsync`) left out.

The planted bugs' switches (`Bug.X in config.bugs`) are left alone: a
mutant there would turn a planted bug on.

Our own operators, not a mutation library's (mutmut, cosmic-ray): those
mutate every token (strings, numbers, log calls) into thousands of mutants
most of which no protocol checker is meant to see, and run a test suite
per mutant; these are the mistakes issue 39 names (a guard dropped both
whole and one clause at a time), and a mutant here is a copy of the target
run by the harness, not by pytest.

Pure: text in, mutants out, in source order; `sample` picks some by seed.
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass

OPERATORS = ("negate-condition", "drop-guard", "drop-clause", "off-by-one", "epoch-compare", "skip-persistence")
LEAVES = (ast.Return, ast.Raise, ast.Continue, ast.Break)
SYMBOLS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
STRICTNESS = {ast.Lt: "<=", ast.LtE: "<", ast.Gt: ">=", ast.GtE: ">"}
TURNED = {ast.Lt: ">", ast.Gt: "<", ast.LtE: ">=", ast.GtE: "<=", ast.Eq: "!=", ast.NotEq: "=="}
EPOCHS = re.compile(r"epoch|term", re.IGNORECASE)
PERSISTS = re.compile(r"^(write_|persist)|^f?sync$")
# The planted bugs' switches: mutating one turns a planted bug on, which measures nothing new.
PLANTED = re.compile(r"\bBug\.|\bbugs\b")


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
    found: list[Mutant] = []
    tree = ast.parse(source, path)
    formatted = [text.span(node) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)]

    def add(operator: str, node: ast.AST, start: int, end: int, new: str, around: tuple[int, int] | None) -> None:
        """The change of [start, end) to `new`; `around`: the expression the
        probe goes before (None: the change is a statement left out)."""
        before = source[start:end]
        if any(a <= start and end <= b for a, b in formatted):
            probed = None  # a probe's quotes could close the f-string's
        elif around is None:
            probed = text.replaced(start, end, PROBE)
        else:
            first, last = around
            inside = source[first:start] + new + source[end:last]
            probed = text.replaced(first, last, f"({PROBE} and {inside})")
        mutant = Mutant(path, operator, node.lineno, before, new, text.replaced(start, end, new), probed)  # type: ignore[attr-defined]
        found.append(mutant)

    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.Compare)) and PLANTED.search(source[slice(*text.span(node))]):
            continue
        if isinstance(node, ast.If):
            start, end = text.span(node.test)
            add("negate-condition", node, start, end, f"not ({source[start:end]})", (start, end))
            if not node.orelse and len(node.body) == 1 and isinstance(node.body[0], LEAVES):
                start, end = text.span(node)
                add("drop-guard", node, start, end, "pass", None)
            for clause, neutral in _clauses(node.test):
                start, end = text.span(clause)
                newlines = "\n" * source.count("\n", start, end)  # kept, in parentheses that make them legal
                add("drop-clause", node, start, end, f"({neutral}{newlines})" if newlines else neutral, (start, end))
        elif isinstance(node, ast.Compare) and len(node.ops) == 1:
            op = type(node.ops[0])
            if op not in SYMBOLS:
                continue
            # The operator itself: between the operands there may be parentheses, but no other comparison.
            after_left, before_right = text.span(node.left)[1], text.span(node.comparators[0])[0]
            at = source.index(SYMBOLS[op], after_left, before_right)
            start, end = at, at + len(SYMBOLS[op])
            whole = text.span(node)
            if op in STRICTNESS:
                add("off-by-one", node, start, end, STRICTNESS[op], whole)
            if op in TURNED and EPOCHS.search(source[slice(*whole)]):
                add("epoch-compare", node, start, end, TURNED[op], whole)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            called = node.value.func
            name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
            if PERSISTS.match(name):
                start, end = text.span(node)
                add("skip-persistence", node, start, end, "pass", None)
    return sorted(found, key=lambda m: (m.line, OPERATORS.index(m.operator)))


def sample(found: list[Mutant], count: int, seed: int) -> list[Mutant]:
    """`count` of the mutants, drawn by `seed`, as many of each operator as can be (round robin)."""
    rng = random.Random(seed)
    by_operator = {op: [m for m in found if m.operator == op] for op in OPERATORS}
    for pool in by_operator.values():
        rng.shuffle(pool)
    picked: list[Mutant] = []
    while len(picked) < count and any(by_operator.values()):
        for op in OPERATORS:
            if by_operator[op] and len(picked) < count:
                picked.append(by_operator[op].pop())
    return sorted(picked, key=lambda m: (m.path, m.line, m.operator))
