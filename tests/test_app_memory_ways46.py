"""Session 46 (issue 11, app): the ways out where nothing fits in memory, walked as an ML
engineer uses them (docs/reliability.md, "Session 46").

The Layouts tab's "add devices, or use devices with more memory" named only the Largest device
count: for llama3-405b on 64 H100s the layout needing least memory needs 102.9 GiB a device,
which another preset's devices hold (dgx-h200's 141 GiB). The hardware presets whose devices
hold that layout, evaluated there (``layout.presets_holding_layout``), are named in the line
(plan's error, the CLI's alike) and the Hardware preset among the controls to change."""

from __future__ import annotations

from app_harness import open_app, preset_query, run_clean
from scalesim.app.layout_titles import SEARCHED_LAYOUTS

from scalesim import presets
from scalesim.figures import gib
from scalesim.layout import presets_holding_layout
from scalesim.plan import Setting, plan

BIG = {"hw": "dgx-h100", "wl": "llama3-405b", "dmax": 64, "tab": "layouts"}



def _no_layout_box(at) -> str:
    (box,) = [i.value for i in at.info if i.value.startswith("No layout to rank:")]
    return box


def _least_memory_405b_on_64(hardware: str = "dgx-h100"):
    """plan's row needing least memory for llama3-405b on 64 devices of ``hardware`` at the
    page's default global batch (64: 1 x 8 per server x 8)."""
    rows = plan(presets.get_transformer("llama3-405b"), presets.HARDWARE[hardware], [64], 64,
                top=None, include_unfit=True)
    return min(rows, key=lambda r: r.memory_bytes)


def test_the_layouts_tab_names_the_hardware_preset_whose_devices_hold_the_least_layout():
    at = open_app(preset_query(**BIG))
    box = _no_layout_box(at)
    least = _least_memory_405b_on_64()
    assert not least.fits and f"needs {gib(least.memory_bytes)} per device, of 80.0 GiB" in box
    assert box.endswith("Controls to change: Largest device count, Hardware preset."), box
    # the presets named are those whose devices hold it, each checked by plan on that preset
    # (the layout's own row there fits), and the H100's 80 GiB is none of them
    named = [name for name in presets.HARDWARE if f"of the preset {name}" in box]
    assert "dgx-h200" in named and "dgx-h100" not in named and "dgx-a100" not in named
    for name in named:
        same = [r for r in plan(presets.get_transformer("llama3-405b"), presets.HARDWARE[name],
                                [64], 64, top=None, include_unfit=True)
                if r.layout(64) == least.layout(64)]
        assert len(same) == 1 and same[0].fits, name
    # that way out runs: the Hardware preset picked, the tab ranks layouts at 64
    at.sidebar.selectbox(key="k_hw").set_value("dgx-h200")
    run_clean(at)
    assert [i for i in at.info if i.value.startswith("No layout to rank:")] == []
    assert any(m.value.startswith(f"**Best of {SEARCHED_LAYOUTS}") for m in at.markdown)


def _setting() -> Setting:
    """plan's setting of llama3-405b on dgx-h100 at global batch 64."""
    return Setting(presets.get_transformer("llama3-405b"), presets.HARDWARE["dgx-h100"], 64)


def test_a_preset_is_named_by_evaluating_the_layout_on_it_not_by_its_name(monkeypatch):
    """dgx-h200 given the H100's 80 GiB (the table patched): it no longer holds the layout,
    so the line and the controls leave it out; none left: the count alone."""
    least = _least_memory_405b_on_64().layout(64)
    assert "dgx-h200" in dict(presets_holding_layout(_setting(), least))
    h100 = presets.HARDWARE["dgx-h100"].device_memory_bytes
    monkeypatch.setattr(presets, "HARDWARE", {
        n: hw.model_copy(update={"device_memory_bytes": h100}) if n == "dgx-h200" else hw
        for n, hw in presets.HARDWARE.items() if n != "gb200-nvl72"})
    assert presets_holding_layout(_setting(), least) == []
    box = _no_layout_box(open_app(preset_query(**BIG)))
    assert "the preset" not in box and "with more memory." in box, box
    assert box.endswith("Control to change: Largest device count."), box


def test_no_preset_where_none_holds_the_least_layout():
    """llama3-405b on 8 H100s needs 762.9 GiB a device at least: no preset holds it."""
    at = open_app(preset_query(**{**BIG, "dmax": 8}))
    box = _no_layout_box(at)
    assert "the preset" not in box, box
    assert box.endswith("Control to change: Largest device count."), box
