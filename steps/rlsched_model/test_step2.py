"""Step 2 of design/rlsched_model.md: the KV cache passed under the keyword the model takes."""

import warnings

import torch
from transformers import DynamicCache

from rlsched.model import ModelSpec, build_model, cache_keyword


def test_the_bundled_model_takes_its_cache_under_the_keyword_without_a_warning() -> None:
    model = build_model(ModelSpec(), 16)
    keyword = cache_keyword(model)
    cache = DynamicCache()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with torch.no_grad():
            model(input_ids=torch.tensor([[3, 4, 5]]), use_cache=True, **{keyword: cache})
    assert cache.get_seq_length() == 3


def test_a_forward_without_the_new_name_gets_the_old_one() -> None:
    class Old(torch.nn.Module):
        def forward(self, input_ids, past_key_values=None, use_cache=False, **kwargs):
            return input_ids

    class New(torch.nn.Module):
        def forward(self, input_ids, cache=None, use_cache=False, **kwargs):
            return input_ids

    assert cache_keyword(Old()) == "past_key_values"
    assert cache_keyword(New()) == "cache"
