"""Step 9 of design/rlsched_runtime.md: the policy on held-out episodes."""

import copy
from pathlib import Path

import yaml

from rlsched.envs.grid import GridWalk
from rlsched.model import build_model, load_tokenizer
from rlsched.runtime.config import load_run_config
from rlsched.runtime.evaluate import evaluate_policy

GRID_FILE = Path(__file__).resolve().parents[2] / "examples" / "run" / "grid.yaml"
GRID_RUN = yaml.safe_load(GRID_FILE.read_text(encoding="utf-8"))  # GridWalk, one-token turns


def test_evaluation_is_seeded_and_sees_the_weights() -> None:
    data = copy.deepcopy(GRID_RUN)
    data["env"]["kwargs"] = {"size": 3, "max_steps": 6}
    cfg = load_run_config(data)
    first = evaluate_policy(cfg, None, 16)
    # seeded: the default seed is 0 (seed 1 plays these episodes otherwise)
    assert first == evaluate_policy(cfg, None, 16, seed=0)
    assert first["episodes"] == 16 and 1.0 <= first["mean_episode_len"] <= 6.0
    assert 0.0 <= first["mean_reward"] < 1.0
    # a model that never moves (every weight zero: uniform over the four moves) still plays
    vocab = load_tokenizer(cfg.model, GridWalk.words).get_vocab_size()
    zeros = {n: p.detach() * 0 for n, p in build_model(cfg.model, vocab).named_parameters()}
    uniform = evaluate_policy(cfg, zeros, 16)
    assert uniform != first and uniform["episodes"] == 16


def test_figures_are_rounded_means_and_the_turn_limit_ends_episodes() -> None:
    import torch

    data = copy.deepcopy(GRID_RUN)
    data["env"]["kwargs"] = {"size": 3, "max_steps": 6}
    cfg = load_run_config(data)
    threads = torch.get_num_threads()
    three = evaluate_policy(cfg, None, 3)
    assert torch.get_num_threads() == threads  # the caller's thread count comes back
    assert set(three) == {
        "mean_reward",
        "mean_episode_len",
        "terminated",
        "episodes",
        "random_terminated",
    }
    assert 0.0 <= three["random_terminated"] <= 1.0
    # means over three episodes: thirds, rounded to 3 (turns) and 4 (shares, reward) digits;
    # these seeded episodes take 13 turns in all and one of the three terminates
    turns = round(three["mean_episode_len"] * 3)
    assert turns % 3 != 0 and three["mean_episode_len"] == round(turns / 3, 3)
    done = round(three["terminated"] * 3)
    assert done % 3 != 0 and three["terminated"] == round(done / 3, 4)
    reward = three["mean_reward"]
    assert reward == round(reward, 4) and reward != round(reward, 3)
    # a limit of one turn ends every episode after its first action
    data["scheduler"]["max_turns"] = 1
    one = evaluate_policy(load_run_config(data), None, 7)
    assert one["mean_episode_len"] == 1.0 and one["episodes"] == 7
