"""Preset names as a user types them (session 42): a name that differs only in case is the
preset it names, in every preset kind; an unknown name is refused in one line that suggests
the nearest names (``presets.preset_name``)."""

from __future__ import annotations

import pytest
from cli_harness import run_cli

from scalesim import presets
from scalesim.errors import ScalesimError


@pytest.mark.parametrize("argv, shown", [
    (["--workload", "llama3-70B"], "profile: a2-highgpu-8g + llama3-70b (presets)"),
    (["--hardware", "DGX-H100"], "hardware: dgx-h100 (H100-SXM5"),
])
def test_a_preset_name_in_other_case_is_that_preset(capsys, argv, shown):
    code, out, err = run_cli(capsys, ["predict", *argv, "--devices", "8"])
    assert code == 0, err
    assert shown in out


@pytest.mark.parametrize("argv, said", [
    (["--workload", "lama3-70b"], "unknown workload preset 'lama3-70b' (did you mean llama3-70b"),
    (["--hardware", "dgx-h10"], "unknown hardware preset 'dgx-h10' (did you mean dgx-h100"),
])
def test_a_misspelt_preset_is_refused_with_the_nearest_names(capsys, argv, said):
    code, out, err = run_cli(capsys, ["predict", *argv, "--devices", "8"])
    assert code == 2 and out == ""
    assert said in err and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_a_name_near_none_suggests_nothing_but_lists_all():
    with pytest.raises(ScalesimError) as e:
        presets.get_hardware("zzz")
    assert "did you mean" not in str(e.value)
    assert all(name in str(e.value) for name in presets.HARDWARE)


def test_every_preset_kind_reads_names_alike():
    assert presets.get_transformer("LLAMA3-8B") == presets.TRANSFORMERS["llama3-8b"][0]
    kind = next(iter(presets.INTRA_LINKS))
    assert presets.intra_link(kind.upper()) == presets.intra_link(kind)
    assert (presets.inter_link("RoCE", 8, 400).busbw_GBps
            == presets.inter_link("roce", 8, 400).busbw_GBps)
    with pytest.raises(ScalesimError, match=r"unknown inter-node link 'infiniban' \(did you mean "
                                            r"infiniband\?\)"):
        presets.inter_link("infiniban", 8, 400)


def test_names_equal_but_for_case_are_suggested_not_guessed():
    with pytest.raises(ScalesimError, match=r"unknown thing 'ab' \(did you mean Ab or aB\?\)"):
        presets.preset_name("ab", ["Ab", "aB"], "thing")
