"""Context parallelism on the scenario (``ScenarioLayout.cp``, ``--cp`` on predict, decide, goal
and sweep, one row of ``bounds.LAYOUT_KNOBS``): a plan row with cp > 1 re-predicts to the plan's
step, breakdown and memory (``layout_predict.scenario_of_row``), and a context-parallel split
that cannot run is refused in one line naming the values and the rule (docs/model.md §12, §14)."""

from __future__ import annotations

import pytest
from cli_harness import run_cli

from scalesim.errors import ScalesimError
from scalesim.layout_predict import plan_at, scenario_of_row
from scalesim.predict import predict
from scalesim.presets import transformer_workload
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario, ScenarioLayout


def _llama_at(tmp_path, seq_len: int) -> str:
    """A workload file of Llama 3 8B at ``seq_len`` tokens (predict has no --seq-len)."""
    wl = transformer_workload("llama3-8b")
    wl = wl.model_copy(update={"transformer": wl.transformer.model_copy(
        update={"seq_len": seq_len})})
    path = tmp_path / f"llama3-8b-{seq_len}.json"
    path.write_text(wl.model_dump_json())
    return str(path)


@pytest.mark.parametrize(("seq_len", "devices", "global_batch"),
                         [(32768, [8, 16], 16), (131072, [16, 32], 8)])
def test_plan_rows_with_cp_re_predict_to_the_plans_step_breakdown_and_memory(
        tmp_path, seq_len, devices, global_batch):
    """Llama 3 8B on DGX H100 servers at 32k and 128k tokens, cp 1, 2 and 4 searched: every
    ranked row (each cp among them) is what predict says of it as a scenario, to 1e-9: the
    step, each part of it, the memory and the fit; the degrees and the ZeRO shard group (dp x
    cp, or the hybrid group) carried. Before, ScenarioLayout had no cp and a cp > 1 row could
    not be predicted at all."""
    profile = resolve_profile(None, "dgx-h100", _llama_at(tmp_path, seq_len))
    scenario = Scenario(devices=devices, global_batch=global_batch)
    ranked = plan_at(profile, scenario, devices, global_batch, top=None, cp_values=(1, 2, 4),
                     include_unfit=True)
    rows = [r for cp in (1, 2, 4) for r in [r for r in ranked if r.cp == cp][:12]]
    assert [r.cp for r in rows] == [1] * 12 + [2] * 12 + [4] * 12
    assert ranked[0].cp > 1 and ranked[0].fits  # the best splits the sequence
    for row in rows:
        run = scenario_of_row(scenario.model_copy(update={"devices": [row.devices]}), row)
        assert run.layout.cp == row.cp
        p = predict(profile, run)[0]
        parts = row.breakdown_s
        assert (p.dp, p.tp, p.pp, p.cp) == (row.dp, row.tp, row.pp, row.cp)
        assert p.dp * p.tp * p.pp * p.cp == p.devices
        assert p.step_time_s == pytest.approx(row.step_time_s, rel=1e-9)
        assert p.compute_s == pytest.approx(parts["compute_s"], rel=1e-9)
        assert p.tp_comm_s == pytest.approx(parts["tp_comm_s"], rel=1e-9, abs=1e-15)
        assert p.cp_comm_s == pytest.approx(parts["cp_comm_s"], rel=1e-9, abs=1e-15)
        assert p.pipeline_comm_s == pytest.approx(parts["p2p_s"], rel=1e-9, abs=1e-15)
        assert p.bubble_s == pytest.approx(parts["bubble_s"], rel=1e-9, abs=1e-15)
        assert p.straggler_s == pytest.approx(parts["straggler_s"], rel=1e-9, abs=1e-15)
        assert p.memory_bytes == pytest.approx(row.memory_bytes, rel=1e-9)
        assert p.fits == row.fits
        if row.zero:
            assert p.shard_group == row.shard_group  # dp x cp, or the hybrid group


def test_the_ring_attention_sends_by_hand(tmp_path):
    """Llama 3 8B at 32,768 tokens on 8 H100s of one server, cp 2 (dp 4), 2 micro-batches of
    one sequence. One hop carries K and V of half a sequence: 2 x 16,384 tokens x (8 kv heads x
    128) x 2 B = 67,108,864 B over NVLink at 370 GB/s and 2 us, 3 (c - 1) = 3 hops a layer; the
    attention core of the chunk hides them but for the contention share c = 0.158957: 2 x 32
    layers x c x 3 x (2e-6 + 67,108,864 / 370e9) = 5.597 ms of context-parallel sends. At cp 1
    there are none, and the 8 devices are 8 replicas, not 4."""
    profile = resolve_profile(None, "dgx-h100", _llama_at(tmp_path, 32768))
    c = profile.hardware.comm_compute_contention
    assert c == pytest.approx(0.158957, abs=1e-6)
    cp2 = predict(profile, Scenario(devices=[8], global_batch=8, accumulation=2,
                                    strategy="zero1", layout={"cp": 2}))[0]
    assert (cp2.dp, cp2.cp, cp2.micro_batch, cp2.shard_group) == (4, 2, 1, 8)
    assert cp2.cp_comm_s == pytest.approx(2 * 32 * c * 3 * (2e-6 + 67_108_864 / 370e9),
                                          rel=1e-9)
    assert cp2.cp_comm_s == pytest.approx(5.5966e-3, rel=1e-4)
    assert cp2.tp_comm_s == 0.0  # tp 1: the sends are context parallelism's, said as such
    cp1 = predict(profile, Scenario(devices=[8], global_batch=16, accumulation=2,
                                    strategy="zero1"))[0]
    assert (cp1.dp, cp1.cp, cp1.cp_comm_s) == (8, 1, 0.0)


def test_predict_cli_takes_cp_and_says_it(tmp_path, capsys):
    """--cp 4 on 16 devices: dp 4, the layout line and the table name the fourth degree."""
    code, out, err = run_cli(capsys, ["predict", "--workload", _llama_at(tmp_path, 32768),
                                      "--hardware", "dgx-h100", "--devices", "16",
                                      "--global-batch", "16", "--accumulation", "4",
                                      "--strategy", "zero1", "--cp", "4"])
    assert code == 0, err
    assert "layout: tp 1 x pp 1 x cp 4," in out
    assert "dp = devices / (tp x pp x cp)" in out
    assert "dp x tp x pp x cp" in out and " 4x1x1x4 " in out


@pytest.mark.parametrize(("flags", "message"), [
    (["--devices", "16", "--cp", "3"],
     # multiples of 3 that run on servers of 8: 6 (part of one), 24 (whole servers); 15 and 18
     # were offered before session 48 and fill no whole servers
     "devices 16 are not divisible by tp x pp x cp = 3; give device counts that are multiples "
     "of it (6 or 24), or a tp x pp x cp that divides 16"),
    (["--devices", "40", "--cp", "5"],
     "layout at 40 devices: sequence length 32768 is not divisible by 2 x --cp 5 (load-balanced context "
     "parallelism); use --cp 4, or --seq-len 32760 or 32770"),
    (["--devices", "16", "--cp", "2", "--strategy", "zero1", "--shard-group", "3"],
     "at 16 devices, shard group 3 does not divide dp x cp 16; give a divisor of it (e.g. 16: "
     "full sharding)"),
])
def test_a_cp_that_cannot_run_is_refused_in_one_line(tmp_path, capsys, flags, message):
    code, out, err = run_cli(capsys, ["predict", "--workload", _llama_at(tmp_path, 32768),
                                      "--hardware", "dgx-h100", "--global-batch", "16", *flags])
    assert code != 0 and out == ""
    assert err.strip() == f"scalesim predict: error: {message}"


def test_cp_of_a_parameter_count_is_refused_in_one_line(capsys):
    code, out, err = run_cli(capsys, ["predict", "--workload", "bert-large", "--devices", "16",
                                      "--cp", "2"])
    assert code != 0 and out == ""
    assert err.count("\n") == 1
    assert err.startswith("scalesim predict: error: layout tp 1 x pp 1 x cp 2: workload "
                          "'bert-large' is a parameter count only and cannot be split")


def test_a_scenario_file_with_cp_zero_is_refused():
    with pytest.raises(ValueError, match="cp"):
        Scenario(devices=[8], layout={"cp": 0})
    with pytest.raises(ScalesimError, match="tp x pp x cp = 4"):
        predict(resolve_profile(None, "dgx-h100", "llama3-8b"),
                Scenario(devices=[2], layout={"cp": 4}))


def test_sweep_takes_cp_as_an_axis_and_its_rows_are_predicts(tmp_path):
    """--cp-values 1,2,4 (``sweep`` axis ``cp``) on 8 and 16 GPUs, global batch 32, 4
    micro-steps, zero1: every row kept is predict's row of that scenario with ``layout.cp``
    (step, compute, exposed communication, memory, fit; dp = devices / cp); cp 1 at 16 GPUs
    does not split 32 sequences over 16 replicas x 4 micro-steps and is dropped, as predict
    refuses it. Before: 'unrecognized arguments: --cp-values' / 'axes: cannot sweep'."""
    from scalesim.sweep import sweep

    profile = resolve_profile(None, "dgx-h100", _llama_at(tmp_path, 32768))
    base = Scenario(devices=[8, 16], global_batch=32, accumulation=4, strategy="zero1")
    res = sweep(profile, base, {"cp": [1, 2, 4]})
    c = res.columns
    kept = sorted(zip(c["devices"].tolist(), c["cp"].tolist(), strict=True))
    assert kept == [(8, 1), (8, 2), (8, 4), (16, 2), (16, 4)] and res.dropped == 1
    for i, (n, cp) in enumerate(zip(c["devices"], c["cp"], strict=True)):
        p = predict(profile, base.model_copy(update={"devices": [int(n)],
                                                     "layout": ScenarioLayout(cp=int(cp))}))[0]
        assert c["dp"][i] == p.dp == n // cp
        for name in ("step_time_s", "compute_s", "exposed_comm_s", "memory_bytes"):
            assert c[name][i] == pytest.approx(getattr(p, name), rel=1e-12), (n, cp, name)
        assert bool(c["fits"][i]) == p.fits


def test_sweep_refuses_cp_of_a_parameter_count_in_one_line(capsys):
    code, out, err = run_cli(capsys, ["sweep", "--workload", "bert-large", "--devices", "8,16",
                                      "--cp-values", "1,2"])
    assert code != 0 and out == "" and err.count("\n") == 1
    assert err.startswith("scalesim sweep: error: --cp-values splits the model: "
                          "workload 'bert-large' is a parameter count only")


# ------------------------------------------------------------------ the app's link (v15)

def test_the_apps_cp_travels_in_a_v15_link_and_older_links_open_with_cp_1():
    """The Layout expander's cp (``AppState.cp``) is the scenario's ``layout.cp``, written in a
    share link as ``cp`` in format v15 (only where it is above 1), and read back as it was; a
    link of v3 to v14 carrying ``cp`` (none wrote one) opens with cp 1 and a message."""
    from scalesim.app.plan import build_scenario
    from scalesim.app.state import decode_query, encode_query, link_version, preset_profile

    base, _, _ = decode_query({"v": "3", "wl": "llama3-8b", "hw": "dgx-h100", "tp": "2"})
    assert (base.cp, link_version(base)) == (1, 3)
    ring = base.model_copy(update={"cp": 2, "dmax": 16})
    params = encode_query(ring, preset_profile(ring))
    assert (params["v"], params["cp"], link_version(ring)) == ("15", "2", 15)
    state, profile, messages = decode_query(params)
    assert state.cp == 2 and not messages
    scenario, _ = build_scenario(state, profile)
    assert (scenario.layout.tp, scenario.layout.cp) == (2, 2)
    assert min(scenario.devices) == 4  # counts below tp x cp = 4 left out
    rows = predict(profile, scenario.model_copy(update={"devices": [16]}))
    assert (rows[0].dp, rows[0].tp, rows[0].cp) == (4, 2, 2)
    # a v14 link as that scalesim wrote it: no checksum (``ck``, session 41), so its note too
    from scalesim.app.state import CHECK_KEY, NO_CHECKSUM

    forged = {k: v for k, v in params.items() if k != CHECK_KEY} | {"v": "14"}
    old, _, messages = decode_query(forged)
    assert old.cp == 1
    assert messages == ["ignored cp: a v14 link has no context parallelism (cp 1)", NO_CHECKSUM]
