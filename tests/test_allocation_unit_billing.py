"""Billing reads the allocation unit where the hardware lists no instance shapes (docs/model.md
§9, §12; docs/reliability.md, session 44): a GB200 NVL72 job of 128 GPUs rents 32 compute
trays, not two 72-GPU racks (144), in predict's cost, goal's money and plan's cost ranking;
every hardware whose unit is its server bills as before (12 GPUs of 8-GPU servers: 16)."""

import json
import subprocess
import sys

import pytest

from scalesim.billing import billed_devices, billing_words, job_sizes
from scalesim.presets import HARDWARE

GB200 = HARDWARE["gb200-nvl72"]


def _cli(*args):
    out = subprocess.run([sys.executable, "-m", "scalesim.cli.main", *args],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_whole_trays_are_billed_where_no_shape_is_listed():
    sizes = job_sizes(None, GB200.instance_sizes, 72, allocation=GB200.allocation_devices)
    assert sizes == [4]
    assert billed_devices([32, 72, 128, 256], 72, sizes).tolist() == [32, 72, 128, 256]
    assert billed_devices([32, 72, 128, 256], 72).tolist() == [72, 72, 144, 288]  # was


@pytest.mark.parametrize("name", ["dgx-h100", "dgx-a100", "a2-highgpu-8g", "dgx1-v100"])
def test_a_server_as_its_own_unit_bills_as_before(name):
    hw = HARDWARE[name]
    before = job_sizes(None, hw.instance_sizes, hw.devices_per_node)
    assert job_sizes(None, hw.instance_sizes, hw.devices_per_node,
                     allocation=hw.allocation_devices) == before
    counts = [1, 4, 8, 12, 16, 24]
    assert (billed_devices(counts, hw.devices_per_node, before).tolist()
            == billed_devices(counts, hw.devices_per_node, hw.instance_sizes).tolist())


def test_predict_bills_128_gb200_gpus_as_32_trays_and_says_so():
    rows = json.loads(_cli("predict", "--workload", "gpt-7b", "--hardware", "gb200-nvl72",
                           "--devices", "32,128,256", "--strategy", "zero1", "--price", "10",
                           "--json"))
    assert [r["billed_devices"] for r in rows] == [32, 128, 256]  # was 72, 144, 288
    # cost = billed x hours x price: 128 GPUs for the time to train
    r = rows[1]
    assert r["cost_usd"] == pytest.approx(128 * r["time_to_train_s"] / 3600 * 10, rel=1e-9)
    assert "billed per allocation unit of 4 GPUs" in billing_words(72, [4], "GB200")
    assert billing_words(8, None, "H100-SXM5 80GB") == "billed per whole server of 8 GPUs"


def test_plan_ranks_by_cost_on_trays():
    out = json.loads(_cli("plan", "--workload", "llama3-70b", "--hardware", "gb200-nvl72",
                          "--devices", "128", "--global-batch", "256", "--rank", "cost",
                          "--json", "--top", "3"))
    assert {row["billed_devices"] for row in out["layouts"]} == {128}  # was 144
