"""Step 4 of design/rlsched_shell.md: the ledger of outstanding operations; late and duplicate
answers recognised in one place."""

import pytest

from rlsched.core.commands import Dispatch, Offload, StartEnvStep
from rlsched.core.shell import Ledger, PendingDeviceOp, PendingEnvStep, PendingRequest


def request(rid: int, rank: int = 0, sent: float = 0.0) -> PendingRequest:
    return PendingRequest(sent, Dispatch(rid, rid, 0, 0, rank, 10, 0, 20, 0, None))


def test_an_answer_closes_its_record_once_and_a_second_is_late() -> None:
    ledger = Ledger()
    assert len(ledger) == 0 and not ledger.late
    first, second = request(0), request(1, rank=1)
    ledger.open(first)
    ledger.open(second)
    assert len(ledger) == 2 and ledger.get(PendingRequest, 1) is second
    assert ledger.close(PendingRequest, 1) is second
    assert ledger.get(PendingRequest, 1) is None and len(ledger) == 1 and not ledger.late
    assert ledger.close(PendingRequest, 1) is None  # a duplicate answer
    assert ledger.close(PendingRequest, 7) is None  # an answer nobody awaits
    assert ledger.late == {"PendingRequest": 2}
    assert ledger.outstanding(PendingRequest) == [first]


def test_kinds_do_not_mix_though_their_ids_do() -> None:
    ledger = Ledger()
    env = PendingEnvStep(0.0, StartEnvStep(0, 0, 5.0))
    ledger.open(request(0))
    ledger.open(env)
    ledger.open(PendingDeviceOp(0.0, Offload(0, (0,)), 0))
    assert ledger.get(PendingEnvStep, 0) is None and ledger.get(PendingEnvStep, (0, 0)) is env
    assert ledger.close(PendingEnvStep, 0) is None and ledger.late == {"PendingEnvStep": 1}
    assert ledger.outstanding(PendingEnvStep) == [env] and len(ledger) == 3


def test_one_record_per_key() -> None:
    ledger = Ledger()
    ledger.open(request(3))
    with pytest.raises(AssertionError, match="key not in self._open"):
        ledger.open(request(3, sent=1.0))
    assert len(ledger) == 1 and ledger.get(PendingRequest, 3).sent == 0.0


def test_a_forgotten_operation_is_not_held_and_its_late_answer_is_counted() -> None:
    ledger = Ledger()
    old, other = request(5), request(6)
    ledger.open(old)
    ledger.open(other)
    assert ledger.holds(old) and ledger.forget(old)
    assert not ledger.holds(old) and not ledger.forget(old) and len(ledger) == 1
    assert not ledger.late  # giving up is not an answer
    assert ledger.close(PendingRequest, 5) is None and ledger.late["PendingRequest"] == 1
    # holds() asks for the very record: an equal one under the same key is another operation
    twin = request(6)
    assert twin == other and not ledger.holds(twin) and not ledger.forget(twin)
    assert ledger.holds(other) and ledger.outstanding(PendingRequest) == [other]


def test_outstanding_lists_the_oldest_first() -> None:
    ledger = Ledger()
    ops = [request(rid) for rid in (4, 2, 9)]
    for op in ops:
        ledger.open(op)
    ledger.close(PendingRequest, 2)
    assert ledger.outstanding(PendingRequest) == [ops[0], ops[2]]
    assert ledger.outstanding(PendingEnvStep) == []
