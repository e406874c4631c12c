"""The refusals said while a runs file was read (``runs.runs_from_records``) and
--gpus-per-node's (``runs.on_servers_of``) said "server" for a GB200 NVL72 rack though
``diagnose runs.csv --workload W --gpu GB200`` words its findings in racks (``Runs.nouns``): the
GPU was set on the runs only after both. The CLI parses --gpu before it reads the file, so
``load_runs`` takes it and the refusals follow it; other GPUs and no --gpu keep "server"."""

from __future__ import annotations

import pytest
from cli_harness import diagnose_file

from scalesim.errors import ScalesimError
from scalesim.runs import parse_runs_text

# run 2 repeats run 1 (72 GPUs in one node) at 100x its step time: a unit slip, refused
REPEATS = ("devices,nodes,step_time_s,global_batch\n72,1,10,576\n72,1,1000,576\n"
           "144,2,13,1152\n")
RACKS = "devices,nodes,step_time_s,global_batch\n72,1,10,576\n144,2,13,1152\n"
REPEATS_SAID = ("runs 1 and 2 measure one configuration (72 devices on 1 {}) at step_time_s 10 "
                "and step_time_s 1,000, 100x apart in step time")


@pytest.mark.parametrize(("gpu", "server"), [(("--workload", "llama3-8b", "--gpu", "GB200"), "rack"),
                                             (("--workload", "llama3-8b", "--gpu", "H100 SXM"),
                                              "server"),
                                             ((), "server")])
def test_a_repeat_in_other_units_is_refused_in_the_gpus_words(capsys, tmp_path, gpu, server):
    code, out, err = diagnose_file(capsys, tmp_path, REPEATS, *gpu)
    assert code != 0 and out == ""
    assert REPEATS_SAID.format(server) in err and err.count("\n") == 1


def test_gpus_per_node_below_a_runs_rack_is_refused_in_racks(capsys, tmp_path):
    code, _, err = diagnose_file(capsys, tmp_path, RACKS, "--workload", "llama3-8b", "--gpu",
                                 "GB200", "--gpus-per-node", "36")
    assert code != 0
    assert "--gpus-per-node 36: the run on 72 devices over 1 rack put 72 on each; give at " \
           "least 72" in err


def test_the_gpu_read_with_the_runs_is_kept_and_a_bad_one_refused():
    assert parse_runs_text(RACKS, "r.csv", "GB200").nouns.server == "rack"
    assert parse_runs_text(RACKS, "r.csv").nouns.server == "server"
    with pytest.raises(ScalesimError, match=r"^gpu: expected a string, got int$"):
        parse_runs_text(RACKS, "r.csv", 5)
