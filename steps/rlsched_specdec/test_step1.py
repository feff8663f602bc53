"""Step 1 of design/rlsched_specdec.md: the group drafter and the adaptive draft length."""

import copy

import pytest

from rlsched.specdec.drafter import DraftLength, GroupDrafter


def test_a_request_drafts_what_another_response_of_its_group_wrote() -> None:
    drafter = GroupDrafter(max_ngram=3)
    drafter.add_sequence([7, 1, 2, 3, 4, 5, 6])
    mine = drafter.add_sequence([9, 2, 3])
    assert drafter.propose([9, 2, 3], 3) == [4, 5, 6]
    assert drafter.propose([9, 2, 3], 2) == [4, 5]
    assert drafter.propose([9, 2, 3], 10) == [4, 5, 6]  # the continuation ends with the sequence
    assert drafter.propose([9, 2, 3], 0) == []
    assert drafter.propose([9, 8], 3) == []  # nothing ends in 8
    # in flight: the request's own tokens are indexed as they come, and drafted from later
    drafter.extend(mine, [40, 41, 42, 2, 3])
    assert drafter.propose([0, 40], 2) == [41, 42]


def test_the_longest_matching_suffix_wins_then_the_most_frequent_continuation() -> None:
    drafter = GroupDrafter(max_ngram=3)
    drafter.add_sequence([1, 2, 3, 7, 7])
    drafter.add_sequence([5, 2, 3, 8, 8])
    drafter.add_sequence([6, 2, 3, 8, 9])
    assert drafter.propose([1, 2, 3], 2) == [7, 7]  # the 3-gram occurs once
    assert drafter.propose([4, 2, 3], 2) == [8, 8]  # the 2-gram: 8 twice, then a tie (8, 9)
    drafter.add_sequence([0, 2, 3, 7])
    drafter.add_sequence([0, 2, 3, 7])
    assert drafter.propose([4, 2, 3], 2) == [7, 7]  # now 7 is three against two
    # after 8 the group wrote 8 once and 9 twice; the walk then follows only those with 9
    drafter.add_sequence([1, 8, 9, 10])
    assert drafter.propose([4, 8], 3) == [9, 10]
    assert drafter.propose([3, 8, 9], 1) == [10]


def test_ngrams_never_span_two_sequences_and_proposing_changes_nothing() -> None:
    drafter = GroupDrafter(max_ngram=2, min_ngram=2)
    drafter.add_sequence([1, 2])
    drafter.add_sequence([3, 4, 5])
    assert drafter.propose([2, 3], 1) == []  # (2, 3) is not an n-gram of the group
    assert drafter.propose([5, 2], 1) == []  # min_ngram 2: a 1-gram match is not enough
    before = copy.deepcopy((drafter.sequences, drafter.index))
    drafter.propose([1, 2], 4)
    drafter.propose([9, 3], 4)
    assert (drafter.sequences, drafter.index) == before
    assert drafter.propose([0, 3, 4], 4) == [5]


def test_a_lookup_walks_only_the_most_recent_occurrences() -> None:
    drafter = GroupDrafter(max_ngram=1, max_candidates=2)
    drafter.add_sequence([5, 1])
    drafter.add_sequence([5, 1])
    drafter.add_sequence([5, 1])
    drafter.add_sequence([5, 2])
    drafter.add_sequence([5, 2])
    assert drafter.propose([5], 1) == [2]
    assert GroupDrafter(max_ngram=1).propose([5], 1) == []


def test_bad_input_is_refused_and_changes_nothing() -> None:
    with pytest.raises(ValueError, match="min_ngram"):
        GroupDrafter(min_ngram=0)
    with pytest.raises(ValueError, match="max_ngram"):
        GroupDrafter(max_ngram=2, min_ngram=3)
    drafter = GroupDrafter()
    seq = drafter.add_sequence([1, 2])
    before = copy.deepcopy((drafter.sequences, drafter.index))
    with pytest.raises(ValueError, match="tokens"):
        drafter.extend(seq, [3, -1])
    with pytest.raises(ValueError, match="seq_id"):
        drafter.extend(5, [3])
    with pytest.raises(ValueError, match="k"):
        drafter.propose([1], -1)
    assert (drafter.sequences, drafter.index) == before


def test_draft_length_grows_on_full_acceptance_and_shrinks_on_rejection_within_bounds() -> None:
    length = DraftLength(k_init=2, k_min=1, k_max=4)
    assert [length.update(2, 2), length.update(3, 3), length.update(4, 4), length.update(4, 4)] == [
        3,
        4,
        4,
        4,
    ]
    assert length.update(4, 1) == 3  # a rejection: one shorter
    assert length.update(3, 0) == 2
    assert length.update(2, 1) == 1
    assert length.update(1, 0) == 1  # never below k_min
    assert length.update(0, 0) == 1  # no draft, no change
    assert length.update(1, 1) == 2
    with pytest.raises(ValueError, match="accepted"):
        length.update(2, 3)
    with pytest.raises(ValueError, match="k_init"):
        DraftLength(k_init=9, k_min=1, k_max=8)


def test_defaults_are_the_designed_ones() -> None:
    drafter = GroupDrafter()
    assert (drafter.min_ngram, drafter.max_ngram, drafter.max_candidates) == (1, 4, 64)
    length = DraftLength()
    assert (length.k, length.k_min, length.k_max) == (4, 1, 8)
