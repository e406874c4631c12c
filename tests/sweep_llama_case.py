"""The sweep tests' shared case: Llama 3 8B on the 8 GPUs of a DGX H100, global batch 64 in 8
micro-steps, as a library scenario (``BASE``) and as the CLI's flags (``CLI``)."""

from __future__ import annotations

from scalesim.schemas import Scenario

BASE = Scenario(devices=[8], global_batch=64, accumulation=8)
CLI = ["sweep", "--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices", "8",
       "--global-batch", "64", "--accumulation", "8"]
