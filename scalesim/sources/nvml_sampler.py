"""Sample this process's GPU with NVML while the calibration's jitter phase runs (optional).

The same fields as the ``nvidia-smi --query-gpu`` CSV that ``scalesim diagnose --smi`` reads
(SM clock and its maximum, temperature, power, utilization, the clocks-throttle-reasons mask),
taken every ``period_s`` by a daemon thread through NVIDIA's maintained Python bindings
(``pip install nvidia-ml-py``, module ``pynvml``; an optional dependency: without it, or on a
CPU, the phase runs as before and the profile says the device health was not sampled). Rank 0
gathers every rank's samples and ``scalesim.sources.nvidia_smi.analyse`` names a device that
ran slower, with its clocks, heat and throttle reasons.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time

SAMPLE_PERIOD_S = 0.2


def nvml_index(cuda_index: int) -> int:
    """The NVML index of CUDA device ``cuda_index`` (CUDA_VISIBLE_DEVICES renumbers; NVML
    does not). Numeric lists only; UUIDs or unset: the CUDA index."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    ids = [v.strip() for v in visible.split(",") if v.strip()]
    if ids and all(v.isdigit() for v in ids) and cuda_index < len(ids):
        return int(ids[cuda_index])
    return cuda_index


class NvmlSampler:
    """A thread that samples one GPU; ``stop()`` returns the samples as tuples
    ``(sm_MHz, max_sm_MHz, temperature_C, power_W, utilization_pct, throttle_mask)``."""

    def __init__(self, nvml, handle, period_s: float = SAMPLE_PERIOD_S):
        self.nvml, self.handle, self.period_s = nvml, handle, period_s
        self.samples: list[tuple] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="scalesim-nvml", daemon=True)
        reasons = (getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
                   or nvml.nvmlDeviceGetCurrentClocksThrottleReasons)
        self._reasons = reasons
        self.max_clock = float(nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM))

    def _sample(self) -> tuple:
        n, h = self.nvml, self.handle
        return (float(n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM)), self.max_clock,
                float(n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU)),
                float(n.nvmlDeviceGetPowerUsage(h)) / 1000.0,
                float(n.nvmlDeviceGetUtilizationRates(h).gpu), int(self._reasons(h)))

    def _loop(self) -> None:
        while not self._stop.is_set():
            # a failed read loses one sample, not the phase
            with contextlib.suppress(Exception):
                self.samples.append(self._sample())
            self._stop.wait(self.period_s)

    def start(self) -> NvmlSampler:
        self._thread.start()
        return self

    def stop(self) -> list[tuple]:
        self._stop.set()
        self._thread.join(timeout=5 * self.period_s + 1.0)
        return list(self.samples)


def start_sampler(cuda_index: int | None, period_s: float = SAMPLE_PERIOD_S
                  ) -> tuple[NvmlSampler | None, str]:
    """A running sampler of CUDA device ``cuda_index``, or None and why not (one line)."""
    if cuda_index is None:
        return None, "device health not sampled: CPU run (no GPU clocks to read)"
    try:
        import pynvml as nvml
    except ImportError:
        return None, ("device health not sampled: NVML bindings missing (pip install "
                      "nvidia-ml-py), or record nvidia-smi --query-gpu and use scalesim "
                      "diagnose --smi")
    try:
        nvml.nvmlInit()
        handle = nvml.nvmlDeviceGetHandleByIndex(nvml_index(cuda_index))
        sampler = NvmlSampler(nvml, handle, period_s).start()
    except Exception as exc:  # noqa: BLE001 - NVML errors are many; say which and go on
        return None, f"device health not sampled: NVML failed ({type(exc).__name__}: {exc})"
    time.sleep(0)  # let the thread take its first sample before the work starts
    return sampler, "device health sampled with NVML"


def health_lines(per_rank: list[list[tuple] | None], source: str = "NVML, jitter phase"
                 ) -> list[str]:
    """Rank 0: every rank's samples (index = rank) -> the findings and one line per device."""
    from scalesim.sources.nvidia_smi import analyse

    samples = {rank: s for rank, s in enumerate(per_rank) if s}
    if not samples:
        return []
    report = analyse(samples, source)
    lines = [f"device health ({source}): {f}" for f in report.findings]
    for d in report.devices:
        reasons = ", ".join(f"{k} {v:.0%}" for k, v in d.reasons.items()) or "none"
        temp = f"{d.temperature_C:.0f} °C" if d.temperature_C is not None else "? °C"
        lines.append(f"device health: rank {d.index}: SM {d.sm_clock_MHz:,.0f} of "
                     f"{d.max_sm_clock_MHz or 0:,.0f} MHz, {temp}, "
                     f"{d.power_W or 0:.0f} W, throttle reasons: {reasons}")
    return lines
