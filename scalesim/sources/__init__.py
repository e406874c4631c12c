"""Data users already have, read into scalesim's profile and diagnosis.

- ``nccl_tests``: ``all_reduce_perf`` / ``reduce_scatter_perf`` / ``all_gather_perf`` logs -> link
  levels (alpha, beta), fitted as the calibration's collectives phase fits its own sweep;
- ``nccl_tests_json``: nccl-tests' ``-J`` JSON report as the log it stands for;
- ``nvidia_smi``: ``nvidia-smi topo -m`` -> topology; ``nvidia-smi --query-gpu ... --format=csv``
  -> per-device clocks, temperature, power and throttle reasons (``scalesim diagnose --smi``);
- ``trace_compute``: torch.profiler (Kineto) traces of the user's job -> compute curve points,
  backward share, communication kernels and sizes, data-loader waits, per-rank spread;
- ``nvml_sampler``: the same device-health fields sampled through NVML during calibration;
- ``calibrate_from``: ``scalesim calibrate --from-*``: write or update a profile atomically from
  those sources, other parts untouched;
- ``provenance``: where each number of a profile came from (CLI and app).
"""
