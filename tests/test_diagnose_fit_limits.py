"""What a diagnosis of measured runs may promise against what its own fit says (session 59 bug
hunt): remedies capped by the input supply any run waited on, a stated parameter count whose
gradient the runs would exchange faster than any link refused, and the typo hint of an ignored
column naming only a column the file lacks."""

from __future__ import annotations

import pytest

from scalesim.errors import ScalesimError
from scalesim.runs import parse_runs_text, unknown_columns_note
from scalesim.runs_diagnosis import diagnose_runs

# weak scaling at 1 sample a device: the input supply stalls 8 devices of one server (400
# samples/s where 4 gave 380), and 16 on two servers wait on the network instead (480)
INPUT_THEN_NETWORK = """devices,nodes,samples_per_s
1,1,100
2,1,198
4,1,380
8,1,400
16,2,480
"""

# steps of 10-20 ms at 1-16 devices
SHORT_STEPS = """devices,nodes,step_time_s,per_device_batch
1,1,0.010,1
2,1,0.0105,1
4,1,0.011,1
8,1,0.012,1
16,2,0.020,1
"""


@pytest.fixture(scope="module")
def input_then_network():
    return diagnose_runs(parse_runs_text(INPUT_THEN_NETWORK, "runs.csv"))


def test_no_remedy_promises_more_than_the_fitted_input_supply(input_then_network):
    """Was: the fitted profile kept its input supply only where the largest run waited on it,
    so at 16 devices, which wait on the network, the remedies ran with unlimited input: the
    network +216 %, accumulation +107 %, past the two servers' fitted supply of about 2 x 398 =
    796 samples/s (+66 % over 480). Every remedy now stays under 2 x supply / 480 - 1."""
    fit = input_then_network.details["fit"]
    assert fit["loader_limiting"]
    supply = fit["parameters"]["node_loader_samples_per_s"]
    ceiling = 2 * supply / 480.0 - 1
    assert 0.5 < ceiling < 0.8  # the fit's supply: about 398 samples/s a server
    gains = {r.key: r.gain for r in input_then_network.remedies}
    assert gains["interconnect"] > 0.3  # the network is what the 16 devices wait on
    assert all(g <= ceiling + 1e-6 for g in gains.values()), gains


def test_a_parameter_count_no_link_could_exchange_is_refused(capsys):
    """Was: --params 1e12 on steps of 10-20 ms fitted a link of about 877,779 GB/s inside a
    server, clipped in silence to the bounds' 100,000 GB/s: the remedies started from a link the
    fit never had (the network 'doubled' from 100,000 GB/s gained +0.0 %; accumulation +189 %,
    where 4 micro-steps of 10 ms compute in a 20 ms step give +100 % at most). Now one line."""
    runs = parse_runs_text(SHORT_STEPS, "runs.csv")
    with pytest.raises(ScalesimError, match=r"--params 1e\+12: these runs' steps exchange its "
                                            r"3725\.29 GiB of gradients .* past any link's "
                                            r"100,000 GB/s: check --params"):
        diagnose_runs(runs, 1e12)
    report = diagnose_runs(runs, 336e6)  # BERT-large's count: a link these runs could have
    assert report.details["fit"]["intra_busbw_GBps"] < 1e5


def test_an_ignored_columns_hint_names_only_a_column_the_file_lacks():
    """'notes' beside a 'nodes' column is no typo of it (was: 'notes (nodes?)'); beside none,
    it may be."""
    assert unknown_columns_note(["devices", "nodes", "samples_per_s", "notes"]).startswith(
        "ignored column(s): notes;")
    assert unknown_columns_note(["devices", "notes", "samples_per_s"]).startswith(
        "ignored column(s): notes (nodes?);")
