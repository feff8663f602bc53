"""CPU cost of a simulated request's bookkeeping: the shell base's Ledger against the dict of
records the simulator kept until design/rlsched_sim.md 0.10.1 (rebuilt here as `OldRecord`).

Each request's record is opened, its `ends` read when it finishes and the record closed, as
`Simulation._dispatch`, `run` and `_note` do; median of 5 rounds under `time.process_time`:

    python benchmarks/shell_ledger_cost.py [REQUESTS]
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from rlsched.core import shell as core_shell
from rlsched.core.commands import Dispatch
from rlsched.sim.shell import PendingRequest


@dataclass(frozen=True, slots=True)
class OldRecord:
    """The simulator's record until 0.10.1: fields copied from the command."""

    tid: int
    rank: int
    resume: int
    chunk: int
    ends: bool


def old_way(commands: list[Dispatch]) -> float:
    requests: dict[int, OldRecord] = {}
    start = time.process_time()
    for c in commands:
        chunk = c.max_new_tokens if c.chunked else 0
        requests[c.rid] = OldRecord(c.tid, c.rank, c.resume_tokens, chunk, True)
    for c in commands:
        assert requests[c.rid].ends
        record = requests.pop(c.rid)
        _ = (record.tid, record.rank, record.resume, record.chunk)
    return time.process_time() - start


def ledger_way(commands: list[Dispatch]) -> float:
    ledger = core_shell.Ledger()
    start = time.process_time()
    for c in commands:
        ledger.open(PendingRequest(0.0, c, True))
    for c in commands:
        assert ledger.get(core_shell.PendingRequest, c.rid).ends
        command = ledger.close(core_shell.PendingRequest, c.rid).command
        _ = (command.tid, command.rank, command.resume_tokens)
        _ = command.max_new_tokens if command.chunked else 0
    return time.process_time() - start


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    commands = [Dispatch(i, i, 0, 0, i % 40, 100, 0, 500, 0, None) for i in range(count)]
    rounds: dict[str, list[float]] = {"dict of records": [], "ledger": []}
    for _ in range(5):
        rounds["dict of records"].append(old_way(commands))
        rounds["ledger"].append(ledger_way(commands))
    for name, seconds in rounds.items():
        median = sorted(seconds)[2]
        print(f"{name}: {median / count * 1e9:.0f} ns a request (open, read ends, close)")


if __name__ == "__main__":
    main()
