"""Datasheet rows of devices the tables missed or read as a sibling (``scalesim.presets``): H100
NVL's 94 GB, the L40S / L40 (Ada, PCIe), the V100 PCIe's and V100S's own peaks and bandwidth."""

from __future__ import annotations

import pytest

from scalesim.presets import GIB, device_memory_of, memory_bandwidth_of, peak_tflops_of


def test_h100_nvl_holds_94_gb():
    # nvidia-smi's "NVIDIA H100 NVL" states no size; the bare H100 row's 80 GB is the SXM's
    assert device_memory_of("NVIDIA H100 NVL")[0] == pytest.approx(94 * GIB)
    assert device_memory_of("NVIDIA H100 PCIe")[0] == pytest.approx(80 * GIB)


def test_l40s_and_l40():
    assert peak_tflops_of("NVIDIA L40S")[0] == pytest.approx(362.05)
    assert peak_tflops_of("NVIDIA L40S", fp8=True)[0] == pytest.approx(733.0)
    assert peak_tflops_of("NVIDIA L40")[0] == pytest.approx(181.05)
    assert peak_tflops_of("NVIDIA L40", fp8=True)[0] == pytest.approx(362.0)
    for name in ("NVIDIA L40S", "NVIDIA L40"):
        assert memory_bandwidth_of(name)[0] == pytest.approx(864.0)
        assert device_memory_of(name)[0] == pytest.approx(48 * GIB)


def test_v100_pcie_and_v100s():
    assert peak_tflops_of("Tesla V100-PCIE-16GB")[0] == pytest.approx(112.0)
    assert peak_tflops_of("Tesla V100S-PCIE-32GB")[0] == pytest.approx(130.0)
    assert memory_bandwidth_of("Tesla V100S-PCIE-32GB")[0] == pytest.approx(1134.0)
    # SXM2 / SXM3 boards keep the SXM2 row: "V100-SXM" without hyphens contains "v100s"
    for name in ("Tesla V100-SXM2-16GB", "Tesla V100-SXM3 32GB (DGX-2)", "Tesla V100-PCIE-32GB"):
        assert memory_bandwidth_of(name)[0] == pytest.approx(900.0), name
    assert peak_tflops_of("Tesla V100-SXM2-32GB")[0] == pytest.approx(125.0)
    assert peak_tflops_of("Tesla V100-SXM3 32GB (DGX-2)")[0] == pytest.approx(125.0)
