"""Hopper device names in the datasheet tables (``scalesim.presets``): "GH200" contains
"H200", so a GH200 must meet its own rows before the H200's, and a GH200's name states its
superchip's CPU memory ("NVIDIA GH200 480GB": 480 GB LPDDR5X), not its GPU's."""

from __future__ import annotations

import pytest

from scalesim.figures import GIB_BYTES
from scalesim.presets import device_memory_of, peak_tflops_of, same_device


def test_a_gh200_is_not_read_as_an_h200_nvl_or_by_its_cpu_memory():
    # GH200 NVL2 (two superchips): each GPU is a full GH200, not the 835.5 TFLOP/s H200 NVL
    assert peak_tflops_of("NVIDIA GH200 NVL2")[0] == pytest.approx(989.0)
    assert peak_tflops_of("NVIDIA H200 NVL")[0] == pytest.approx(835.5)
    # the GPU's HBM by the GH200 datasheet: 96 GB HBM3, or 144 GB HBM3e
    assert device_memory_of("NVIDIA GH200 480GB")[0] == pytest.approx(96 * GIB_BYTES)
    assert device_memory_of("NVIDIA GH200 144G HBM3e")[0] == pytest.approx(144 * GIB_BYTES)
    # names that state their GPU's memory still win
    assert device_memory_of("NVIDIA H200 141GB")[0] == pytest.approx(141 * GIB_BYTES)
    assert device_memory_of("NVIDIA H100 80GB HBM3")[0] == pytest.approx(80 * GIB_BYTES)


def test_same_device_by_name_or_by_both_datasheet_rows():
    assert same_device("NVIDIA H100 80GB HBM3", "H100-SXM5 80GB")  # nvidia-smi and a preset
    assert same_device("NVIDIA H200", "nvidia h200")
    assert not same_device("NVIDIA H200", "NVIDIA H100 80GB HBM3")  # one peak, two bandwidths
    assert not same_device("NVIDIA H200", "NVIDIA H200 NVL")
    assert not same_device("NVIDIA H200", "NVIDIA GH200 480GB")
    assert not same_device("CPU: a", "CPU: b")  # unlisted: only the name tells


def test_h100_pcie_and_nvl_have_their_own_peaks():
    """The bare H100 row is the SXM board's (989): PCIe (756.5) and NVL (835.5) are lower by
    their datasheet, half the with-sparsity figures."""
    assert peak_tflops_of("NVIDIA H100 PCIe")[0] == pytest.approx(756.5)
    assert peak_tflops_of("NVIDIA H100 NVL")[0] == pytest.approx(835.5)
    assert peak_tflops_of("NVIDIA H100 NVL", fp8=True)[0] == pytest.approx(1670.5)
    assert peak_tflops_of("NVIDIA H100 80GB HBM3")[0] == pytest.approx(989.0)


def test_a_b200_is_not_read_as_a_gb200_and_amd_instinct_is_listed():
    """'GB200' contains 'B200': the GB200 rows come first, so a B200 gets the HGX B200's own
    datasheet figures (half the with-sparsity 4.5 / 9 PFLOPS, 180 GB, 7.7 TB/s) and a GB200
    keeps its NVL72 ones; MI300X / MI325X from AMD's data sheets."""
    from scalesim.presets import memory_bandwidth_of

    assert peak_tflops_of("NVIDIA B200")[0] == pytest.approx(2250.0)
    assert peak_tflops_of("NVIDIA B200", fp8=True)[0] == pytest.approx(4500.0)
    assert memory_bandwidth_of("NVIDIA B200")[0] == pytest.approx(7700.0)
    assert device_memory_of("NVIDIA B200")[0] == pytest.approx(180 * GIB_BYTES)
    assert peak_tflops_of("NVIDIA GB200")[0] == pytest.approx(2500.0)
    assert device_memory_of("GB200 NVL72")[0] == pytest.approx(186 * GIB_BYTES)
    assert peak_tflops_of("AMD Instinct MI300X")[0] == pytest.approx(1307.4)
    assert peak_tflops_of("AMD Instinct MI300X", fp8=True)[0] == pytest.approx(2614.9)
    assert memory_bandwidth_of("AMD Instinct MI325X")[0] == pytest.approx(6000.0)
    assert device_memory_of("AMD Instinct MI325X")[0] == pytest.approx(256 * GIB_BYTES)
