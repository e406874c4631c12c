"""Where a link level's numbers came from is its references: predict's, plan's and decide's
"not measured ... numbers from ..." note cut it at 200 characters in the middle of a word
("... DGX-1 4x100 Gb/s EDR IB). N…": the DGX H100 datasheet lost), and calibrate --from-nccl-tests
cut the kept level's source at 160 characters with no mark at all ("(NCCL mainta"). Every
shipped source is now shown whole (``profiles.MAX_ORIGIN_CHARS``: 600, the longest 525); a
longer text and the app's caveats (300, for share links) are cut at a word with '…'
(``errors.cut_at_word``, the app charts' cut moved there)."""

from __future__ import annotations

import pytest

from scalesim import presets
from scalesim.errors import cut_at_word
from scalesim.profiles import MAX_ORIGIN_CHARS, profile_from_presets, unmeasured_origin
from scalesim.schemas import LinkCalibration
from scalesim.sources.calibrate_from import intra_for_inter, with_nccl_tests


def _preset_profile(hardware: str):
    return profile_from_presets(presets.get_hardware(hardware), presets.get_workload("gpt-7b"))


@pytest.mark.parametrize("hardware", list(presets.HARDWARE))
def test_every_shipped_link_source_is_said_whole(hardware):
    profile = _preset_profile(hardware)
    for link in profile.links:
        source = getattr(profile.hardware, link.level).source
        assert unmeasured_origin(link) == f"(a preset profile); numbers from {source}"


def test_the_sources_that_were_cut_end_with_their_reference():
    profile = _preset_profile("dgx-h100")
    origin = unmeasured_origin(next(k for k in profile.links if k.level == "inter_node"))
    assert len(origin) > 200  # cut at 200 before: '... EDR IB). N…'
    assert origin.endswith("NVIDIA DGX H100 datasheet: 8x 400 Gb/s NDR")


def test_a_longer_text_is_cut_at_a_word():
    words = "NVIDIA/nccl#812 quoted in nccl#1576; " * 20  # 740 characters
    link = LinkCalibration(level="inter_node", measured=False, not_measured_because="one server",
                           numbers_from=words)
    origin = unmeasured_origin(link)
    # 16 repeats are 591 characters without the last space; one more word makes 591 + 1 + 15
    # ('NVIDIA/nccl#812') = 607, past 600 less the '…': the cut ends at the 16th 'nccl#1576',
    # its ';' dropped
    assert origin == "(one server); numbers from " + words[:592].rstrip(" ;") + "…"
    assert len(origin) - len("(one server); numbers from ") <= MAX_ORIGIN_CHARS


@pytest.mark.parametrize("text, limit, cut", [
    ("NVIDIA/nccl#812 quoted in nccl#1576", 20, "NVIDIA/nccl#812…"),  # 15 + '…' fits in 20
    ("NVIDIA/nccl#812 quoted in nccl#1576", 23, "NVIDIA/nccl#812 quoted…"),  # 22 + 1
    ("NVIDIA/nccl#812 quoted in nccl#1576", 22, "NVIDIA/nccl#812…"),  # 22 + 1 > 22
    ("busbw 4-6 GB/s at best; NVIDIA", 25, "busbw 4-6 GB/s at best…"),  # ';' dropped
    ("abcdefghij", 5, "abcd…"),  # one word longer than the limit: cut in it
    ("short", 5, "short"),
])
def test_cut_at_word_cuts_at_the_last_word_that_fits(text, limit, cut):
    assert cut_at_word(text, limit) == cut
    assert len(cut_at_word(text, limit)) <= limit


def test_calibrate_from_nccl_tests_keeps_the_kept_levels_source_whole():
    profile = _preset_profile("a2-highgpu-8g")
    _, said, _ = with_nccl_tests(profile, {}, fresh=False)  # no log across servers
    source = profile.hardware.inter_node.source
    assert len(source) == 525  # was cut at 160, no mark
    assert said == ["inter-server link not measured by these logs (one server each); it "
                    f"stays: {source}"]
    v100 = _preset_profile("dgx1-v100")
    _, words = intra_for_inter({}, v100)  # no one-server log: the profile's intra level
    assert words == ("intra alpha the profile's, no one-server log given: "
                     + v100.hardware.intra_node.source)  # 500 characters, was cut at 120


def test_the_apps_caveat_is_cut_at_a_word():
    from scalesim.app.state import MAX_CAVEAT_CHARS, profile_caveats

    caveat = profile_caveats(_preset_profile("a2-highgpu-8g"))[1]
    whole = ("inter-server link not measured (a preset profile); numbers from "
             + presets.get_hardware("a2-highgpu-8g").inter_node.source)
    assert caveat.endswith("…") and len(caveat) <= MAX_CAVEAT_CHARS
    kept = caveat[:-1]
    assert whole.startswith(kept) and whole[len(kept)] == " "  # a whole word before the cut
