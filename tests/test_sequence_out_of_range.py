"""A sequence length the model cannot predict at (session 42's app walk): the bounds take up to
2**30 tokens, but above some ten million tokens one sequence's compute passes the 1e6 s a
compute time may be (llama3-8b on an A100 at 10,546,223 tokens). Before, `decide`, `predict`,
`sweep` and the app said only the derived field ("compute of workload 'llama3-8b' ...: field
'per_sample_s': 10,342,201,859 given; allowed ..."), not that the sequence is the cause nor
what to do, and the app's page below the error box fell back to the profile's defaults,
dropping every other value of the link (its 64 devices, price, training length)."""

from __future__ import annotations

import pytest
from app_harness import open_app
from cli_harness import run_cli
from h200_gpt import H200

from scalesim.errors import ScalesimError
from scalesim.profiles import load_profile, profile_at_sequence, resolve_profile

TOO_LONG = 2**30  # the bound's largest sequence: 10,342,201,859 s of compute a sequence


@pytest.mark.parametrize(("argv", "typed"), [
    (["decide", "--workload", "llama3-8b", "--seq-len", str(TOO_LONG)], "--seq-len"),
    (["predict", "--workload", "llama3-8b", "--seq-len", str(TOO_LONG)], "--seq-len"),
    # the sweep names the flag its user typed (session 47: it said --seq-len)
    (["sweep", "--workload", "llama3-8b", "--devices", "16", "--seq-len-values",
      f"4096,{TOO_LONG}"], "--seq-len-values"),
])
def test_the_cli_names_the_sequence_and_the_fix(capsys, argv, typed):
    code, out, err = run_cli(capsys, argv)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"{typed} {TOO_LONG:,}: the model cannot be predicted at that sequence" in err
    assert "field 'per_sample_s'" in err  # what broke, kept
    assert err.rstrip().endswith("give a sequence length nearer its own, 8,192 tokens")


def test_the_limit_is_where_the_compute_time_passes_its_bound_and_not_before():
    """The largest sequence that predicts is unchanged (the wording only): 10,546,222 tokens."""
    assert resolve_profile(None, "a2-highgpu-8g", "llama3-8b", 10_546_222).workload \
        .transformer.seq_len == 10_546_222
    with pytest.raises(ScalesimError, match=r"^--seq-len 10,546,223: .*nearer its own, 8,192"):
        resolve_profile(None, "a2-highgpu-8g", "llama3-8b", 10_546_223)


def test_an_uploaded_profiles_own_model_names_the_sequence_too():
    profile = load_profile(str(H200))
    with pytest.raises(ScalesimError, match=r"^--seq-len 1,073,741,824: .*per_sample_s.*"
                                            r"nearer its own, 1,024 tokens$"):
        profile_at_sequence(profile, TOO_LONG)


def test_a_link_whose_sequence_cannot_be_predicted_keeps_its_other_values():
    """One error box with the cause and the fix; below it the link's what-if at the model's
    own sequence: its 64 devices, price and training length kept (before: the profile's
    defaults, 16 devices and no time to train)."""
    at = open_app({"v": "16", "wl": "llama3-8b", "seq": str(TOO_LONG), "dmax": "64",
                   "price": "3", "train": "1000000000"})
    errors = [e.value for e in at.error if e.value.startswith("Cannot predict")]
    assert len(errors) == 1
    # the app names the knob as its control, the CLI as its flag (session 47: '--seq-len')
    assert "Sequence length 1,073,741,824: the model cannot be predicted" in errors[0]
    assert "--seq-len" not in errors[0]
    # the lengths that predict, not the schema field (session 48; the CLI keeps the field)
    assert "give at most 10,500,000 tokens (the model's own: 8,192)" \
        in errors[0]
    assert "per\\_sample\\_s" not in errors[0] and "field '" not in errors[0]
    assert "Below: this what-if with Sequence length at its default until" in errors[0]
    assert at.metric[0].label == "Scaling efficiency at 64 devices"
    assert at.metric[3].label == "Time to train / cost"
    assert at.query_params["seq"] in (str(TOO_LONG), [str(TOO_LONG)])  # what was asked stays
