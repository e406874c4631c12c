"""A chunk of the sweep that keeps no row is counted (session 50). ``iter_sweep`` skipped such
a chunk, so its drops were never added: `sweep --hardware dgx-a100 --workload gpt-1.7b
--devices 1,2 --tp-values 2 --bucket-mib-values 1,...,512 --intra-busbw-values 1,...,256`
(131,072 combinations a count, one chunk) wrote the 131,072 rows on 2 devices and said nothing
of the 131,072 on 1 device, where tp 2 does not divide 1 device.

By hand, one combination a chunk: --tp-values 1,2 on 1, 2 and 4 devices is 6 combinations in
grid order (1, 1), (1, 2), (2, 1), ...; the second, tp 2 on 1 device, is dropped alone in its
chunk."""

from __future__ import annotations

import numpy as np
import pytest
from cli_harness import run_cli

from scalesim import sweep as sweep_module
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario

ARGS = ["sweep", "--hardware", "dgx-a100", "--workload", "gpt-1.7b", "--tp-values", "1,2",
        "--devices", "1-4"]
NOTE = ("note: 1 combination dropped: 1 breaks a layout rule (e.g. tp 2 x pp 1 on 1 device: tp x "
        "pp does not divide the devices)")


@pytest.mark.parametrize("chunk_rows", [1, 2, 3, sweep_module.CHUNK_ROWS])
def test_the_cli_counts_a_drop_alone_in_its_chunk(capsys, monkeypatch, chunk_rows):
    monkeypatch.setattr(sweep_module, "CHUNK_ROWS", chunk_rows)
    code, out, err = run_cli(capsys, ARGS)
    assert code == 0, err
    assert [line.split(",")[0] for line in out.splitlines()[1:]] == ["1", "2", "2", "4", "4"]
    assert NOTE in err.splitlines()  # before, at 1 row a chunk: no note


def test_the_library_gives_the_rows_and_drops_of_one_chunk(monkeypatch):
    profile = resolve_profile(None, "dgx-a100", "gpt-1.7b")
    axes = {"devices": [1, 2, 4], "tp": [1, 2]}
    whole = sweep_module.sweep(profile, Scenario(devices=[1]), axes)
    monkeypatch.setattr(sweep_module, "CHUNK_ROWS", 1)
    chunked = sweep_module.sweep(profile, Scenario(devices=[1]), axes)
    assert (chunked.dropped, chunked.dropped_layout) == (whole.dropped, whole.dropped_layout) \
        == (1, 1)  # before: (0, 0) in chunks
    assert chunked.layout_example == whole.layout_example
    for name, column in whole.columns.items():
        assert chunked.columns[name].dtype == column.dtype, name
        assert np.array_equal(chunked.columns[name], column), name
