"""Cost as a cloud bills it: whole instances of the shapes it rents, not the GPUs a run uses."""

from __future__ import annotations

import numpy as np
import pytest
from cli_harness import run_cli

from scalesim.billing import billed_devices
from scalesim.decision import decide
from scalesim.errors import ScalesimError
from scalesim.goal import seek
from scalesim.plan import plan
from scalesim.predict import predict
from scalesim.presets import HARDWARE, PRICES, get_transformer
from scalesim.profiles import load_hardware, load_workload, profile_from_presets
from scalesim.remedies import rank_remedies
from scalesim.schemas import Hardware, Scenario
from scalesim.training_time import cost_usd, resolve_goal


def _a100_profile():
    return profile_from_presets(load_hardware("dgx-a100"), load_workload("bert-large"))


def test_whole_servers_by_hand():
    # 12 GPUs of 8-GPU servers rented whole bill 2 servers; 1, 4 and 8 bill one
    assert billed_devices([1, 4, 8, 12, 16, 17], 8).tolist() == [8, 8, 8, 16, 16, 24]
    # servers of 4 GPUs each rented as an 8-GPU instance (a run using half of each)
    assert billed_devices([4, 8, 12], 4, [8]).tolist() == [8, 16, 24]


def test_instance_shapes_by_hand():
    # Google Cloud a2-highgpu 1g/2g/4g/8g: 3 GPUs need a 4g, 12 = 8g + 4g, 13 = 8g + 8g
    sizes = [1, 2, 4, 8]
    assert billed_devices([1, 3, 5, 12, 13], 8, sizes).tolist() == [1, 4, 8, 12, 16]
    # AWS p3 (1, 4, 8 GPUs): 2 GPUs need a p3.8xlarge
    assert billed_devices([2, 6, 10], 8, [1, 4, 8]).tolist() == [4, 8, 12]
    # a GPU cloud that rents any count bills the devices used
    assert billed_devices([1, 3, 12], 8, [1]).tolist() == [1, 3, 12]
    # vectorised: one call, any shape of array
    grid = np.arange(1, 33).reshape(4, 8)
    assert billed_devices(grid, 8).shape == (4, 8)


def test_presets_say_how_they_bill():
    assert HARDWARE["dgx-a100"].instance_sizes is None  # p4de.24xlarge only
    assert HARDWARE["dgx-h100"].instance_sizes is None  # p5.48xlarge
    assert HARDWARE["dgx1-v100"].instance_sizes == [1, 4, 8]  # p3.2x/8x/16xlarge
    assert HARDWARE["a2-highgpu-8g"].instance_sizes == [1, 2, 4, 8]
    assert "billed whole" in PRICES["dgx-a100"].describe()
    assert "also rented as 1, 4, 8 GPUs" in PRICES["dgx1-v100"].describe()


def test_bad_shapes_are_refused_naming_the_field():
    data = HARDWARE["dgx-a100"].model_dump()
    with pytest.raises(ValueError, match="instance_sizes: 16 GPUs is more than a server's 8"):
        Hardware.model_validate({**data, "instance_sizes": [1, 16]})
    with pytest.raises(ValueError, match="instance_sizes"):
        Scenario(instance_sizes=[0])
    with pytest.raises(ScalesimError, match="instance_sizes"):
        billed_devices(4, 8, [])
    assert Scenario(instance_sizes=[8, 1, 4, 1]).instance_sizes == [1, 4, 8]


def test_predict_costs_whole_servers_and_twelve_of_sixteen_is_not_cheaper():
    profile = _a100_profile()
    # 12 GPUs: 6 in each of two 8-GPU servers; 16: both servers full
    scenario = Scenario(devices=[12], devices_per_node=6, train_samples=1e9,
                        price_per_device_hour=5.0)
    twelve, = predict(profile, scenario)
    sixteen, = predict(profile, scenario.model_copy(update={"devices": [16],
                                                             "devices_per_node": 8}))
    assert (twelve.billed_devices, sixteen.billed_devices) == (16, 16)
    assert twelve.cost_usd == pytest.approx(twelve.time_to_train_s / 3600 * 16 * 5.0)
    # same bill per hour, 16 finish sooner: 12 of 16 GPUs is no longer cheaper
    assert sixteen.cost_usd < twelve.cost_usd
    # priced per GPU, 12 GPUs (less communication per sample) are cheaper, as before
    per_gpu = predict(profile, scenario.model_copy(update={"instance_sizes": [1]}))[0]
    assert per_gpu.billed_devices == 12
    assert per_gpu.cost_usd < sixteen.cost_usd


def test_goal_resolves_the_billing_and_costs_follow_it():
    profile = _a100_profile()
    goal = resolve_goal(profile, Scenario(price_per_device_hour=2.0, devices_per_node=4))
    assert goal.server_devices == 4 and goal.instance_sizes == (8,)
    # 6 devices, 4 per server: two servers used, each an 8-GPU instance at 2 USD per GPU-hour
    assert goal.usd_per_hour(6).tolist() == 32.0
    assert float(cost_usd(goal, 3600.0, 6)) == 32.0
    per_gpu = resolve_goal(profile, Scenario(price_per_device_hour=2.0, instance_sizes=[1]))
    assert float(cost_usd(per_gpu, 1800.0, 6)) == 6.0


def test_plan_ranks_by_billed_device_hours():
    shape = get_transformer("gpt-1.7b")
    rows = plan(shape, HARDWARE["dgx-a100"], [4, 8], 64, rank_by="cost", top=None)
    four = [r for r in rows if r.devices == 4]
    assert four and all(r.billed_devices == 8 for r in four)
    r = four[0]
    assert r.device_hours_per_million_samples == pytest.approx(8 / r.samples_per_s * 1e6 / 3600)
    # a half-empty server bills the whole one: 8 GPUs are cheaper per sample than 4
    best = rows[0]
    assert best.devices == 8


def test_seek_costs_billed_devices():
    profile = _a100_profile()
    base = Scenario(train_samples=2e9, critical_batch_size=4096.0, price_per_device_hour=4.0)
    answer = seek(profile, base, 30 * 86400.0, 1e7, max_devices=64)
    for p in answer.front:
        billed = int(billed_devices(p.devices, 8))
        assert billed % 8 == 0
        assert p.cost_usd == pytest.approx(p.time_s / 3600 * billed * 4.0, rel=1e-9)


def test_remedies_and_decision_cost_whole_servers():
    profile = _a100_profile()
    scenario = Scenario(devices=[4], train_samples=1e9, price_per_device_hour=3.0)
    now, remedies = rank_remedies(profile, scenario, 4)
    priced = [r for r in remedies if r.cost_usd is not None and r.time_s is not None]
    assert priced
    for r in priced:
        assert r.cost_usd == pytest.approx(r.time_s / 3600 * 8 * 3.0, rel=1e-9)
    card = decide(profile, scenario, 4)
    assert card.now.usd_per_hour == pytest.approx(8 * 3.0)  # 4 GPUs of an 8-GPU instance
    assert "billed per whole server of 8 GPUs" in card.now.price_source


def test_cli_instance_sizes_flag(capsys):
    code, out, err = run_cli(capsys, ["predict", "--instance-sizes", "0"])
    assert code == 2 and "--instance-sizes" in err and len(err.strip().splitlines()) == 1


def test_plan_cli_instance_sizes(capsys):
    import json

    argv = ["plan", "--workload", "gpt-1.7b", "--hardware", "dgx-a100", "--devices", "4,8",
            "--global-batch", "64", "--rank", "cost", "--top", "100000", "--json"]
    code, out, _ = run_cli(capsys, argv)
    whole = json.loads(out)["layouts"]
    code2, out2, _ = run_cli(capsys, argv + ["--instance-sizes", "1"])
    per_gpu = json.loads(out2)["layouts"]
    assert code == code2 == 0
    assert {r["billed_devices"] for r in whole if r["devices"] == 4} == {8}
    assert {r["billed_devices"] for r in per_gpu if r["devices"] == 4} == {4}


def test_a_shape_larger_than_the_server_is_one_line(capsys):
    code, _, err = run_cli(capsys, ["predict", "--hardware", "dgx-a100", "--train-samples", "1e9",
                                    "--instance-sizes", "16"])
    assert code == 2 and err.count("\n") == 1 and "instance_sizes: 16 GPUs" in err, err
    code, _, err = run_cli(capsys, ["plan", "--workload", "gpt-1.7b", "--hardware", "dgx-a100",
                                    "--devices", "8", "--global-batch", "64",
                                    "--instance-sizes", "16"])
    assert code == 2 and err.count("\n") == 1 and "instance_sizes" in err, err


def test_a_calibrated_smaller_server_keeps_the_shapes_that_fit():
    from scalesim.billing import sizes_within

    assert sizes_within([1, 2, 4, 8], 2) == [1, 2]
    assert sizes_within(None, 2) is None and sizes_within([8], 2) is None


def test_billing_words_say_the_instance_not_a_server_of_its_size():
    """``--instance-sizes 3`` on 8-GPU servers bills 3-GPU instances (8 GPUs: 9 billed); the
    words said "billed per whole server of 3 GPUs", a server the hardware does not have."""
    from scalesim.billing import billing_words

    assert billing_words(8, None) == billing_words(8, [8]) == "billed per whole server of 8 GPUs"
    assert billing_words(8, [1]) == "billed per GPU"
    three = billing_words(8, [3])
    assert "server of 3" not in three and "instance of 3 GPUs" in three
    assert billed_devices([8], 8, [3])[0] == 9  # the arithmetic; job_sizes refuses the shape
    # 4 GPUs used of an 8-GPU server: still the whole server
    assert billing_words(4, [8]) == "billed per whole server of 8 GPUs"


def test_cli_instance_sizes_that_do_not_divide_a_server_are_refused_as_a_files_are(capsys):
    """``--instance-sizes 3`` on 8-GPU servers was accepted and billed 8 GPUs as 9, while a
    hardware file with ``instance_sizes: [3]`` was refused (session 31): one rule for both
    now (``billing.job_sizes``), on every command that bills."""
    for argv in (["predict"], ["decide"], ["plan", "--global-batch", "512"],
                 ["goal", "--train-samples", "1e9", "--deadline", "1d", "--budget", "1e6"]):
        code, _, err = run_cli(capsys, argv + ["--instance-sizes", "3,8"])
        assert code == 2 and err.count("\n") == 1, (argv, err)
        assert "instance_sizes: 3 GPUs does not divide a server's 8" in err, (argv, err)
    code, _, _ = run_cli(capsys, ["predict", "--instance-sizes", "1,2,4,8"])
    assert code == 0


def _cpu_profile():
    """The default profile as a `calibrate` on CPUs writes it: device 'CPU: AMD EPYC', hosts of
    2 processes, no price and no instance shapes."""
    from scalesim.profiles import default_profile

    base = default_profile()
    hw = base.hardware.model_copy(update={"device_name": "CPU: AMD EPYC", "devices_per_node": 2,
                                          "price_per_device_hour": None, "instance_sizes": None})
    return base.model_copy(update={"hardware": hw})


def _cpu_profile_file(tmp_path):
    path = tmp_path / "cpu.json"
    path.write_text(_cpu_profile().model_dump_json())
    return path


def test_a_cpu_calibrations_devices_are_billed_as_its_processes_with_the_price_said(capsys):
    """`decide --profile cpu.json` (a `calibrate` on CPUs: device 'CPU: AMD EPYC') said
    'billed per whole server of 2 GPUs' of CPU processes, and without --price only 'no price
    known'. Now the devices are said to be the calibration's processes, and that no GPU price
    is assumed (session 17); a host of processes since session 18 (``device_nouns``)."""
    from scalesim.billing import billing_words
    from scalesim.decision import _price_source

    assert billing_words(2, None, "CPU: AMD EPYC") == (
        "billed per whole host of 2 processes")
    assert billing_words(2, None, "NVIDIA H100 80GB HBM3") == "billed per whole server of 2 GPUs"
    assert billing_words(8, [1], "CPU: x") == "billed per process"
    cpu = _cpu_profile()
    scenario = Scenario(devices=[4], train_samples=1e6)
    assert _price_source(cpu, scenario) == (
        "no price known: a CPU calibration's devices (CPU: AMD EPYC) have no cloud GPU price and "
        "none is assumed (money left blank): enter a price per process-hour, an hour of one CPU "
        "process")
    given = scenario.model_copy(update={"price_per_device_hour": 0.1})
    assert _price_source(cpu, given) == (
        "price per process-hour given by the user, billed per whole host of 2 processes")
    assert "GPUs" not in _price_source(cpu, given)


def test_decides_price_note_names_a_cpu_calibrations_process_hour(tmp_path, capsys):
    """`decide --profile cpu.json` without --price said 'price (every row): ... enter a price
    per process-hour' and then 'note: enter a price per device-hour (--price ...)': the same
    advice in two nouns (session 44). The note takes the profile's noun; a GPU's stays."""
    path = _cpu_profile_file(tmp_path)
    code, out, err = run_cli(capsys, ["decide", "--profile", str(path), "--devices", "2,4",
                                      "--train-samples", "1e6"])
    assert code == 0, err
    assert "device-hour" not in out
    assert "note: enter a price per process-hour (--price on the command line)" in out
    code, out, err = run_cli(capsys, ["decide", "--hardware", "dgx-h200", "--devices", "16",
                                      "--train-samples", "1e9"])
    assert code == 0, err
    assert "note: enter a price per device-hour (--price on the command line)" in out


def test_predicts_cost_line_of_a_cpu_calibration_reads_as_one_sentence(tmp_path, capsys):
    """The cost line of `predict --profile cpu.json --price` ended with two parentheses in a
    row, '(CPU processes of this calibration) (--instance-sizes)'; the flag is said once, after
    the billing words (session 17)."""
    path = _cpu_profile_file(tmp_path)
    code, out, err = run_cli(capsys, ["predict", "--profile", str(path), "--devices", "2,4",
                                      "--train-samples", "1e6", "--price", "0.1"])
    assert code == 0, err
    (line,) = [x for x in out.splitlines() if x.startswith("cost:")]
    # the billed count and the price's hour in the profile's nouns, as its table's column
    # (session 20)
    assert line == ("cost: billed processes x hours x $0.1 per process-hour, billed per whole "
                    "host of 2 processes; set with --instance-sizes")


def test_a_shape_as_large_as_the_gpus_put_on_a_server_is_taken_on_every_command(capsys):
    """``--gpus-per-node 16 --instance-sizes 4,16`` on 8-GPU servers: the goal's billing took
    the 16-GPU shape (``job_sizes`` checks it against the GPUs used per server), while the rows
    (``layout_predict.scenario_hardware``) checked it against the hardware's 8, so predict,
    decide, sweep and plan refused it: "16 GPUs is more than a server's 8" (session 46). The
    shape is taken: 4 devices bill one 4-GPU instance (8 without shapes: the hardware's server),
    16 and 32 whole 16-GPU instances."""
    import json

    used = ["--workload", "gpt-1.7b", "--hardware", "dgx-h100", "--gpus-per-node", "16"]
    for argv in (["predict", "--devices", "4,16,32"], ["decide", "--devices", "16"],
                 ["sweep", "--devices", "4,16,32"],
                 ["plan", "--devices", "16", "--global-batch", "512"]):
        code, _, err = run_cli(capsys, argv + used + ["--instance-sizes", "4,16"])
        assert code == 0, (argv, err)
    priced = ["predict", "--devices", "4,16,32", *used, "--price", "2", "--train-samples", "1e9",
              "--json"]
    code, out, err = run_cli(capsys, priced + ["--instance-sizes", "4,16"])
    assert code == 0 and [r["billed_devices"] for r in json.loads(out)] == [4, 16, 32], err
    code, out, _ = run_cli(capsys, priced)
    assert [r["billed_devices"] for r in json.loads(out)] == [8, 16, 32]
    # a shape larger than both the hardware's server and the GPUs used on one is still refused
    code, _, err = run_cli(capsys, ["predict", *used, "--instance-sizes", "32"])
    assert code == 2 and err.count("\n") == 1 and "instance_sizes: 32 GPUs" in err, err


def test_a_shape_larger_than_the_server_says_how_to_fix_it(capsys):
    """The refusal of a shape larger than a server named the value and stopped ("16 GPUs is
    more than a server's 8 (devices_per_node)"), where its sibling for a shape that does not
    divide the server says what to give (session 46): both now say it, on the flag and in a
    hardware file alike (``billing.larger_than_server``)."""
    fix = "give shapes of at most 8 GPUs that divide it"
    for argv in (["predict"], ["decide"], ["plan", "--global-batch", "512"]):
        code, _, err = run_cli(capsys, argv + ["--instance-sizes", "1,16"])
        assert code == 2 and err.count("\n") == 1, (argv, err)
        assert "instance_sizes: 16 GPUs is more than a server's 8" in err and fix in err, err
    data = HARDWARE["dgx-a100"].model_dump(mode="json")
    with pytest.raises(ValueError, match=fix):
        Hardware.model_validate({**data, "instance_sizes": [1, 16]})
