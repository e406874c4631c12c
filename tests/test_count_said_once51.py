"""Session 51: the app's box for a largest count that cannot run said the count twice, '64
devices, the largest count asked, cannot run: at 64 devices, Shard group (HSDP) 3 does not
divide ...' (and '... x Gradient accumulation 1 (64 devices); ...' for a batch); the one-count
refusal now drops the count its caller says (``errors.unsaid_at``, ``said_at``'s inverse)."""

from __future__ import annotations

from scalesim.errors import Refusal, controls_named_of, knobs_of, said_at, unsaid_at


def test_the_count_said_first_is_dropped_with_the_rule_and_fix_kept():
    refusal = Refusal("shard group 3 does not divide dp 64; give a divisor of it (e.g. 64)",
                      knobs=("shard_group",), controls_named=("shard_group",))
    said = said_at("64 devices", refusal)
    assert str(said).startswith("at 64 devices, shard group 3")
    back = unsaid_at("64 devices", said)
    assert back == str(refusal)
    assert knobs_of(back) == ("shard_group",) and controls_named_of(back) == ("shard_group",)


def test_a_count_in_parentheses_after_the_ranks_is_dropped():
    line = "Global batch 100 is not divisible by 32 data-parallel ranks x Gradient accumulation 1 " \
           "(64 devices); pick one divisible by their product: 96 or 128"
    assert unsaid_at("64 devices", line) == line.replace(" (64 devices)", "")


def test_another_count_is_kept():
    """Only the caller's count goes: 'at 640 devices, ' or '(32 devices)' stay."""
    for line in ("at 640 devices, shard group 3 does not divide dp 640",
                 "dp 16 x accumulation 1 (32 devices); pick one"):
        assert unsaid_at("64 devices", line) == line
