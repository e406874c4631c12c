"""Fewer GPUs of a DGX-1 (hybrid cube-mesh) get fewer NVLinks, in predict, sweep, plan and
validate alike: the link level's ``subset_busbw_shares`` (set by ``presets.subset_shares``)
read through ``subset_links.subset_busbw_GBps`` (docs/model.md §18). Hand values: the DGX-1V's
120 GB/s ring busbw (0.8 x 6 NVLinks x 25 GB/s) is 20 GB/s over 2 GPUs (one NVLink) and 80 over a
quad (4 of 6); NVSwitch servers keep theirs at every count."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from scalesim.model.step import intra_busbw_of
from scalesim.model.subset_links import subset_busbw_GBps
from scalesim.plan import plan
from scalesim.predict import predict, scenario_inputs
from scalesim.presets import get_hardware, get_workload, intra_link, transformer_workload
from scalesim.profiles import profile_from_presets
from scalesim.schemas import Hardware, LinkLevel, Scenario, ScenarioLayout


def _flat(hardware: str, busbw_GBps: float) -> Hardware:
    """``hardware`` with an intra level of ``busbw_GBps`` at every GPU count (no shares)."""
    hw = get_hardware(hardware)
    return hw.model_copy(update={"intra_node": hw.intra_node.model_copy(
        update={"busbw_GBps": busbw_GBps, "subset_busbw_shares": []})})


def _fp32_bert_large_of_250k():
    """bert-large cut to 250k fp32 parameters reduced at the framework's default: DDP
    all-reduces fp32 gradients since session 45, 4 B x 250k = 1e6 B. The preset states its
    reference run's fp16 all-reduce (reduce_bytes_per_param 2), which an fp32 model does not
    have, so the stated reduction is taken out (it had made the exchange 5e5 B)."""
    return get_workload("bert-large").model_copy(update={
        "params": 250e3, "wire_bytes_per_param": 4.0, "reduce_bytes_per_param": None})


def test_the_link_level_carries_the_rule():
    v100, p100 = intra_link("nvlink2"), intra_link("nvlink1")
    assert v100.subset_shares == ((2, 1 / 6), (4, 4 / 6), (8, 1.0))
    assert p100.subset_shares == ((2, 1 / 4), (4, 2 / 4), (8, 1.0))
    assert get_hardware("dgx1-v100").intra_node.subset_shares == v100.subset_shares
    for name in ("dgx-a100", "dgx-h100", "a2-highgpu-8g"):  # NVSwitch: no shares
        assert get_hardware(name).intra_node.subset_busbw_shares == []
    assert intra_link("pcie4").subset_busbw_shares == []
    # 3 GPUs hold at least the links of 2, 5-7 those of a quad; 1 and 16 keep the figure
    assert list(subset_busbw_GBps(120.0, [1, 2, 3, 4, 5, 7, 8, 16], v100.subset_shares)) == \
        pytest.approx([120.0, 20.0, 20.0, 80.0, 80.0, 80.0, 120.0, 120.0])


def test_predict_dgx1_v100_at_2_4_8_gpus_by_hand():
    """250k fp32 parameters = 1e6 bytes, one bucket (under the 1 MiB first bucket), overlap off
    so the whole all-reduce is exposed; NCCL's ring (faster than the tree at these sizes):
    2 GPUs 2*1*2 us + 1e6 B / 20 GB/s = 54 us (tree 4 + 100); 4 GPUs 2*3*2 us + 1.5 * 1e6 / 80
    GB/s = 30.75 us (tree 12 + 25); 8 GPUs 2*7*2 us + 1.75 * 1e6 / 120 GB/s = 42.583 us (tree
    28 + 16.667). Before, 2 GPUs had the server's 120 GB/s: 12.33 us."""
    wl = _fp32_bert_large_of_250k()
    profile = profile_from_presets(get_hardware("dgx1-v100"), wl)
    scenario = Scenario(devices=[2, 4, 8], overlap=False)
    inputs, _ = scenario_inputs(profile, scenario)
    assert list(intra_busbw_of(inputs, inputs.devices_per_node)) == pytest.approx(
        [20.0, 80.0, 120.0])
    rows = predict(profile, scenario)
    assert [r.exposed_comm_s for r in rows] == pytest.approx([54e-6, 30.75e-6, 42.5833e-6],
                                                             rel=1e-4)
    # an --intra-busbw override is a whole server's figure, scaled alike: 60 -> 10 over 2
    half = predict(profile, scenario.model_copy(update={"intra_busbw_GBps": 60.0}))[0]
    assert half.exposed_comm_s == pytest.approx(4e-6 + 1e6 / 10e9, rel=1e-9)


def test_nvswitch_server_unchanged():
    """dgx-a100 (NVSwitch, 230 GB/s measured ring busbw) gives every count its busbw: the
    prediction is the one of a level without shares, exactly."""
    profile = profile_from_presets(get_hardware("dgx-a100"), get_workload("bert-large"))
    scenario = Scenario(devices=[2, 4, 8])
    inputs, _ = scenario_inputs(profile, scenario)
    assert list(intra_busbw_of(inputs, inputs.devices_per_node)) == [230.0, 230.0, 230.0]
    flat = profile_from_presets(_flat("dgx-a100", 230.0), get_workload("bert-large"))
    assert [r.step_time_s for r in predict(profile, scenario)] == \
        [r.step_time_s for r in predict(flat, scenario)]


def _split(tp: int, pp: int = 1) -> Scenario:
    return Scenario(devices=[tp * pp], micro_batch=1, layout=ScenarioLayout(tp=tp, pp=pp))


@pytest.mark.parametrize(("tp", "pp", "busbw"), [(2, 1, 20.0), (4, 1, 80.0), (8, 1, 120.0),
                                                 (1, 2, 20.0)])
def test_tp_groups_and_pair_sends_on_dgx1_v100(tp, pp, busbw):
    """tp 2 on a DGX-1V all-reduces over one NVLink, tp 4 over a quad's 4 of 6, tp 8 over all;
    a pipeline send between two GPUs has a pair's link: each is the prediction of a server with
    that busbw at every count."""
    wl = transformer_workload("gpt-1.7b")
    mesh = predict(profile_from_presets(get_hardware("dgx1-v100"), wl), _split(tp, pp))[0]
    flat = predict(profile_from_presets(_flat("dgx1-v100", busbw), wl), _split(tp, pp))[0]
    assert mesh.step_time_s == pytest.approx(flat.step_time_s, rel=1e-12)
    if busbw < 120.0:  # and slower than the whole server's figure
        whole = predict(profile_from_presets(_flat("dgx1-v100", 120.0), wl), _split(tp, pp))[0]
        assert mesh.exposed_comm_s > whole.exposed_comm_s


def test_dp_groups_of_a_split_model_and_the_planner():
    """tp 4 x dp 2 on one DGX-1V: the tp groups have a quad's 80 GB/s and each dp group two GPUs
    (4 apart) of a server, 20 GB/s; the planner ranks that layout at predict's step."""
    wl = transformer_workload("gpt-1.7b")
    hw = get_hardware("dgx1-v100")
    profile = profile_from_presets(hw, wl)
    scenario = Scenario(devices=[8], micro_batch=1, layout=ScenarioLayout(tp=4),
                        strategy="zero3")
    mesh = predict(profile, scenario)[0]
    quad = predict(profile_from_presets(_flat("dgx1-v100", 80.0), wl), scenario)[0]
    assert mesh.tp_comm_s == pytest.approx(quad.tp_comm_s, rel=1e-12)  # the tp part: 80
    assert mesh.exposed_comm_s > quad.exposed_comm_s  # the dp pairs: 20, slower than 80
    rows = plan(wl.transformer, hw, [8], global_batch=8, top=None, include_unfit=True)
    flat_rows = plan(wl.transformer, _flat("dgx1-v100", 120.0), [8], global_batch=8, top=None,
                     include_unfit=True)

    def step(rs, tp):
        return next(r.step_time_s for r in rs if (r.tp, r.pp, r.dp, r.zero, r.micro_batch,
                                                  r.recompute) == (tp, 1, 8 // tp, 0, 1, "none"))

    assert step(rows, 2) > step(flat_rows, 2)  # tp 2 on one NVLink, not the server's 120
    assert step(rows, 8) == pytest.approx(step(flat_rows, 8), rel=1e-12)  # tp 8: all of them


def test_sweep_axis_is_a_whole_server_figure():
    from scalesim.sweep import sweep

    profile = profile_from_presets(get_hardware("dgx1-v100"), get_workload("bert-large"))
    scenario = Scenario(devices=[2, 4])
    res = sweep(profile, scenario, {"intra_busbw_GBps": [120.0]})
    steps = dict(zip(res.columns["devices"], res.columns["step_time_s"], strict=True))
    for row in predict(profile, scenario):
        assert steps[row.devices] == pytest.approx(row.step_time_s, rel=1e-12)


def test_files_written_before_load_and_bad_shares_are_refused():
    old = json.loads(intra_link("nvlink2").model_dump_json(exclude={"subset_busbw_shares"}))
    assert LinkLevel.model_validate(old).subset_busbw_shares == []  # as before: no shares
    hw = json.loads(get_hardware("dgx1-v100").model_dump_json())
    del hw["intra_node"]["subset_busbw_shares"], hw["inter_node"]["subset_busbw_shares"]
    assert Hardware.model_validate(hw).intra_node.subset_busbw_shares == []
    new = LinkLevel.model_validate({**old, "subset_busbw_shares": [
        {"gpus": 4, "share": 0.5}, {"gpus": 2, "share": 0.25}]})
    assert new.subset_shares == ((2, 0.25), (4, 0.5))  # kept sorted by count
    for bad in ([{"gpus": 2, "share": 0.0}], [{"gpus": 2, "share": 1.5}],
                [{"gpus": 2, "share": 0.5}, {"gpus": 2, "share": 0.4}],
                [{"gpus": True, "share": 0.5}]):
        with pytest.raises(ValidationError):
            LinkLevel.model_validate({**old, "subset_busbw_shares": bad})


def test_the_app_reads_the_same_rule():
    """The planner page on a DGX-1V profile, and an NVSwitch profile with the 'nvlink2' intra
    link chosen in the sidebar: both predict 2 GPUs over one NVLink, as predict does."""
    from scalesim.app.plan import make_plan
    from scalesim.app.state import default_state, preset_profile

    state = default_state().model_copy(update={"hw": "dgx1-v100"})
    profile = preset_profile(state)
    app = make_plan(profile, state)
    assert [r.step_time_s for r in app.rows] == [r.step_time_s for r in
                                                 predict(profile, app.scenario)]
    chosen = default_state().model_copy(update={"hw": "dgx-a100", "intra": "nvlink2"})
    a100 = preset_profile(chosen)
    app = make_plan(a100, chosen)
    two = next(r for r in app.rows if r.devices == 2)
    hw = a100.hardware.model_copy(update={"intra_node": intra_link("nvlink2")})
    mesh = predict(a100.model_copy(update={"hardware": hw}), app.scenario)
    assert two.step_time_s == next(r.step_time_s for r in mesh if r.devices == 2)
    flat = a100.model_copy(update={"hardware": _flat("dgx-a100", 120.0)})
    assert two.exposed_comm_s > next(r.exposed_comm_s for r in predict(flat, app.scenario)
                                     if r.devices == 2)


def test_the_header_says_what_fewer_gpus_get(capsys):
    from scalesim.cli.main import main

    assert main(["predict", "--hardware", "dgx1-v100", "--devices", "2"]) == 0
    assert "intra 120 GB/s (2 GPUs 20, 4 GPUs 80), inter 48 GB/s" in capsys.readouterr().out
    assert main(["predict", "--hardware", "dgx-a100", "--devices", "2"]) == 0
    assert "intra 230 GB/s, inter" in capsys.readouterr().out


@pytest.mark.parametrize(("devices", "words"), [
    (2, "20 -> 40 GB/s busbw for the job's 2 of 8 GPUs per server (whole server 120 -> 240)"),
    (4, "80 -> 160 GB/s busbw for the job's 4 of 8 GPUs per server (whole server 120 -> 240)"),
    (8, "120 -> 240 GB/s busbw"),
])
def test_the_intra_link_remedy_says_what_the_jobs_ring_reaches(devices, words):
    """Session 41: the faster intra-server link remedy doubles the whole server's 120 GB/s; a
    ring over 2 GPUs of the DGX-1V holds one NVLink of 6 (1/6: 20 -> 40), over 4 a quad's 4 of
    6 (80 -> 160). Before, its title said '(120 -> 240 GB/s busbw)' at every count. The 4 GPUs'
    all-reduce of 1e6 B (250k fp32 parameters, overlap off) after the remedy: 2 x 3 x 2 us +
    1.5 x 1e6 B / 160 GB/s = 21.375 us (30.75 us today, test_predict_dgx1_v100_at_2_4_8_gpus)."""
    from scalesim.remedies import rank_remedies

    wl = _fp32_bert_large_of_250k()
    profile = profile_from_presets(get_hardware("dgx1-v100"), wl)
    _, ranked = rank_remedies(profile, Scenario(devices=[devices], overlap=False), devices)
    row = next(r for r in ranked if r.key == "interconnect")
    assert row.title == f"Faster intra-server links ({words})"
    if devices == 4:
        assert row.prediction.exposed_comm_s == pytest.approx(21.375e-6, rel=1e-4)
