"""The jitter phase's NVML sampling, through a stand-in for the pynvml module (no GPU here:
the real NVML path is not exercised by these tests) and its analysis (scalesim.sources)."""

from __future__ import annotations

import sys
import time
import types

import pytest

from scalesim.sources import nvml_sampler


def fake_pynvml(clock_by_index: dict[int, int], throttled: set[int]):
    """A module with pynvml's names returning fixed readings per device index."""
    m = types.ModuleType("pynvml")
    m.NVML_CLOCK_SM, m.NVML_TEMPERATURE_GPU = 1, 0
    m.nvmlInit = lambda: None
    m.nvmlDeviceGetHandleByIndex = lambda i: i
    m.nvmlDeviceGetClockInfo = lambda h, kind: clock_by_index[h]
    m.nvmlDeviceGetMaxClockInfo = lambda h, kind: 1410
    m.nvmlDeviceGetTemperature = lambda h, kind: 88 if h in throttled else 65
    m.nvmlDeviceGetPowerUsage = lambda h: 250_000 if h in throttled else 390_000  # mW
    m.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(gpu=100)
    m.nvmlDeviceGetCurrentClocksThrottleReasons = lambda h: 0x40 if h in throttled else 0
    return m


def test_sampler_reads_each_field_and_the_analysis_names_the_hot_device(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml({0: 1410, 1: 1110}, {1}))
    per_rank = []
    for cuda_index in (0, 1):
        sampler, why = nvml_sampler.start_sampler(cuda_index, period_s=0.01)
        assert sampler is not None and why == "device health sampled with NVML"
        # until the thread has sampled 3 times (was a fixed 0.1 s, 10 periods: a busy machine
        # that left the thread off the cores that long would have failed it); a sampler that
        # never repeats still fails, at the bound
        deadline = time.monotonic() + 30
        while len(sampler.samples) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        samples = sampler.stop()
        assert len(samples) >= 3
        per_rank.append(samples)
    assert per_rank[1][0] == (1110.0, 1410.0, 88.0, 250.0, 100.0, 0x40)
    lines = nvml_sampler.health_lines(per_rank)
    assert lines[0] == ("device health (NVML, jitter phase): device 1 runs at 1,110 MHz of 1,410 "
                        "while the others hold 1,410; it throttles thermally at 88 °C "
                        "(hardware thermal slowdown in 100% of busy samples)")
    assert "rank 0: SM 1,410 of 1,410 MHz, 65 °C, 390 W, throttle reasons: none" in lines[1]


def test_without_a_gpu_or_the_bindings_it_says_why(monkeypatch):
    assert nvml_sampler.start_sampler(None)[1].startswith("device health not sampled: CPU run")
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    sampler, why = nvml_sampler.start_sampler(0)
    assert sampler is None and "pip install nvidia-ml-py" in why


@pytest.mark.parametrize("visible, index, expected", [
    ("", 1, 1), ("4,5,6", 1, 5), ("GPU-abc,GPU-def", 1, 1)])
def test_nvml_index_follows_cuda_visible_devices(monkeypatch, visible, index, expected):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert nvml_sampler.nvml_index(index) == expected
