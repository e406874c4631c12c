"""FSDP under no_sync (``Scenario.grad_sync`` 'once-per-step', docs/model.md §4, §6): traffic,
memory and stragglers by hand, the faster and the unfitting case, and the refusals."""

import numpy as np
import pytest
from cli_harness import run_cli
from step_fixtures import one_server

from scalesim.errors import ScalesimError
from scalesim.model.memory import DDP, ZERO1, ZERO2, ZERO3
from scalesim.model.sharding import DEEPSPEED, EVERY_MICRO_STEP, FSDP, ONCE_PER_STEP
from scalesim.model.step import StepInputs, evaluate
from scalesim.model.zero_exchange import sent_units
from scalesim.predict import predict
from scalesim.profiles import default_profile
from scalesim.schemas import Scenario

# 8 GPUs of one server (alpha 1 us, B = 100 GB/s), Psi = 1e9 parameters of 2 bytes (S = 2e9 B) in
# 10 FSDP blocks (a unit of 2e8 B), a 1 s micro-step, nothing else in the step.
_ONE_SERVER = one_server(1e9, blocks=10, framework=FSDP)
# one ring all-gather or reduce-scatter of a block: 7 x 1 us + 7/8 x 2e8 B / 100 GB/s = 1.757 ms
UNIT_S = 7e-6 + 7 / 8 * 2e8 / 100e9
SENT_UNIT_BYTES = 7 / 8 * 2e9  # (n - 1) / n x S


def _step(strategy, sync, k, **changes):
    return evaluate(StepInputs(strategy=strategy, grad_sync=sync,
                               **{**_ONE_SERVER, "accumulation": k, **changes}))


def test_traffic_units_by_hand():
    # per step, k = 4: ZeRO-3 gathers in every forward and backward (2k = 8 passes) and
    # reduce-scatters once under no_sync (9 passes of 10 blocks), 3k = 12 passes otherwise;
    # ZeRO-2 under no_sync keeps its gathered parameters: one gather and one reduce-scatter
    # (2 passes), 2k = 8 otherwise
    for strategy, sync, passes in ((ZERO3, ONCE_PER_STEP, 9), (ZERO3, EVERY_MICRO_STEP, 12),
                                   (ZERO2, ONCE_PER_STEP, 2), (ZERO2, EVERY_MICRO_STEP, 8)):
        r = _step(strategy, sync, 4, overlap=False)
        assert float(r.comm_total_s) == pytest.approx(passes * 10 * UNIT_S, rel=1e-12)
        assert float(r.exposed_comm_s) == pytest.approx(passes * 10 * UNIT_S, rel=1e-12)
        assert float(r.comm_bytes) == pytest.approx(passes * SENT_UNIT_BYTES, rel=1e-12)
    # the units formula: 2k + 1 and 2 under no_sync; DeepSpeed ignores it (2k + 1, 3k)
    k = np.array([1, 4, 16])
    np.testing.assert_allclose(sent_units(ZERO3, FSDP, k, ONCE_PER_STEP), 2 * k + 1)
    np.testing.assert_allclose(sent_units(ZERO2, FSDP, k, ONCE_PER_STEP), [2, 2, 2])
    np.testing.assert_allclose(sent_units(ZERO3, DEEPSPEED, k, ONCE_PER_STEP), 3 * k)
    np.testing.assert_allclose(sent_units(ZERO2, DEEPSPEED, k, ONCE_PER_STEP), 2 * k + 1)
    for strategy in (DDP, ZERO1):  # they reduce once per step anyway
        assert sent_units(strategy, FSDP, 4, ONCE_PER_STEP) == sent_units(strategy, FSDP, 4)


def test_overlapped_zero3_hides_the_gathers_of_the_quiet_backwards():
    # with overlap, each gather (1.757 ms) hides behind a block's compute (33/67 ms): per
    # micro-step one gather shows in forward and one in backward, plus the last reduce-scatter
    # of the one backward that reduces: (2k + 1) units exposed under no_sync; every micro-step
    # reducing shows 3k. k = 4: 9 against 12.
    once, every = _step(ZERO3, ONCE_PER_STEP, 4), _step(ZERO3, EVERY_MICRO_STEP, 4)
    assert float(once.exposed_comm_s) == pytest.approx(9 * UNIT_S, rel=1e-9)
    assert float(every.exposed_comm_s) == pytest.approx(12 * UNIT_S, rel=1e-9)


def test_one_micro_step_is_the_same_either_way():
    for strategy in (ZERO2, ZERO3):
        for overlap in (True, False):
            a = _step(strategy, ONCE_PER_STEP, 1, overlap=overlap, device_memory_bytes=1e12)
            b = _step(strategy, EVERY_MICRO_STEP, 1, overlap=overlap, device_memory_bytes=1e12)
            for field in ("step_time_s", "exposed_comm_s", "comm_bytes", "memory_bytes"):
                assert float(getattr(a, field)) == float(getattr(b, field)), (strategy, field)


def test_memory_holds_full_gradients_by_hand():
    # 2 B parameters, 2 B gradients, 12 B optimizer state per parameter, Psi = 1e9, 8 ranks:
    # ZeRO-3  every micro-step 1e9 (0 + 4/8 + 12/8) = 2.00e9 (the fp32 parameter shard is the
    #         master in K, the gradient shard fp32); no_sync 1e9 (0 + 2 + 12/8) = 3.50e9 (no
    #         gradient shard, whole bf16 gradients; 3.75e9 before session 46, 2/8 over), each
    #         + two gathered blocks of 1e9/10 x 2 B = 0.4e9 (memory.ZERO3_GATHERED_UNITS)
    # ZeRO-2  every micro-step 1e9 (2 + 4/8 + 12/8)   = 4.00e9 (FSDP's gradient shard is fp32,
    #         memory.FSDP_SHARD_BYTES); no_sync 1e9 (2 + 2 + 12/8) = 5.50e9 (whole, in bf16)
    for strategy, sync, want in ((ZERO3, EVERY_MICRO_STEP, 2.4e9), (ZERO3, ONCE_PER_STEP, 3.9e9),
                                 (ZERO2, EVERY_MICRO_STEP, 4.0e9), (ZERO2, ONCE_PER_STEP, 5.5e9)):
        assert float(_step(strategy, sync, 4).memory_bytes) == pytest.approx(want, rel=1e-12)
    # DeepSpeed has no no_sync: its gradients stay sharded whatever grad_sync says (2.00e9 of
    # states, its 1e9-B ipg bucket and the parameters its reuse distance keeps and it
    # prefetches, min(1e9, 5e8 + 5e7) x 2 B = 1.1e9, in which its step's 1e9/8 x 6 B gradient
    # copies fit: 4.1e9; 3.75e9 before session 47, with FSDP's two 0.2e9 blocks)
    assert float(_step(ZERO3, ONCE_PER_STEP, 4, framework=DEEPSPEED).memory_bytes) == \
        pytest.approx(float(_step(ZERO3, EVERY_MICRO_STEP, 4, framework=DEEPSPEED).memory_bytes),
                      rel=1e-12)
    assert float(_step(ZERO3, ONCE_PER_STEP, 4, framework=DEEPSPEED).memory_bytes) == \
        pytest.approx(4.1e9, rel=1e-12)


def test_no_sync_does_not_fit_where_sharded_gradients_do():
    # a 3 GB device: ZeRO-3's 2.40 GB fits, the same with no_sync (3.90 GB) does not
    every = _step(ZERO3, EVERY_MICRO_STEP, 4, device_memory_bytes=3e9)
    once = _step(ZERO3, ONCE_PER_STEP, 4, device_memory_bytes=3e9)
    assert bool(every.fits) and not bool(once.fits)
    # through predict: the seed profile (BERT-large, 336M parameters, micro-batch 32) on 16
    # GPUs cut to 4.7 GiB: ZeRO-3 needs 4.44 GiB, no_sync holds the 0.67 GB of fp16 gradients
    # whole instead of their fp32 shard (2 - 4/16 = 14/16 of them, 15/16 before session 46:
    # 4.99 GiB) and does not fit
    profile = default_profile()
    small = profile.model_copy(update={"hardware": profile.hardware.model_copy(
        update={"device_memory_bytes": 4.7 * 2**30})})
    s = Scenario(devices=[16], strategy="zero3", accumulation=4)
    every = predict(small, s)[0]
    once = predict(small, s.model_copy(update={"grad_sync": "once-per-step"}))[0]
    grads = profile.workload.params * profile.workload.grad_bytes_per_param
    assert once.memory_bytes - every.memory_bytes == pytest.approx(grads * 14 / 16, rel=1e-9)
    assert every.fits and not once.fits


def test_no_sync_is_faster_on_a_slow_link_with_many_micro_steps():
    # ZeRO-2, k = 16, overlap off: 2k = 32 passes of 10 blocks every micro-step, 2 under no_sync;
    # 30 x 10 x 1.757 ms = 527 ms saved of a 16 s compute (a slow 100 GB/s server link would be
    # worse on a network); the step time differs by exactly that
    every = _step(ZERO2, EVERY_MICRO_STEP, 16, overlap=False)
    once = _step(ZERO2, ONCE_PER_STEP, 16, overlap=False)
    assert float(every.step_time_s - once.step_time_s) == pytest.approx(300 * UNIT_S, rel=1e-9)
    # predict: the seed profile's 16 A100s over 6.8 GB/s Ethernet, k = 8: ZeRO-2 no_sync cuts
    # the exposed exchange from ~1.15 s to ~0.14 s; ZeRO-3 no_sync still gathers 2k times
    profile = default_profile()
    s = Scenario(devices=[16], strategy="zero2", accumulation=8)
    z2 = {g: predict(profile, s.model_copy(update={"grad_sync": g}))[0]
          for g in ("every-micro-step", "once-per-step")}
    assert z2["once-per-step"].step_time_s < 0.5 * z2["every-micro-step"].step_time_s
    s3 = s.model_copy(update={"strategy": "zero3"})
    z3 = {g: predict(profile, s3.model_copy(update={"grad_sync": g}))[0]
          for g in ("every-micro-step", "once-per-step")}
    # ZeRO-3's saving is the k - 1 reduce-scatters: about a third of its exchange (3k -> 2k + 1)
    saved = 1 - z3["once-per-step"].exposed_comm_s / z3["every-micro-step"].exposed_comm_s
    assert 7 / 24 * 0.8 < saved < 7 / 24 * 1.2


def test_stragglers_pool_only_where_no_collective_runs():
    # jitter only (cv 5 %, no device spread), k = 4: ZeRO-2 under no_sync waits once per step
    # like DDP, sigma = cv t sqrt(k), so half the per-micro-step wait k e_8 cv t; ZeRO-3 still
    # gathers every micro-step and waits as before
    jitter = dict(jitter_cv=0.05, device_cv=0.0)
    ddp = float(_step(DDP, EVERY_MICRO_STEP, 4, **jitter).straggler_s)
    z2_once = float(_step(ZERO2, ONCE_PER_STEP, 4, **jitter).straggler_s)
    z2_every = float(_step(ZERO2, EVERY_MICRO_STEP, 4, **jitter).straggler_s)
    z3_once = float(_step(ZERO3, ONCE_PER_STEP, 4, **jitter).straggler_s)
    z3_every = float(_step(ZERO3, EVERY_MICRO_STEP, 4, **jitter).straggler_s)
    e8 = 1.4236003  # expected max of 8 standard normals
    assert z2_every == pytest.approx(4 * e8 * 0.05 * 1.0, rel=1e-5)
    assert z2_once == pytest.approx(2 * e8 * 0.05 * 1.0, rel=1e-5) == ddp
    assert z3_once == z3_every == z2_every


# ------------------------------------------------------------------ edges: refusals, CLI


def test_deepspeed_refuses_once_per_step():
    from scalesim.schemas import grad_sync_refused

    assert [grad_sync_refused(f, g) for f in ("fsdp", "deepspeed")
            for g in ("every-micro-step", "once-per-step")] == [False, False, False, True]
    with pytest.raises(ValueError, match="FSDP's no_sync"):
        Scenario(zero_framework="deepspeed", grad_sync="once-per-step")
    with pytest.raises(ValueError, match="grad_sync"):
        Scenario(grad_sync="sometimes")
    from scalesim.sweep import sweep

    profile = default_profile()
    # the refusal names its knobs as the CLI's flags since be57796 (layout.knob_refusal)
    # session 47: the pair in the flags asked ("axes zero_framework, grad_sync" before)
    with pytest.raises(ScalesimError, match="every row pairs --zero-framework-values deepspeed "
                                            "with --grad-sync once-per-step: --grad-sync "
                                            "once-per-step is FSDP's no_sync") as refused:
        sweep(profile, Scenario(devices=[8], grad_sync="once-per-step"),
              {"zero_framework": ["deepspeed"]})  # every pair refused: nothing to sweep
    assert set(refused.value.knobs) == {"zero_framework", "grad_sync"}
    with pytest.raises(ScalesimError, match="FSDP's no_sync"):
        sweep(profile, Scenario(devices=[8], zero_framework="deepspeed"),
              {"grad_sync": ["once-per-step"]})
    some = sweep(profile, Scenario(devices=[8], grad_sync="once-per-step"),
                 {"zero_framework": ["fsdp", "deepspeed"]})  # the pair that can run is kept
    assert some.size == 1 and some.dropped_layout == 1
    rows = sweep(profile, Scenario(devices=[8], strategy="zero2", accumulation=2),
                 {"zero_framework": ["fsdp", "deepspeed"], "grad_sync": ["every-micro-step"]})
    assert rows.size == 2  # DeepSpeed reducing every micro-step is a row like any other


@pytest.mark.parametrize("workload", [None, "llama3-8b"])
def test_a_sweep_drops_deepspeed_once_per_step_and_keeps_the_other_pairs(workload):
    """Both axes swept: the one pair DeepSpeed cannot run (once per step) is dropped and
    counted as a broken layout, as a sweep drops every row that cannot run; it had refused the
    whole grid (session 32 audit). The kept rows are those of sweeps without that pair, on the
    data-parallel and the layout path alike."""
    from scalesim.profiles import resolve_profile
    from scalesim.sweep import sweep

    profile = (default_profile() if workload is None
               else resolve_profile(None, "dgx-h100", workload))
    base = Scenario(devices=[16], strategy="zero3", accumulation=4)
    both = sweep(profile, base, {"zero_framework": ["fsdp", "deepspeed"],
                                 "grad_sync": ["every-micro-step", "once-per-step"]})
    assert both.size == 3 and both.dropped == both.dropped_layout == 1
    assert "FSDP's no_sync" in both.layout_example
    pairs = list(zip(both.columns["zero_framework"], both.columns["grad_sync"], strict=True))
    assert ("deepspeed", "once-per-step") not in pairs
    fsdp = sweep(profile, base, {"zero_framework": ["fsdp"],
                                 "grad_sync": ["every-micro-step", "once-per-step"]})
    assert both.columns["step_time_s"][:2] == pytest.approx(fsdp.columns["step_time_s"])


def test_cli_flag_header_and_sweep_axis(capsys):
    from scalesim.sweep import sweep

    code, out, err = run_cli(capsys, ["predict", "--strategy", "zero3", "--accumulation", "4",
                                      "--devices", "8", "--grad-sync", "once-per-step"])
    assert code == 0, err
    assert "zero3 (FSDP FULL_SHARD under no_sync), accumulation 4" in out
    code, out, err = run_cli(capsys, ["predict", "--zero-framework", "deepspeed",
                                      "--grad-sync", "once-per-step"])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "FSDP's no_sync" in err and "Traceback" not in err
    code, out, err = run_cli(capsys, ["predict", "--grad-sync", "never"])
    assert code == 2 and "--grad-sync" in err
    # the sweep axis: each row what predict says of it
    profile = default_profile()
    base = Scenario(devices=[16], strategy="zero2", accumulation=8)
    grid = sweep(profile, base, {"grad_sync": ["every-micro-step", "once-per-step"]})
    steps = grid.columns["step_time_s"]
    assert steps[0] != pytest.approx(steps[1], rel=1e-3)
    for value, step in zip(grid.columns["grad_sync"], steps, strict=True):
        want = predict(profile, base.model_copy(update={"grad_sync": str(value)}))[0]
        assert step == pytest.approx(want.step_time_s, rel=1e-12)
    code, out, err = run_cli(capsys, ["sweep", "--strategy", "zero3", "--accumulation", "4",
                                      "--devices", "8", "--grad-sync-values",
                                      "every-micro-step,once-per-step"])
    assert code == 0, err


# ------------------------------------------------------------------ the app and its links

ZERO3_LINK = {"v": "2", "strat": "zero3", "acc": "4", "dmax": "16"}


def test_a_link_with_no_sync_round_trips_as_v5_and_predicts_it():
    from app_harness import link_round_trip
    from scalesim.app.plan import build_scenario, make_plan
    from scalesim.app.state import encode_query

    (state, profile), (state2, profile2) = link_round_trip(ZERO3_LINK, "gs", "once-per-step", 5)
    assert state.gs == "every-micro-step"
    assert encode_query(state, profile)["v"] == "2"  # the default: still a v2 link
    scenario, _ = build_scenario(state2, profile2)
    assert scenario.grad_sync == "once-per-step"
    rows, before = make_plan(profile2, state2).rows, make_plan(profile, state).rows
    assert rows == predict(profile2, scenario)
    multi = [(a, b) for a, b in zip(rows, before, strict=True) if a.devices > 1]
    assert multi and all(a.step_time_s < b.step_time_s for a, b in multi)
    # ZeRO-3 under no_sync holds whole bf16 gradients (2 B) for its fp32 shard (4/d B): the
    # same bytes on 2 devices, more on more
    assert all(a.memory_bytes > b.memory_bytes if a.devices > 2
               else a.memory_bytes == pytest.approx(b.memory_bytes, rel=1e-12)
               for a, b in multi)


def test_old_links_reduce_every_micro_step():
    from scalesim.app.state import decode_query

    # v1 to v4 links cannot carry the choice: ignored and said so, the rest kept
    for version in ("1", "2", "3", "4"):
        state, _, messages = decode_query({**ZERO3_LINK, "v": version, "gs": "once-per-step"})
        assert state.gs == "every-micro-step" and state.strat == "zero3" and state.acc == 4
        assert messages == [f"ignored gs: a v{version} link has no gradient sync choice "
                            "(ZeRO-2/3 reduce every micro-step)"]
    # a v5 link that omits it reduces every micro-step; a bad value falls back alone
    assert decode_query({**ZERO3_LINK, "v": "5"})[0].gs == "every-micro-step"
    state, _, messages = decode_query({**ZERO3_LINK, "v": "5", "gs": "<b>"})
    assert state.gs == "every-micro-step" and state.acc == 4 and len(messages) == 1


def test_the_app_control_sets_no_sync_and_the_link():
    from app_harness import focus_samples_per_s, select_into_link

    _, before, state = select_into_link(ZERO3_LINK, "k_gs", "gs", "every-micro-step",
                                        "once-per-step", 5)
    now, was = focus_samples_per_s(state, before)
    assert now > was


@pytest.mark.parametrize("command", ["predict", "sweep", "decide", "goal", "plan"])
def test_every_command_with_zero_knobs_takes_the_flag(capsys, command):
    code, out, _ = run_cli(capsys, [command, "--help"])
    assert code == 0 and "--grad-sync {every-micro-step,once-per-step}" in out
    assert "no_sync" in out and "--zero-framework" in out


def test_the_sharding_remedy_counts_no_sync_bytes():
    # from ZeRO-2 to ZeRO-3 at k = 4 under no_sync: 2k + 1 = 9 units against 2, 4.5x the bytes
    # (every micro-step: 3k / 2k = 1.5x), and the title and reason say no_sync
    from scalesim.remedies import rank_remedies

    profile = default_profile()
    for sync, ratio in (("once-per-step", "4.5x"), ("every-micro-step", "1.5x")):
        s = Scenario(devices=[16], strategy="zero2", accumulation=4, grad_sync=sync)
        _, results = rank_remedies(profile, s, 16)
        z3 = next(r for r in results if r.key == "sharding")
        assert f"sends {ratio} the bytes of now" in z3.reason, z3.reason
        assert ("no_sync" in z3.title) == (sync == "once-per-step"), z3.title
        assert ("reduced once per step (no_sync)" in z3.reason) == (sync == "once-per-step")


def test_the_report_names_the_gradient_sync():
    from scalesim.app.plan import make_plan
    from scalesim.app.report import scenario_lines
    from scalesim.app.state import decode_query

    state, profile, _ = decode_query({**ZERO3_LINK, "v": "5", "gs": "once-per-step"})
    lines = dict(scenario_lines(make_plan(profile, state)))
    assert lines["ZeRO-2/3 gradient sync"] == "once per step (FSDP no_sync: full gradients)"
