"""A calibration stopped by SIGTERM says why as far as it can tell: with one process no other
rank exists, so the signal came from outside (a newcomer's `timeout`, the scheduler); it said
"another rank failed; torchrun names it" (session 18)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from scalesim.calibration.dist import DistContext, RankMonitor  # noqa: E402


def _monitor(tmp_path, world: int) -> RankMonitor:
    import torch

    ctx = DistContext(
        rank=0,
        world=world,
        local_rank=0,
        local_world=world,
        node=0,
        nodes=1,
        backend="gloo",
        device=torch.device("cpu"),
        launched=world > 1,
        run_id="r1",
    )
    monitor = RankMonitor(ctx, tmp_path, silent_s=5.0, phase_limit_s=100.0)
    monitor.folder.mkdir(parents=True, exist_ok=True)
    monitor.phase = "compute"
    return monitor


def test_one_process_sigterm_names_an_outside_sender_not_a_rank(tmp_path):
    text = _monitor(tmp_path, 1).sigterm_text()
    assert text.startswith("rank 0 stopped by SIGTERM in phase 'compute'")
    assert "from outside the run" in text and "--resume" in text
    assert "another rank" not in text


def test_several_processes_sigterm_still_points_at_torchrun(tmp_path):
    text = _monitor(tmp_path, 4).sigterm_text()
    assert "another rank failed; torchrun names it" in text
