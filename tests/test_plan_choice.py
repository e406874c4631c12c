"""Session 39's audit of the planner's choice against brute force: what it says of its first row
where nothing fits, which of two equally fast layouts goes first, why no layout is valid, the
micro-batches it searches, and what a plan of several counts says of each."""

import pytest
from cli_harness import run_cli

from scalesim.presets import HARDWARE, get_transformer


def _llama70b_params() -> int:
    """Llama 3 70B by hand: 80 layers of q, o (h^2 each), k, v (h x 1024: 8 of 64 heads), a
    SwiGLU MLP (3 h f) and two RMSNorm scales (2h); untied embedding and output (2 V h) and the
    final norm (h)."""
    h, f, v = 8192, 28672, 128256
    layer = 2 * h * h + 2 * h * 1024 + 3 * h * f + 2 * h
    return 80 * layer + 2 * v * h + h  # 70,553,706,496


def _llama70b_least_bytes() -> float:
    """Bytes a device needs in the layout of llama3-70b on 8 H100s needing least memory since
    session 48 (Megatron-Core's DDP at tp 8 holds 18 B a parameter, 151.8 GiB): dp 2 x tp 4
    ZeRO-3 (FSDP over 2 shards: 0 + 4/2 + 12/2 = 8 B a parameter) over tp 4, two gathered
    layers of the layout step's (2 h^2 + 2 h 1024 + 3 h f + 4 h) / 4 at 2 B, micro-batch 1, full
    recompute, sequence parallel (docs/model.md §16): 148,407,631,872 B, 138.2 GiB."""
    p, s, h, t = _llama70b_params(), 8192, 8192, 4
    layer = 2 * h * h + 2 * h * 1024 + 3 * h * 28672 + 4 * h
    return (8 * p / t + 2 * 2 * layer / t + 80 * 2 * s * h / t
            + (s * h * 35.5 / t - 2 * s * h / t) + 4 * s * 128256 / t + 2 * 2**30)


def test_an_unfit_first_row_says_it_does_not_fit_not_best(capsys):
    """`plan --workload llama3-70b --hardware dgx-h100 --devices 8 --global-batch 64 --all`:
    nothing fits, yet the first row's why said `best` and the summary `best step 89.018 s`,
    for a layout needing 135.4 GiB of an 80 GiB GPU. Its memory by docs/model.md §16 at tp 8,
    dp 1, ZeRO 0, micro-batch 1, full recompute, sequence parallel: 16 bytes per parameter over
    tp 8, each layer's input (2 s h / t) x 80, the rerun layer's working set beyond it
    (s h (10 + 25.5) / t - 2 s h / t), fp32 logits 4 s V / t and 2 GiB of buffers. Its step
    89.013 s since session 46 (89.018 before): DDP under autocast sweeps 28 B a parameter in the
    optimizer step, not 30, 2 B x 70.6e9 / 8 parameters at 3,350 GB/s = 5.3 ms less; 89.029 s
    since session 47: DDP at tp 8 is Megatron-Core's (fp32 main params cast and copied back,
    34 B), 6 B x 70.55e9 / 8 / 3.35e12 = 15.8 ms more; 89.061 s since session 47 counted its
    default gradient-norm clip (norm 4 + scale 4 + 4 B of the fp32 main grads, 46 B):
    12 B x 70.55e9 / 8 / 3.35e12 = 31.6 ms more. Session 48: Megatron-Core's DDP holds its
    fp32 main_grad buffer, 18 bytes a parameter, so that layout needs 16 x 70.55e9 / 8 more
    (151.8 GiB, its step the same), and the layout needing least memory, the first row, is
    dp 2 x tp 4 ZeRO-3 (FSDP, 2 shards): 0 + 4/2 + 12/2 = 8 bytes a parameter over tp 4, two
    gathered layers of the layout step's (2 h^2 + 2 h 1024 + 3 h f + 4 h) / 4 at 2 bytes, the
    activations at tp 4: 138.2 GiB, step 76.243 s."""
    from scalesim.plan import plan

    p, s, h, t = _llama70b_params(), 8192, 8192, 8
    assert get_transformer("llama3-70b").param_count() == p
    acts = (80 * 2 * s * h / t + (s * h * 35.5 / t - 2 * s * h / t) + 4 * s * 128256 / t
            + 2 * 2**30)
    assert 16 * p / t + acts == 145_403_428_864  # 135.42 GiB, before session 48
    ddp = 18 * p / t + acts  # 163,041,855,488 bytes: 151.84 GiB
    t = 4
    layer = 2 * h * h + 2 * h * 1024 + 3 * h * 28672 + 4 * h
    hand = (8 * p / t + 2 * 2 * layer / t + 80 * 2 * s * h / t
            + (s * h * 35.5 / t - 2 * s * h / t) + 4 * s * 128256 / t + 2 * 2**30)
    rows = plan(get_transformer("llama3-70b"), HARDWARE["dgx-h100"], [8], 64, top=None,
                include_unfit=True)
    first = rows[0]
    assert (first.tp, first.pp, first.dp, first.zero, first.recompute, first.fits) == (
        4, 1, 2, 3, "full", False)
    assert first.memory_bytes == hand
    assert first.why == "does not fit: 138.2 GiB > 80.0 GiB per device"
    split_ddp = next(r for r in rows if (r.tp, r.pp, r.dp, r.zero, r.micro_batch, r.recompute,
                                         r.sequence_parallel) == (8, 1, 1, 0, 1, "full", True))
    assert split_ddp.memory_bytes == ddp and split_ddp.step_time_s == pytest.approx(89.061,
                                                                                    abs=5e-4)
    code, out, err = run_cli(capsys, ["plan", "--workload", "llama3-70b", "--hardware",
                                      "dgx-h100", "--devices", "8", "--global-batch", "64",
                                      "--top", "2", "--all"])
    assert code == 0, err
    assert " best" not in out and "best step" not in out
    assert "no layout fits; the one needing least memory: step 76.243 s" in out


def test_a_tie_goes_to_the_layout_needing_less_memory():
    """GPipe and 1F1B have one bubble, (p - 1) / m of the step (docs/model.md §15), so a layout
    runs equally fast under either, while GPipe keeps all m micro-batches in flight and 1F1B
    at most p. The planner broke such ties by its grid's order (GPipe first): gpt-7.5b on 8
    PCIe GPUs over 25 GbE at global batch 16, dp 2 x pp 4, ZeRO-1, selective recompute ranked
    GPipe (43.7 GiB) at 317, then 1F1B (31.0 GiB) at 318. The one needing less memory goes
    first now, here and wherever two rows tie."""
    from scalesim.plan import plan

    rows = plan(get_transformer("gpt-7.5b"), HARDWARE["pcie-8gpu-25gbe"], [8], 16, top=None)
    pair = {r.schedule: r for r in rows if (r.dp, r.tp, r.pp, r.zero, r.micro_batch, r.recompute)
            == (2, 1, 4, 1, 1, "selective") and r.schedule in ("gpipe", "1f1b")}
    gpipe, one_f_one_b = pair["gpipe"], pair["1f1b"]
    assert gpipe.step_time_s == one_f_one_b.step_time_s
    assert gpipe.memory_bytes > one_f_one_b.memory_bytes
    assert gpipe.rank == one_f_one_b.rank + 1
    ties = [(a, b) for a, b in zip(rows[:-1], rows[1:], strict=True)
            if a.samples_per_s == b.samples_per_s]
    assert len(ties) > 10 and all(a.memory_bytes <= b.memory_bytes for a, b in ties)


def test_a_batch_too_small_for_the_devices_is_told_to_grow_not_to_add_devices(capsys):
    """`plan --workload llama3-8b --hardware dgx-h100 --devices 1024 --global-batch 2` said
    `... add devices or lower the global batch`: both make it worse. A replica spans at most
    tp 8 (one server) x pp 32 (one layer a stage) = 256 GPUs, so 1024 GPUs hold 4 or more
    replicas, and neither 4 nor any larger count of them divides 2. The line says so and
    asks for a multiple of 4 or fewer GPUs; at global batch 4 the plan is dp 4 x tp 8 x pp 32."""
    from scalesim.plan import plan

    argv = ["plan", "--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices", "1024"]
    code, out, err = run_cli(capsys, [*argv, "--global-batch", "2"])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert ("every valid split has 4 or more data-parallel replicas, and none of their counts "
            "divides the global batch; give a global batch that is a multiple of 4, or fewer "
            "devices") in err
    assert "add devices" not in err
    rows = plan(get_transformer("llama3-8b"), HARDWARE["dgx-h100"], [1024], 4, top=None)
    assert {(r.dp, r.tp, r.pp) for r in rows} == {(4, 8, 32)}
    # too many micro-steps (3,000,000 / (16 x 32) > 4,096) keeps its advice: more devices
    code, out, err = run_cli(capsys, [*argv[:-1], "16", "--global-batch", "3000000"])
    assert code == 2 and "in at most 4,096 micro-steps; add devices or lower the global" in err


def test_the_search_takes_every_micro_batch_that_divides_a_replicas_share():
    """The planner tried micro-batches 1, 2, 4, 8, 16 and 32 only. gpt-7.5b on 16 H100s at
    global batch 72: dp 8 gives 9 sequences a replica, which only 1, 3 and 9 divide, so it ran
    9 micro-steps of 1 (63.53 samples/s) where 3 of 3 run 66.14 (+4.1 %, the best any layout
    of the schema reaches there by brute force). Every micro-batch of 1 to 32 that divides a
    replica's share is a candidate now; the layout is the scalar path's own evaluation."""
    from scalesim.layout import ParallelLayout
    from scalesim.plan import Setting, evaluate_layout, plan

    shape, hw = get_transformer("gpt-7.5b"), HARDWARE["dgx-h100"]
    best = plan(shape, hw, [16], 72, top=1)[0]
    assert (best.dp, best.tp, best.pp, best.micro_batch, best.accumulation) == (8, 2, 1, 3, 3)
    setting = Setting(shape, hw, 72)

    def at(micro_batch):
        layout = best.layout(72).model_copy(update={"micro_batch": micro_batch})
        return float(evaluate_layout(setting, ParallelLayout(**layout.model_dump())).samples_per_s)

    assert best.samples_per_s == at(3) > at(1) * 1.04
    rows = plan(shape, hw, [16], 72, top=None)
    # the divisors of 9, 18, 36 and 72 sequences a replica (dp 8, 4, 2, 1) up to 32
    assert {r.micro_batch for r in rows} == {1, 2, 3, 4, 6, 8, 9, 12, 18, 24}
    assert all(72 % (r.dp * r.micro_batch) == 0 for r in rows)


def test_a_plan_of_several_counts_gives_the_best_on_each(capsys):
    """`plan --workload llama3-70b --hardware dgx-h100 --devices 64,128,256 --global-batch 1024`
    (README's example) listed 256-GPU layouts only: ranked together, the largest count's
    throughput is the highest. The plan keeps that ranking and gives the best on each count,
    which is what a plan of that count alone ranks first, with its rank among all, its tokens/s
    per GPU and that over the 64-GPU best's (scaling); --json carries it as by_count."""
    import json

    from scalesim.plan import plan

    shape, hw = get_transformer("llama3-70b"), HARDWARE["dgx-h100"]
    alone = {n: plan(shape, hw, [n], 1024, top=1)[0] for n in (64, 128, 256)}
    argv = ["plan", "--workload", "llama3-70b", "--hardware", "dgx-h100", "--devices",
            "64,128,256", "--global-batch", "1024", "--top", "3"]
    code, out, err = run_cli(capsys, [*argv, "--json"])
    assert code == 0, err
    got = json.loads(out)
    assert [r["devices"] for r in got["layouts"]] == [256, 256, 256]
    assert [c["devices"] for c in got["by_count"]] == [64, 128, 256]
    key = ("dp", "tp", "pp", "zero", "micro_batch", "schedule", "virtual_stages", "recompute",
           "sequence_parallel", "samples_per_s", "memory_bytes")
    per_gpu = {n: alone[n].tokens_per_s / n for n in alone}
    for c in got["by_count"]:
        n, best = c["devices"], c["best"]
        assert {k: best[k] for k in key} == {k: getattr(alone[n], k) for k in key}
        assert c["note"] is None and c["tokens_per_s_per_device"] == per_gpu[n]
        assert c["scaling_efficiency"] == pytest.approx(per_gpu[n] / per_gpu[64], rel=1e-12)
    assert got["by_count"][2]["best"] == got["layouts"][0]  # the 256 best is the first row
    assert got["by_count"][0]["best"]["rank"] > 3  # past the rows listed
    code, text, err = run_cli(capsys, argv)
    assert code == 0, err
    block = text.split("best on each count asked")[1].splitlines()
    rows = [line.split() for line in block[2:5]]
    assert [int(r[1]) for r in rows] == [64, 128, 256]
    assert [int(r[0]) for r in rows] == [c["best"]["rank"] for c in got["by_count"]]
    assert rows[1][-1] == f"{per_gpu[128] / per_gpu[64]:.1%}"


def test_a_count_with_no_layout_says_why(capsys):
    """A count without a layout just had no rows. `--devices 64,1024 --global-batch 2`
    (llama3-8b): a replica spans at most tp 8 x pp 32 (32 layers) = 256 GPUs, so 1024 hold
    4 or more replicas, none dividing 2; the note asks for a multiple of 4, as the error of
    that count alone does. llama3-70b on 8,64 H100s: nothing fits on 8; the note names the
    layout needing least memory and its 135.4 GiB (docs/model.md §16 by hand, as
    ``test_an_unfit_first_row_says_it_does_not_fit_not_best``) against the 80.0 GiB."""
    import json

    from scalesim.figures import gib

    argv = ["plan", "--hardware", "dgx-h100", "--devices", "64,1024", "--global-batch", "2"]
    code, out, err = run_cli(capsys, argv)
    assert code == 0, err
    code, _, alone = run_cli(capsys, [*argv[:4], "1024", *argv[5:]])
    note = ("no valid layout for devices 1024 and global batch 2 on servers of 8: every valid "
            "split has 4 or more data-parallel replicas, and none of their counts divides the "
            "global batch; give a global batch that is a multiple of 4, or fewer devices")
    assert f"note: {note}" in out.splitlines() and code == 2 and note in alone
    code, out, err = run_cli(capsys, [*argv, "--json"])
    assert json.loads(out)["by_count"][1] == {"devices": 1024, "best": None, "note": note,
                                              "tokens_per_s_per_device": None,
                                              "scaling_efficiency": None,
                                              "memory_note": None}
    hand = _llama70b_least_bytes()  # 135.4 GiB at dp 1 x tp 8 DDP before session 48
    code, out, err = run_cli(capsys, ["plan", "--workload", "llama3-70b", "--hardware",
                                      "dgx-h100", "--devices", "8,64", "--global-batch", "1024"])
    assert code == 0, err
    assert (f"note: nothing fits on 8 devices: the layout needing least memory (dp 2 x tp 4 x "
            f"pp 1, zero3, micro-batch 1 per replica x 512 accumulation, recompute "
            f"full, sequence parallel) needs {gib(hand)} per device, of 80.0 GiB") in out.splitlines()
    assert gib(hand) == "138.2 GiB"


def test_nothing_fits_anywhere_names_the_least_memory_and_the_fix(capsys):
    """Where no count asked has a layout that fits, the error said only "no layout fits in 80 GiB
    per device for devices 8; add devices or memory": not how far off. It is now the per-count
    note's words (``plan.nothing_fits_words`` of the layout needing least memory, named by
    ``layout_predict.row_title``, as the plan's rows are): llama3-70b on 8 H100s at global
    batch 1024 needs at least 135.4 GiB a device (docs/model.md §16 by hand, as
    ``test_an_unfit_first_row_says_it_does_not_fit_not_best``), in one line with the fix. Of
    several counts it names the count whose least is lowest, the least of every layout asked:
    gpt-1t on 8 and 16 A100s, 16's (tp 8 x pp 2), not 8's."""
    from scalesim.errors import ScalesimError
    from scalesim.figures import gib
    from scalesim.plan import plan

    hand = _llama70b_least_bytes()  # 138.2 GiB (135.4 at dp 1 x tp 8 DDP before session 48)
    code, out, err = run_cli(capsys, ["plan", "--workload", "llama3-70b", "--hardware",
                                      "dgx-h100", "--devices", "8", "--global-batch", "1024"])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert err.strip() == (
        "scalesim plan: error: nothing fits on 8 devices: the layout needing least memory (dp 2 "
        "x tp 4 x pp 1, zero3, micro-batch 1 per replica x 512 accumulation, recompute full, "
        f"sequence parallel) needs {gib(hand)} per device, of 80.0 GiB; every ZeRO stage, "
        "recompute and micro-batch was tried: add devices, or use devices with more memory "
        # the presets whose devices hold that layout, by hand 138.2 GiB (session 48)
        f"(the layout fits the {gib(HARDWARE['dgx-h200'].device_memory_bytes)} of the preset "
        f"dgx-h200, or the {gib(HARDWARE['gb200-nvl72'].device_memory_bytes)} of the preset "
        "gb200-nvl72)")
    with pytest.raises(ScalesimError) as both:
        plan(get_transformer("gpt-1t"), HARDWARE["dgx-a100"], [8, 16], 64)
    with pytest.raises(ScalesimError) as eight:
        plan(get_transformer("gpt-1t"), HARDWARE["dgx-a100"], [8], 64)
    least = plan(get_transformer("gpt-1t"), HARDWARE["dgx-a100"], [16], 64, top=None,
                 include_unfit=True)
    need = min(r.memory_bytes for r in least)
    assert f"on 16 devices) needs {gib(need)} per device" in str(both.value)
    assert str(both.value).startswith("nothing fits on 8,16 devices: ")
    assert f"needs {gib(need)} per device" not in str(eight.value)
