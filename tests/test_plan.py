"""The planner: agrees with exhaustive scalar evaluation, ranks fitting layouts first, CLI."""

import json

import pytest
from cli_harness import run_cli_as_process

from scalesim.errors import ScalesimError
from scalesim.plan import Setting, evaluate_layout, exhaustive_scalar, plan
from scalesim.presets import HARDWARE, get_transformer
from scalesim.schemas import TransformerShape

TINY = TransformerShape(layers=8, hidden=512, heads=8, kv_heads=4, ffn_hidden=1536,
                        gated_mlp=True, seq_len=512, vocab=1000, flash_attention=True)
SMALL_HW = HARDWARE["dgx-a100"].model_copy(update={"devices_per_node": 4,
                                                   "device_memory_bytes": 2.2 * 2**30})


def _key(row_or_layout):
    x = row_or_layout
    # hybrid sharding: a ZeRO row's shard group where it is less than dp x cp (§16)
    hybrid = x.shard_group if x.zero and (x.shard_group or 0) < x.dp * x.cp else None
    return (x.dp, x.tp, x.pp, x.cp, x.zero, x.micro_batch, x.schedule, x.virtual_stages,
            x.recompute, x.sequence_parallel, hybrid)


def test_planner_agrees_with_exhaustive_scalar_evaluation():
    devices = [1, 2, 4, 8]
    setting = Setting(TINY, SMALL_HW, 16)
    scalar = {_key(lay): res for lay, res in exhaustive_scalar(setting, devices)}
    rows = plan(TINY, SMALL_HW, devices, 16, top=None, include_unfit=True)
    assert len(rows) == len(scalar) > 1000
    for row in rows:
        res = scalar[_key(row)]
        assert row.step_time_s == pytest.approx(float(res.step_time_s), rel=1e-9)
        assert row.memory_bytes == pytest.approx(float(res.memory_bytes), rel=1e-9)
        assert row.fits == bool(res.fits)
    fitting = sorted((float(r.samples_per_s), k) for k, r in scalar.items() if bool(r.fits))
    assert rows[0].samples_per_s == pytest.approx(fitting[-1][0])
    # some layouts do not fit in 2.2 GiB, and none of them is ranked among the fitting ones
    first_unfit = next(i for i, r in enumerate(rows) if not r.fits)
    assert all(r.fits for r in rows[:first_unfit]) and not any(r.fits for r in rows[first_unfit:])
    assert [r.samples_per_s for r in rows[:first_unfit]] == sorted(
        (r.samples_per_s for r in rows[:first_unfit]), reverse=True)


def test_default_listing_has_only_fitting_layouts_and_reasons():
    rows = plan(TINY, SMALL_HW, [4, 8], 16, top=None)
    assert rows and all(r.fits for r in rows)
    assert rows[0].why == "best" and all(r.why != "best" for r in rows[1:])
    assert any("step +" in r.why for r in rows[1:])


def test_rank_by_cost_prefers_device_efficiency():
    rows = plan(TINY, SMALL_HW, [1, 2, 4, 8], 16, rank_by="cost", top=None)
    costs = [r.device_hours_per_million_samples for r in rows]
    assert costs == sorted(costs)


def test_scalar_path_checks_the_layout():
    from scalesim.layout import ParallelLayout

    setting = Setting(TINY, SMALL_HW, 16)
    with pytest.raises(ScalesimError, match="tp 8 > 4 GPUs per server"):
        evaluate_layout(setting, ParallelLayout(tp=8, global_batch=16))


def test_plan_errors():
    # least: dp 1 x tp 8 DDP (16 B / 8 a parameter, 1,881.8 GiB) before session 48; Megatron-Core's
    # DDP holds 18 B, so dp 2 x tp 4 ZeRO-3 (8 B / 4, the same states, tp 4's activations) is least
    with pytest.raises(ScalesimError, match=r"nothing fits on 8 devices: .*\(dp 2 x tp 4 x pp 1, "
                       r"zero3.* needs 1,891.3 GiB"):
        plan(get_transformer("gpt-1t"), HARDWARE["dgx-a100"], [8], 64)
    with pytest.raises(ScalesimError, match="efficiency"):
        plan(TINY, SMALL_HW, [4], 16, efficiency=1.5)
    with pytest.raises(ScalesimError, match="devices 6 do not fill whole servers of 4 GPUs"):
        plan(TINY, SMALL_HW, [4, 6], 16)


def _cli(capsys, *args):
    """``scalesim plan *args`` in this process: its returncode, stdout and stderr."""
    return run_cli_as_process(capsys, ["plan", *args])


def test_cli_json_has_the_promised_fields(capsys):
    out = _cli(capsys, "--model", "llama3-8b", "--hardware", "dgx-h100", "--devices", "8,16",
               "--global-batch", "64", "--json", "--top", "5")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["layouts"]
    need = {"devices", "dp", "tp", "pp", "zero", "micro_batch", "accumulation", "schedule",
            "virtual_stages", "recompute", "sequence_parallel", "step_time_s", "samples_per_s",
            "tokens_per_s", "mfu", "memory_bytes", "fits"}
    assert len(rows) == 5 and need <= set(rows[0])
    assert rows[0]["samples_per_s"] >= rows[-1]["samples_per_s"]
    assert all(r["dp"] * r["tp"] * r["pp"] == r["devices"] for r in rows)


def test_cli_names_the_workload_as_predict_does_and_keeps_model_as_an_alias(capsys):
    """``--workload`` is the flag every command uses for the workload; ``plan --model`` (its
    first name) still works and means the same."""
    args = ("llama3-8b", "--hardware", "dgx-h100", "--devices", "8", "--global-batch", "64",
            "--json", "--top", "3")
    by_workload, by_model = _cli(capsys, "--workload", *args), _cli(capsys, "--model", *args)
    assert by_workload.returncode == 0, by_workload.stderr
    assert json.loads(by_workload.stdout) == json.loads(by_model.stdout)
    other = _cli(capsys, "--workload", "gpt-1.7b", *args[1:])
    assert json.loads(other.stdout) != json.loads(by_workload.stdout)


def test_cli_bad_input_is_one_line_exit_2(capsys):
    out = _cli(capsys, "--model", "llama3-8b", "--devices", "8", "--global-batch", "64",
               "--hardware", "nope")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "nope" in out.stderr
    out = _cli(capsys, "--model", "gpt-1t", "--hardware", "dgx-a100", "--devices", "8",
               "--global-batch", "64")
    assert out.returncode == 2 and "nothing fits on 8 devices" in out.stderr


def test_cli_reads_a_workload_file_with_a_shape(tmp_path, capsys):
    from scalesim.presets import transformer_workload

    path = tmp_path / "gpt.json"
    path.write_text(transformer_workload("gpt-1.7b").model_dump_json())
    out = _cli(capsys, "--model", str(path), "--hardware", "dgx-a100", "--devices", "8,16",
               "--global-batch", "64", "--top", "3")
    assert out.returncode == 0, out.stderr
    # 9 lines, and the best on each of the 2 counts: a title, a header and a row each
    # session 45: and the note of what each ZeRO number runs as
    assert "best step" in out.stdout and out.stdout.count("\n") == 9 + 5
    assert "best on each count asked" in out.stdout
    lines = out.stdout.splitlines()
    # no --profile, no input pipeline: the stall is not modelled, said once (not a 0)
    assert lines[-2].startswith("note: data stall not modelled: no input pipeline measured")
    assert lines[-1].startswith("note: zero ")
    # the planned model named first, by its file and shape (the default is said to be one)
    assert lines[0] == (f"workload: {path}: 24 layers, hidden 2304, 24 heads, MLP 9216, "
                        "sequence 2048, vocabulary 51200")
    lines = lines[1:]
    assert lines[0].startswith("hardware: dgx-a100 (A100-SXM4 80GB, 8 per server")
    assert "(the default" not in lines[0]  # --hardware was given
    assert lines[1].startswith("full recompute: whole forward rerun")  # the framework's
    no_shape = tmp_path / "plain.json"
    no_shape.write_text(json.dumps({"name": "x", "params": 1e9}))
    out = _cli(capsys, "--model", str(no_shape), "--devices", "8", "--global-batch", "64")
    assert out.returncode == 2 and "no 'transformer' shape" in out.stderr


def test_a_vanishing_efficiency_is_refused_by_its_bounds(capsys):
    """Issue 14 fuzz finding: --efficiency 5e-324 passed (0, 1] and overflowed the matmul time
    (nine lines of RuntimeWarning); the bounds table's matmul_efficiency refuses it."""
    from scalesim.cli.main import main

    with pytest.raises(ScalesimError, match="efficiency: 5e-324 is outside 0.0001 <= x <= 1"):
        plan(TINY, SMALL_HW, [4], 16, efficiency=5e-324)
    with pytest.raises(SystemExit) as exit_:
        main(["plan", "--global-batch", "512", "--efficiency", "5e-324"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--efficiency" in err


def test_the_planner_has_no_zero3_pipeline_rows_fsdp_holds_them_whole():
    # FSDP under a pipeline holds a ZeRO-3 stage whole (the ZeRO-2 row's numbers); DeepSpeed
    # refuses ZeRO-2/3 with pipeline parallelism (docs/model.md §16)
    from scalesim.model.sharding import DEEPSPEED
    from scalesim.plan import candidate_grid

    setting = Setting(get_transformer("gpt-1.7b"), HARDWARE["dgx-a100"], 64)
    grid = candidate_grid([16], setting)
    piped = grid["pp"] > 1
    assert piped.any() and (grid["zero"][piped] == 2).any()
    assert not (grid["zero"][piped] == 3).any()
    ds = candidate_grid([16], setting.replace(framework=DEEPSPEED))
    assert not (ds["zero"][ds["pp"] > 1] >= 2).any()


def test_plan_gpus_per_node_reaches_its_nics_and_bills_whole_servers(tmp_path, capsys):
    """``plan --gpus-per-node 4`` on 8-GPU DGX A100 servers is the job predict models (issue of
    the session's review: plan set the server to 4 GPUs): its 4 GPUs per server reach 4 of the
    8 NICs (docs/model.md §18), so every layout's step is that of a 4-GPU server whose NICs
    sustain 192 x 4/8 = 96 GB/s; and a cloud bills each server whole (§9): 16 GPUs on 4
    servers bill 32, where the 4-GPU server file bills 16."""
    from cli_harness import run_cli

    half = HARDWARE["dgx-a100"].model_copy(update={
        "name": "half", "devices_per_node": 4, "inter_node": HARDWARE["dgx-a100"].inter_node
        .model_copy(update={"busbw_GBps": 96.0, "nics_per_node": 4})})
    path = tmp_path / "half.json"
    path.write_text(half.model_dump_json())
    argv = ["plan", "--workload", "gpt-1.7b", "--devices", "16", "--global-batch", "64",
            "--top", "5000", "--all", "--rank", "cost", "--json"]
    rows = []
    for extra in (["--hardware", "dgx-a100", "--gpus-per-node", "4"], ["--hardware", str(path)]):
        code, out, err = run_cli(capsys, [*argv, *extra])
        assert code == 0, err
        rows.append({(r["dp"], r["tp"], r["pp"], r["zero"], r["micro_batch"], r["schedule"],
                      r["virtual_stages"], r["recompute"], r["sequence_parallel"]): r
                     for r in json.loads(out)["layouts"]})
    used, server = rows
    assert len(used) > 50 and used.keys() == server.keys()
    for key, r in used.items():
        assert r["step_time_s"] == pytest.approx(server[key]["step_time_s"], rel=1e-12), key
        assert (r["billed_devices"], server[key]["billed_devices"]) == (32, 16), key


def test_predict_and_plan_headers_say_what_fewer_gpus_of_a_server_get(capsys):
    """``--gpus-per-node`` below the server's GPUs: predict's scenario line and plan's conditions
    line give the same words (``predict.server_use_words``): the ring over them (a DGX-1V pair
    shares one NVLink, 120 / 6 = 20 GB/s), the NICs they reach (2 GPUs of the DGX-1's 4 NICs
    reach 1, 48 / 4 = 12 GB/s) and whole-instance billing; nothing on whole
    servers."""
    from cli_harness import run_cli

    words = ("2 of 8 GPUs per server: intra 20, inter 12 GB/s busbw (the links and NICs they "
             "reach), billed per instance of 1, 4, 8 GPUs")
    code, out, err = run_cli(capsys, ["predict", "--hardware", "dgx1-v100", "--devices", "8,16",
                                      "--gpus-per-node", "2"])
    assert code == 0 and words in out.splitlines()[2], err
    code, out, err = run_cli(capsys, ["plan", "--workload", "gpt-1.7b", "--hardware",
                                      "dgx1-v100", "--devices", "16", "--global-batch", "64",
                                      "--gpus-per-node", "2", "--all"])
    assert code == 0 and f"ranked with: {words}" in out, err
    code, out, err = run_cli(capsys, ["predict", "--hardware", "dgx1-v100", "--devices", "8,16"])
    assert code == 0 and "GPUs per server" not in out, err


def test_cp_degrees_that_divide_no_device_count_say_how_to_fix_it(capsys):
    """`plan --devices 8 --cp 3` said `no dp x tp x pp split of devices [8]`: not what was
    wrong (cp 3 does not divide 8) nor what to give. One line names both now."""
    from scalesim.cli.main import main

    code = main(["plan", "--global-batch", "512", "--devices", "8", "--cp", "3"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "with cp 3" in err and "must divide the device count" in err and "--cp" in err, err


def test_plan_messages_write_device_lists_as_the_cli_takes_them(capsys):
    """`plan --workload llama3-70b --devices 8 --global-batch 64` said `... for devices [8]`: a
    Python list, not what `--devices` takes. Lists a user may type back read `8,16` now."""
    from scalesim.billing import check_sizes
    from scalesim.bounds import list_text, parse_list
    from scalesim.cli.main import main

    code = main(["plan", "--workload", "llama3-70b", "--devices", "8", "--global-batch", "64"])
    out, err = capsys.readouterr()
    assert code == 2 and "nothing fits on 8 devices:" in err and "[" not in err, err
    code = main(["plan", "--global-batch", "512", "--devices", "8,16", "--cp", "3,5"])
    out, err = capsys.readouterr()
    assert code == 2 and "split of devices 8,16 with cp 3,5:" in err, err
    with pytest.raises(ScalesimError, match=r"instance_sizes 0,2: give"):
        check_sizes([0, 2])
    assert parse_list(list_text([1, 2, 4]), "devices", "--devices") == [1, 2, 4]
    assert list_text([0.1, 0.25]) == "0.1,0.25"


def test_no_plan_takes_more_micro_steps_than_the_bounds_table_allows(capsys):
    """Session 10: `plan --global-batch 1099511627776 --devices 8` ranked first a layout of
    137,438,953,472 micro-steps per optimizer step (a 3,700-year step), which predict's
    --accumulation (at most 4,096, scalesim.bounds) could never run. Layouts past that bound
    are not candidates; where none is left, one line says what to change."""
    from scalesim.bounds import bound
    from scalesim.cli.main import main

    assert main(["plan", "--global-batch", str(2**20), "--devices", "8", "--all", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["layouts"]
    assert rows and all(r["accumulation"] <= bound("accumulation").high for r in rows)
    assert max(r["accumulation"] for r in rows) == 4096  # 2**20 / (8 x 32): the bound itself
    assert main(["plan", "--global-batch", str(2**40), "--devices", "8"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert "in at most 4,096 micro-steps; add devices or lower the global batch" in err


def test_the_plan_names_the_model_it_plans(capsys):
    """Without --workload the plan's table was of llama3-8b at sequence 8192 with no word of
    it (``cmd_plan.DEFAULT_WORKLOAD``): its first line names the model and its shape, and says
    it is the default."""
    out = _cli(capsys, "--devices", "8", "--global-batch", "64", "--top", "1")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == (
        "workload: llama3-8b: 32 layers, hidden 4096, 32 heads (8 kv), MLP 14336 SwiGLU, "
        "sequence 8192, vocabulary 128256 (the default; --workload to change)")


def test_plan_without_hardware_plans_every_command_s_default(capsys):
    """`plan` defaulted to dgx-h100 while predict, sweep, decide, goal and the app default to
    `presets.DEFAULT_HARDWARE` (a2-highgpu-8g): predict's 'does not fit ... try scalesim plan'
    sent a user to another machine. One default now: the rows are those of --hardware
    DEFAULT_HARDWARE, and unlike dgx-h100's (80 GB, 3x the peak)."""
    from scalesim.cli.main import main
    from scalesim.presets import DEFAULT_HARDWARE

    argv = ["plan", "--global-batch", "64", "--devices", "8,16", "--top", "3", "--json"]
    assert main(argv) == 0
    default = json.loads(capsys.readouterr().out)["layouts"]
    assert main([*argv, "--hardware", DEFAULT_HARDWARE]) == 0
    assert json.loads(capsys.readouterr().out)["layouts"] == default
    assert main([*argv, "--hardware", "dgx-h100"]) == 0
    assert json.loads(capsys.readouterr().out)["layouts"] != default
    assert main(argv[:-1]) == 0
    out = capsys.readouterr().out
    assert f"hardware: {DEFAULT_HARDWARE} (" in out and "(the default;" in out, out


def test_plan_and_predict_count_a_preset_s_parameters_alike(capsys):
    """One preset is one model: ``plan --workload gpt-1.7b`` and ``predict --workload gpt-1.7b``
    of plan's best layout give the same step, because both count the shape's 1,652,230,656
    parameters (Narayanan's Table 1 prints 1.7B; predict used that label until session 15, and
    its data-parallel exchange was 3 % larger than plan's)."""
    from scalesim.presets import transformer_workload

    assert transformer_workload("gpt-1.7b").params == get_transformer("gpt-1.7b").param_count()
    out = _cli(capsys, "--workload", "gpt-1.7b", "--devices", "16", "--global-batch", "64",
               "--json", "--top", "40")
    assert out.returncode == 0, out.stderr
    # the best data-parallel layout (on the default's slow network an interleaved pp 2 is
    # 1.4 % faster since the sends hide behind the next chunk, docs/model.md §15)
    best = next(r for r in json.loads(out.stdout)["layouts"] if (r["tp"], r["pp"], r["cp"]) == (1, 1, 1))
    assert best["accumulation"] == 1
    predicted = run_cli_as_process(capsys, [
        "predict", "--workload", "gpt-1.7b", "--devices", "16", "--batch",
        str(best["micro_batch"]), "--strategy", f"zero{best['zero']}", "--shard-group",
        str(best["shard_group"]), "--recompute", best["recompute"], "--json"])
    assert predicted.returncode == 0, predicted.stderr
    row = json.loads(predicted.stdout)[0]
    assert row["step_time_s"] == pytest.approx(best["step_time_s"], rel=1e-9)
