"""The state machine that committed records are applied to, in log order.

It is what makes the register API linearizable: a write, a compare-and-set
or a read is a record, and its answer is what applying it to the registers
gives once it is committed.
"""

from __future__ import annotations

from typing import Any


class RegisterMachine:
    def __init__(self, registers: dict[str, Any] | None = None) -> None:
        self.registers: dict[str, Any] = dict(registers or {})

    def apply(self, data: dict) -> dict:
        """Apply one committed record and return the client-visible result."""
        op = data.get("op")
        if op == "write":
            self.registers[data["key"]] = data["value"]
            return {}
        if op == "cas":
            current = self.registers.get(data["key"])
            if current != data["expected"]:
                return {"error": "cas-mismatch", "value": current}
            self.registers[data["key"]] = data["new"]
            return {}
        if op == "read":
            return {"value": self.registers.get(data["key"])}
        return {}

    def read_now(self, key: str) -> dict:
        """The register's value as applied so far, without going through the log."""
        return {"value": self.registers.get(key)}
