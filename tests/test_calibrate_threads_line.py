"""Session 20: ``scalesim calibrate --nproc-per-node N`` says the torch threads its children
get only where they compute on CPU. It printed the line for every --device but 'cuda', so
--device auto (the default) on a machine with GPUs said '4 torch threads per process: ...'
of ranks that run on their GPUs (``options.ranks_on_cpu``, the rule ``dist.choose_device``
picks the device by). No GPU here: the decision is tested, and the launcher with torchrun and
CUDA's answer replaced."""

from __future__ import annotations

import pytest
from scalesim.calibration.options import THREADS_NOTE_ENV, ranks_on_cpu

from scalesim.cli import cmd_calibrate
from scalesim.cli.main import build_parser


def _never():
    raise AssertionError("CUDA asked about where the device is given")


@pytest.mark.parametrize("device, cuda, on_cpu", [
    ("cpu", _never, True), ("cuda", _never, False),
    ("auto", lambda: False, True), ("auto", lambda: True, False)])
def test_the_ranks_compute_on_cpu_for_cpu_and_for_auto_without_cuda(device, cuda, on_cpu):
    assert ranks_on_cpu(device, cuda) is on_cpu


@pytest.mark.parametrize("device, cuda, said", [
    ("cpu", False, True), ("auto", False, True), ("auto", True, False), ("cuda", True, False)])
def test_the_launcher_says_the_threads_only_of_cpu_ranks(monkeypatch, capsys, device, cuda, said):
    import scalesim.cli.torchrun_output as torchrun_output

    launched = []
    monkeypatch.setattr(torchrun_output, "run_filtered",
                        lambda command, env, err: launched.append(env) or 0)
    monkeypatch.setattr(cmd_calibrate, "_cuda_available", lambda: cuda)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    args = build_parser().parse_args(["calibrate", "--nproc-per-node", "2", "--device", device])
    assert cmd_calibrate.run(args) == 0 and len(launched) == 1
    note = launched[0][THREADS_NOTE_ENV]  # the children's line, chosen on every device
    assert " per process: " in note or note.startswith("the machine is busy")
    assert capsys.readouterr().out == (f"scalesim calibrate: note: {note}\n" if said else "")
