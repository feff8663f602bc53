"""Step 2 of design/rlsched_calibrate.md: a device worker whose engine's steps are recorded
(in process: the worker is a plain class)."""

import time

import pytest
from runtime_parts import tiny

from rlsched.engines.base import Sampling, SpecSettings
from rlsched.engines.factory import make_engine
from rlsched.envs.base import resolve_env
from rlsched.model import action_token_ids, load_tokenizer
from rlsched.runtime.calibrate import ProbeWorker, StepProbe


def _parts(kind: str = "kv", speculative: SpecSettings | None = None) -> tuple:
    cfg = tiny()
    env_cls = resolve_env(cfg.env.name)
    tok = load_tokenizer(cfg.model, env_cls.words)
    allowed = action_token_ids(tok, env_cls.actions)
    engine = make_engine(kind, cfg.model, tok.get_vocab_size(), 2, 0, speculative)
    return cfg, tok, allowed, engine, Sampling(1.0, tuple(allowed), ())


def test_each_step_is_recorded_with_its_rows_joins_padding_and_widest_context() -> None:
    _cfg, _tok, allowed, engine, sampling = _parts()
    probe = StepProbe(engine)
    words = list(allowed)
    a, b = words[0], words[1]
    probe.submit(1, [a, b, b] * 3, 2, sampling)  # 9 tokens
    probe.submit(2, [a, a, b, a, a], 2, sampling)
    probe.submit(3, [b] * 4, 1, sampling)  # beyond max_batch 2: waits
    assert probe.num_active == 3 and probe.version == engine.version  # passed through
    assert probe.step() == []
    # rows 1 and 2 join, fed 9 and 5 tokens padded to 9; 3 waits
    assert probe.steps[0][2:] == (2, 2, 18, 9, 3, 1, 0)  # one pass: 9 + 5 + 128 > 18
    first = probe.step()
    assert sorted(out.rid for out in first) == [1, 2]
    assert probe.steps[1][2:] == (2, 0, 2, 10, 1, 1, 0)  # one token each, contexts 10 and 6
    assert probe.ended == {}  # their answers leave when the next step ends
    finished = probe.step()
    assert [out.rid for out in finished] == [3]
    # 1 and 2 leave with this step's end; 3 at once, nothing follows it
    assert set(probe.ended) == {1, 2, 3} and len(set(probe.ended.values())) == 1
    # 1 and 2, finished by the step before, answer while this one runs
    assert probe.steps[2][2:] == (1, 1, 4, 4, 0, 1, 2)
    began, ended = probe.steps[2][:2]
    assert 0 <= ended - began < 60
    # an engine that emptied sent its answers at once: the next step has none leaving
    probe.submit(5, [a, b], 1, sampling)
    probe.step()
    assert probe.steps[3][2:] == (1, 1, 1, 2, 0, 1, 0)  # fed 1: rid 1's slot kept `a`
    probe.submit(4, [b, a, a, a], 5, sampling)
    aborted = probe.abort([4])
    assert [out.rid for out in aborted] == [4] and 4 in probe.ended
    assert probe.num_active == 0 and not probe._new


def test_a_step_run_as_two_passes_is_recorded_with_the_positions_they_computed() -> None:
    _cfg, _tok, allowed, engine, sampling = _parts()
    engine.split_tokens = 0  # a second pass costs nothing: the widest feed always runs apart
    probe = StepProbe(engine)
    a, b = list(allowed)[:2]
    probe.submit(1, [a, b, b] * 3, 2, sampling)  # 9 tokens
    probe.submit(2, [a, a, b, a, a], 2, sampling)  # 5 tokens
    probe.step()
    # 5 + 9 positions in two passes instead of 2 x 9 in one
    assert probe.steps[0][2:] == (2, 2, 14, 9, 2, 2, 0)
    probe.step()
    assert probe.steps[1][4:] == (2, 10, 0, 1, 0)  # one token each: equal feeds, one pass


def test_the_recompute_engine_pads_every_row_to_the_widest_context() -> None:
    _cfg, _tok, allowed, engine, sampling = _parts("transformers")
    probe = StepProbe(engine)
    probe.submit(1, list(allowed)[:2] * 3, 2, sampling)
    probe.submit(2, list(allowed)[:2], 2, sampling)
    probe.step()
    probe.step()
    assert [s[2:6] for s in probe.steps] == [(2, 2, 12, 6), (2, 0, 14, 7)]
    assert [s[7] for s in probe.steps] == [1, 1]


def test_an_engine_that_never_splits_steps_one_pass_a_step() -> None:
    # the speculative engine counts a forward pass per request and round: not a split step
    _cfg, _tok, allowed, engine, sampling = _parts("transformers", SpecSettings(drafter="request"))
    probe = StepProbe(engine)
    probe.submit(1, list(allowed)[:2] * 3, 3, sampling, group=1)
    probe.submit(2, list(allowed)[:2] * 2, 3, sampling, group=1)
    before = engine.forward_passes
    while probe.num_active:
        probe.step()
    assert engine.forward_passes - before > len(probe.steps)  # more passes than steps
    assert {s[7] for s in probe.steps} == {1}


def test_a_probe_worker_records_arrival_and_end_of_each_generate_call() -> None:
    cfg, tok, allowed, _engine, sampling = _parts()
    worker = ProbeWorker(
        0, cfg.model, tok.get_vocab_size(), cfg.train, 1.0, allowed, 0, 4, engine="kv"
    )
    try:
        assert isinstance(worker.engine, StepProbe)
        before = time.time()
        out = worker.generate(7, list(allowed)[:6], 3, sampling)
        assert len(out.token_ids) == 3 and out.finish_reason == "length"
        taken = worker.take()
        assert [s[2:4] for s in taken["steps"]] == [(1, 1), (1, 0), (1, 0)]
        arrived, ended = taken["times"][7]
        assert before <= arrived <= ended <= time.time()
        assert all(s[7] == 1 for s in taken["steps"]) and taken["split_tokens"] == 128
        assert worker.take() == {"steps": [], "times": {}, "split_tokens": 128}  # taken once
        assert worker.stats()["forward_passes"] == pytest.approx(3)  # the engine's own counters
    finally:
        worker.stop()
