"""Step 19 of design/rlsched_sim.md: the simulator is a shell of design/rlsched_shell.md.

Every command type reaches its handler through the base's table; the old chain's inline
branches (abort, offload, reload, initial layout) are handlers of their own and do what the
chain did.
"""

from pathlib import Path

from rlsched.core.commands import Abort, Dispatch, InitialLayout, Offload, Reload
from rlsched.core.events import OffloadDone, ReloadDone, RequestAborted
from rlsched.core.shell import COMMAND_TYPES, Shell
from rlsched.core.shell import PendingRequest as Requested
from rlsched.sim.params import load_sim_config
from rlsched.sim.shell import Simulation
from rlsched.sim.workload import Workload

ROOT = Path(__file__).resolve().parents[2]


def _simulation(example: str = "four_gpu.yaml", **options: object) -> Simulation:
    sim = load_sim_config(ROOT / "examples" / example)
    cfg = sim.policy_config("timeshare")
    work = Workload(sim.workload, 0, cfg.scheduler.group_size, cfg.scheduler.max_tokens)
    return Simulation(cfg, sim.cost, work, **options)


def _answers(simulation: Simulation) -> list[tuple[float, object]]:
    return [(at, event) for at, _, event, _ in sorted(simulation._heap) if event is not None]


def test_every_command_type_has_its_own_handler_in_the_table() -> None:
    assert issubclass(Simulation, Shell)
    table = Simulation.handlers
    assert set(COMMAND_TYPES) <= set(table)
    names = {kind.__name__: table[kind].__name__ for kind in COMMAND_TYPES}
    assert names["Abort"] == "_abort" and names["Offload"] == "_offload"
    assert names["Reload"] == "_reload" and names["InitialLayout"] == "_initial_layout"
    assert len(set(names.values())) == len(COMMAND_TYPES)  # one handler per command type


def test_an_offload_answers_per_device_after_the_offload_time_and_ends_the_caches() -> None:
    simulation = _simulation()
    simulation.now = 2.0
    simulation._execute([Offload(7, (1, 3))])
    assert [simulation.timeline.kind(d) for d in range(4)] == ["idle", "offload", "idle", "offload"]
    answers = _answers(simulation)
    assert [(at, type(e), e.device, e.op_id) for at, e in answers] == [
        (3.0, OffloadDone, 1, 7),
        (3.0, OffloadDone, 3, 7),
    ]
    assert simulation._cache_epoch == [0, 1, 0, 1]
    # a memory rank forgets the prefixes it cached in HBM with its KV
    memory = _simulation("paper_160gpu.yaml")
    gpus = memory._gpus_per_rank
    rank = memory.ranks[1]
    rank.cache[5] = 300
    rank.cache_sum = 300
    memory.ranks[2].cache[6] = 100
    memory._execute([Offload(1, tuple(range(gpus, 2 * gpus)))])
    assert (rank.cache, rank.cache_sum) == ({}, 0)
    assert memory.ranks[2].cache == {6: 100}  # another rank keeps its own
    offload_s = memory.cost.offload_s.value
    assert {at for at, _ in _answers(memory)} == {offload_s}


def test_a_reload_answers_per_device_after_the_reload_time() -> None:
    simulation = _simulation()
    simulation.now = 5.0
    simulation._execute([Reload(9, (0, 2))])
    assert [simulation.timeline.kind(d) for d in range(4)] == ["reload", "idle", "reload", "idle"]
    answers = _answers(simulation)
    assert [(at, type(e), e.device, e.op_id) for at, e in answers] == [
        (6.0, ReloadDone, 0, 9),
        (6.0, ReloadDone, 2, 9),
    ]
    assert simulation._cache_epoch == [0, 0, 0, 0]  # a reload ends no cache


def test_the_initial_layout_shows_the_offloaded_devices_current_activity() -> None:
    simulation = _simulation()
    simulation._op[1] = simulation._op[2] = "offload"  # what the devices do, not yet shown
    simulation._execute([InitialLayout((0, 3), (1,))])
    assert [simulation.timeline.kind(d) for d in range(4)] == ["idle", "offload", "idle", "idle"]
    assert simulation._heap == []  # nothing is timed


def test_an_abort_answers_with_the_tokens_made_and_reschedules_its_rank_once() -> None:
    simulation = _simulation()
    simulation._execute([Dispatch(3, 0, 0, 0, 2, 100, 0, 10_000, 0, None)])
    record = simulation.ledger.get(Requested, 3)
    assert record.command.rid == 3 and record.sent == 0.0
    rank = simulation.ranks[2]
    at = rank.next_time()
    assert rank.complete(at) == []  # prefill done, decoding
    simulation._heap.clear()
    simulation.now = at + 2.0  # 2 s at the 60 tokens/s cap: 120 tokens
    simulation._execute([Abort(2, (3, 99))])  # 99 is not on the rank: nothing to answer
    answers = _answers(simulation)
    assert len(answers) == 1
    when, answer = answers[0]
    assert when == simulation.now and isinstance(answer, RequestAborted)
    assert (answer.rid, answer.new_tokens) == (3, 120)
    assert simulation.result.decoded_tokens == 120
    assert rank.load == 0 and simulation.timeline.kind(2) == "idle"  # the rank was rescheduled
    assert simulation._trajs[0].moved == 0  # nothing moves without kv_migration: move
    simulation._note(answer)
    assert len(simulation.ledger) == 0 and not simulation.ledger.late


def test_a_whole_run_answers_every_request_it_opened_and_none_late() -> None:
    simulation = _simulation()
    simulation.run(2)
    assert not simulation.ledger.late  # the simulator never answers late or twice
    assert len(simulation.ledger) == simulation.core.in_flight
