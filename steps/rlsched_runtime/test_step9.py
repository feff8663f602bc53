"""Step 9 of design/rlsched_runtime.md: the policy on held-out episodes."""

import copy

from rlsched.envs.grid import GridWalk
from rlsched.model import build_model, load_tokenizer
from rlsched.runtime.config import EXAMPLE, load_run_config
from rlsched.runtime.evaluate import evaluate_policy


def test_evaluation_is_seeded_and_sees_the_weights() -> None:
    data = copy.deepcopy(EXAMPLE)
    data["env"]["kwargs"] = {"size": 3, "max_steps": 6}
    cfg = load_run_config(data)
    first = evaluate_policy(cfg, None, 16)
    assert first == evaluate_policy(cfg, None, 16)
    assert first["episodes"] == 16 and 1.0 <= first["mean_episode_len"] <= 6.0
    assert 0.0 <= first["mean_reward"] < 1.0
    # a model that never moves (every weight zero: uniform over the four moves) still plays
    vocab = load_tokenizer(cfg.model, GridWalk.words).get_vocab_size()
    zeros = {n: p.detach() * 0 for n, p in build_model(cfg.model, vocab).named_parameters()}
    uniform = evaluate_policy(cfg, zeros, 16)
    assert uniform != first and uniform["episodes"] == 16
