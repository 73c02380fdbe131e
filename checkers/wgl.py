"""The linearizability search (Wing & Gong, with Lowe's memoisation as
Porcupine does it) over one partition's operations, resumable: `run(steps)`
searches that many steps and returns True, False, or None (not done yet),
so the checker can share a time budget among partitions and stop at the
first one that fails.

Two engines with one interface: `PySearch`, pure Python, the reference;
`NativeSearch`, the same loop compiled in Rust (checkers/wgl_core, built by
the set-up script), which calls back into Python only for model steps it has
not seen (a (state, operation) pair), so it still knows nothing of the model.
Tests hold the two to the same verdicts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from history.errors import UsageError

from .models import Model, Op

try:
    import splitbrain_wgl
except ImportError:  # not built: the pure-Python engine does the work
    splitbrain_wgl = None

CALL, RETURN = 1, 0


def entry_order(ops: list[Op]) -> list[tuple[int, int]]:
    """(kind, op) entries in the history's order: (time, row) is a total
    order, and every call comes before its own return."""
    entries = sorted(
        [(op.call, CALL, i) for i, op in enumerate(ops)] + [(op.ret, RETURN, i) for i, op in enumerate(ops)]
    )
    return [(kind, i) for _, kind, i in entries]


class PySearch:
    def __init__(self, ops: list[Op], model: Model) -> None:
        self.ops, self.model = ops, model
        self.order = entry_order(ops)
        n = self.n = len(self.order)
        # Doubly linked list over entry positions, so lifting an operation out is O(1).
        self.nxt = list(range(1, n + 1))
        self.prv = list(range(-1, n - 1))
        self.ret_pos = [0] * len(ops)
        for p, (kind, i) in enumerate(self.order):
            if kind == RETURN:
                self.ret_pos[i] = p
        self.head = self.p = 0
        self.state = model.init
        self.linearized = 0
        self.seen: set[tuple[int, object]] = set()
        self.stack: list[tuple[int, int, object]] = []  # (call position, op, state before)
        self.prefix: list[int] = []  # the deepest linearization found (ops, in order)
        self.stuck: int | None = None  # the op whose return that linearization could not pass
        self.result: bool | None = None if ops else True

    def run(self, max_steps: int) -> bool | None:
        if self.result is not None:
            return self.result
        ops, order, nxt, prv, ret_pos, n = self.ops, self.order, self.nxt, self.prv, self.ret_pos, self.n
        step, state_key, seen, stack = self.model.step, self.model.hash, self.seen, self.stack
        head, p, state, linearized = self.head, self.p, self.state, self.linearized
        for _ in range(max_steps):
            if head >= n:
                self.result = True
                break
            kind, i = order[p]
            if kind == CALL:
                legal, new_state = step(state, ops[i])
                if legal:
                    bits = linearized | (1 << i)
                    memo = (bits, new_state if state_key is None else state_key(new_state))
                    if memo not in seen:
                        seen.add(memo)
                        stack.append((p, i, state))
                        state, linearized = new_state, bits
                        for q in (p, ret_pos[i]):  # lift the call and its return out
                            a, b = prv[q], nxt[q]
                            if a >= 0:
                                nxt[a] = b
                            else:
                                head = b
                            if b < n:
                                prv[b] = a
                        p = head
                        continue
                p = nxt[p]
                continue
            # A return whose call is not linearized yet: backtrack.
            if self.stuck is None or len(stack) > len(self.prefix):
                self.prefix, self.stuck = [j for _, j, _ in stack], i
            if not stack:
                self.result = False
                break
            p_call, j, state = stack.pop()
            linearized &= ~(1 << j)
            for q in (ret_pos[j], p_call):  # put them back
                a, b = prv[q], nxt[q]
                if a >= 0:
                    nxt[a] = q
                else:
                    head = q
                if b < n:
                    prv[b] = q
            p = nxt[p_call]
        self.head, self.p, self.state, self.linearized = head, p, state, linearized
        return self.result


class NativeSearch:
    """The compiled loop; model states are interned as ids on this side."""

    def __init__(self, ops: list[Op], model: Model) -> None:
        order = entry_order(ops)
        self.states = [model.init]
        self.core = splitbrain_wgl.Search([kind for kind, _ in order], [i for _, i in order], len(ops))
        self.step = self._model_step(ops, model, self.states)
        self.result: bool | None = None if ops else True
        if model.native == "kv":
            self._use_kv(ops, model)

    def _use_kv(self, ops: list[Op], model: Model) -> None:
        """The kv model stepped on the compiled side (a history of appends makes
        a new state at almost every step), where every value is a string."""
        args = [op.result if op.f == "get" else op.value for op in ops]
        if isinstance(model.init, str) and all(isinstance(arg, str) for arg in args):
            self.core.use_kv(model.init, [KV_FUNCTIONS[op.f] for op in ops], args)

    @staticmethod
    def _model_step(ops: list[Op], model: Model, states: list[Any]) -> Callable[[int, int], int]:
        """The callback: (state id, op) -> new state id, or -1 when the op is
        illegal there; new states are interned. It runs once per new (state,
        op) pair, so it is kept to local lookups."""
        step, key_of = model.step, model.hash
        ids = {model.init if key_of is None else key_of(model.init): 0}

        def model_step(state_id: int, op: int) -> int:
            state = states[state_id]
            legal, new_state = step(state, ops[op])
            if not legal:
                return -1
            if new_state is state:
                return state_id
            key = new_state if key_of is None else key_of(new_state)
            new_id = ids.get(key)
            if new_id is None:
                new_id = ids[key] = len(states)
                states.append(new_state)
            return new_id

        return model_step

    def run(self, max_steps: int) -> bool | None:
        if self.result is None:
            self.result = self.core.run(max_steps, self.step)
        return self.result

    @property
    def prefix(self) -> list[int]:
        prefix: list[int] = self.core.prefix()
        return prefix

    @property
    def stuck(self) -> int | None:
        stuck: int | None = self.core.stuck()
        return stuck


ENGINES: dict[str, type[PySearch] | type[NativeSearch]] = {"python": PySearch, "native": NativeSearch}
# The kv model's functions as the compiled search numbers them.
KV_FUNCTIONS = {"get": 0, "put": 1, "append": 2}


def default_engine() -> str:
    return "native" if splitbrain_wgl is not None else "python"


def new_search(ops: list[Op], model: Model, engine: str | None = None) -> PySearch | NativeSearch:
    engine = engine or default_engine()
    if engine == "native" and splitbrain_wgl is None:
        raise UsageError("the native linearizability engine is not built (scripts/bootstrap.sh builds it)")
    return ENGINES[engine](ops, model)
