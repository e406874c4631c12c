"""Session 41: a network's bus bandwidth is said as the job reaches it, the whole server's after.

A job on fewer GPUs of each server than it holds reaches only the NICs next to its GPUs
(``presets.partial_server_inter_busbw_GBps``: g of G GPUs reach ceil(g x N / G) of N NICs). The
titles said the whole servers' figures: decide's network option on one GPU of each DGX-1 read
'48 -> 192 GB/s busbw', where its one GPU goes from 12 (1 of 4 EDR NICs: 48 / 4) to 24 (1 of 8
HDR NICs: 192 / 8). One helper (``figures.busbw_words``) now words decide's option, goal's
networks, the remedies' titles and the app's cards: the job's figure first, the whole server's in
parentheses. Figures by hand: DGX-1 4 x 100 Gb/s x 0.96 = 48 GB/s, HDR 8 x 200 x 0.96 = 192,
EFA 4 x 100 x 0.96 = 48; a2-highgpu-8g's one 100 Gb/s NIC 6.8 (every GPU count reaches it).
"""

from __future__ import annotations

from cli_harness import whole_lines

from scalesim.cli.main import main
from scalesim.decision import decide
from scalesim.figures import busbw_words
from scalesim.presets import get_hardware, get_workload
from scalesim.profiles import default_profile, profile_from_presets
from scalesim.remedies import rank_remedies
from scalesim.schemas import Scenario

ONE_OF_8 = "1 of 8 GPUs per server"


def _dgx1():
    return profile_from_presets(get_hardware("dgx1-v100"), get_workload("bert-large"))


def test_the_words_put_the_jobs_figure_first_and_the_whole_servers_in_parentheses():
    assert busbw_words(192.0, 24.0, ONE_OF_8) == \
        "24 GB/s busbw for the job's 1 of 8 GPUs per server (whole server 192)"
    assert busbw_words((48.0, 192.0), (12.0, 24.0), ONE_OF_8) == \
        "12 -> 24 GB/s busbw for the job's 1 of 8 GPUs per server (whole server 48 -> 192)"
    assert busbw_words((6.8, 48.0), (6.8, 12.0), ONE_OF_8, "(a preset, not measured)") == (
        "6.8 (a preset, not measured) -> 12 GB/s busbw for the job's 1 of 8 GPUs per server "
        "(whole server 6.8 -> 48)")
    # whole servers, or a job that reaches it all: the figure alone, as before
    assert busbw_words((6.8, 48.0), (6.8, 48.0), "") == "6.8 -> 48 GB/s busbw"
    assert busbw_words((6.8, 48.0), (6.8, 48.0), ONE_OF_8) == "6.8 -> 48 GB/s busbw"
    assert busbw_words(48.0) == "48 GB/s busbw"


def test_decides_network_option_on_one_gpu_of_each_dgx1_says_12_to_24():
    profile, scenario = _dgx1(), Scenario(devices=[16], devices_per_node=1)
    (row,) = [o for o in decide(profile, scenario, 16).options if o.key == "network"]
    assert row.title == ("Network: 8 x 200 Gb/s HDR InfiniBand (as in a DGX A100), 12 -> 24 GB/s "
                         "busbw for the job's 1 of 8 GPUs per server (whole server 48 -> 192), "
                         "needs 8 NICs per server (this server has 4)")


def test_on_whole_servers_the_option_keeps_its_figures():
    (row,) = [o for o in decide(default_profile(), Scenario(devices=[16]), 16).options
              if o.key == "network"]
    assert row.title == "Network: 4 x 100 Gb/s EFA (AWS p4d.24xlarge), 6.8 -> 48 GB/s busbw"


def test_efa_on_one_gpu_of_a2_highgpu_says_6_8_to_12():
    """Today's one NIC: the GPU reaches all 6.8; EFA's four: one of them, 48 / 4 = 12."""
    row = next(o for o in decide(default_profile(), Scenario(devices=[16], devices_per_node=1),
                                 16).options if o.key == "network")
    assert row.title.endswith("6.8 -> 12 GB/s busbw for the job's 1 of 8 GPUs per server (whole "
                              "server 6.8 -> 48)")


def test_the_remedy_on_4_of_8_gpus_of_a_dgx1_reaches_half_of_hdr():
    """4 of 8 GPUs: ceil(4 x 4 / 8) = 2 of 4 EDR NICs, 24; ceil(4 x 8 / 8) = 4 of 8 HDR, 96."""
    _, ranked = rank_remedies(_dgx1(), Scenario(devices=[16], devices_per_node=4), 16)
    row = next(r for r in ranked if r.key == "interconnect")
    assert row.title == ("Faster inter-server network: 8 x 200 Gb/s HDR InfiniBand (24 -> 96 GB/s "
                         "busbw for the job's 4 of 8 GPUs per server (whole server 48 -> 192))")


def test_goals_networks_say_what_the_job_reaches(capsys):
    args = ["goal", "--hardware", "dgx1-v100", "--gpus-per-node", "1", "--train-samples", "2e8",
            "--deadline", "10h", "--budget", "5000", "--max-devices", "32"]
    assert main(args) == 0
    out = whole_lines(capsys.readouterr().out)  # each table row on one line again
    assert ("(8 x 200 Gb/s, 24 GB/s busbw for the job's 1 of 8 GPUs per server (whole server "
            "192), 6 us, needs 8 NICs per server") in out
    # NDR: 8 x 400 x 0.96 = 384, one NIC of eight: 48
    assert ("(8 x 400 Gb/s, 48 GB/s busbw for the job's 1 of 8 GPUs per server (whole server "
            "384), 6 us") in out


def test_the_apps_card_says_what_the_job_reaches():
    """bert-large on 2 dgx1-v100 servers, one GPU each, today under ZeRO-2 (the planner's
    layout there): the card's three options are the added server, the settings and the network.
    Under DDP (session 46) the layout change ddp -> zero2, +3.33 % since FSDP ZeRO-2's step
    sweeps 28 B a parameter, outranks the network's +3.26 % and takes its place on the card."""
    from scalesim.app.plan import make_plan
    from scalesim.app.state import default_state, preset_profile

    state = default_state().model_copy(update={"hw": "dgx1-v100", "dpn": 1, "strat": "zero2"})
    plan = make_plan(preset_profile(state), state)
    (row,) = [o for o in plan.decision.options if o.key == "network"]
    # the page's arrow since session 51 (the CLI's '12 -> 24', '48 -> 192')
    assert "12 → 24 GB/s busbw for the job's 1 of 8 GPUs per server (whole server 48 → 192)" \
        in row.title


def test_a_network_below_the_cards_three_still_says_what_the_job_reaches():
    """Under DDP the same run's layout change (+3.33 %) outranks the network (+3.26 %): the
    card's note that names the options not shown says the network's reach as its row would."""
    from scalesim.app.plan import make_plan
    from scalesim.app.state import default_state, preset_profile

    state = default_state().model_copy(update={"hw": "dgx1-v100", "dpn": 1})
    plan = make_plan(preset_profile(state), state)
    assert "network" not in [o.key for o in plan.decision.options]
    (rest,) = [n for n in plan.decision.notes if n.startswith("also faster than today")]
    assert ("Network: 8 x 200 Gb/s HDR InfiniBand (as in a DGX A100), 12 → 24 GB/s busbw for "
            "the job's 1 of 8 GPUs per server (whole server 48 → 192)") in rest  # page's arrow
