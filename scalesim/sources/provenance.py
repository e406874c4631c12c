"""Where each number of a profile came from, in words (the CLI's and the app's "sources")."""

from __future__ import annotations

from scalesim.device_nouns import hardware_nouns
from scalesim.errors import within
from scalesim.predict import STALL_NOT_MODELLED, input_pipeline_modelled
from scalesim.schemas import Profile


def provenance(profile: Profile) -> list[tuple[str, str]]:
    """(part, where its numbers came from) for every part the model predicts from; a line that
    names a knob keeps its template (``errors.within``: the CLI's flag, the app's label)."""
    hw, wl, c = profile.hardware, profile.workload, profile.compute
    measured = "measured" if c.measured else "estimated"
    words = hardware_nouns(hw)
    rows = [
        ("compute", f"{measured}: {c.source or 'no source recorded'}"),
        (words.link("intra_node"), hw.intra_node.source or "no source recorded"),
        (words.link("inter_node"), hw.inter_node.source or "no source recorded"),
        ("workload", wl.source or "no source recorded"),
        ("input pipeline", (profile.input_pipeline.source or "measured")
         if input_pipeline_modelled(profile)
         else within(STALL_NOT_MODELLED, f"not measured: {STALL_NOT_MODELLED}")),
        ("step-time jitter", "measured (calibration or traces)" if profile.jitter is not None
         else "not measured: the default spread"),
        ("topology", f"{hw.topology.intra_kind} ({hw.topology.source})"
         if hw.topology is not None else "not recorded"),
    ]
    return rows
