"""Where no plan fits, goal's sentence said 'none of the layouts searched fits' in given mode
too (session 43), where no layout was searched: each plan kept the scenario's. It now says the
layout kept as given, in the CLI and the app alike (``GoalAnswer.no_fit_words``, which
``GoalAnswer.sentence`` writes and the app's Goal tab shows)."""

from __future__ import annotations

from app_harness import open_app
from cli_harness import run_cli

from scalesim.goal import seek
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario, ScenarioLayout

GOAL = ["--train-samples", "1e9", "--price", "3", "--deadline", "720h", "--budget", "1000000"]


def _first_line(capsys, args: list[str]) -> str:
    code, out, err = run_cli(capsys, ["goal", *args, *GOAL])
    assert code == 0, err
    return out.splitlines()[0]


def test_given_says_the_layout_it_kept_and_search_the_layouts_searched(capsys):
    assert _first_line(capsys, ["--workload", "llama3-8b", "--max-devices", "64", "--layout",
                                "given"]) == (
        "No plan runs: nothing fits in device memory at the layout kept as given (tp 1 x pp 1, "
        "recompute none).")
    assert _first_line(capsys, ["--workload", "llama3-70b", "--tp", "2", "--pp", "2",
                                "--max-devices", "8"]) == (
        "No plan runs: nothing fits in device memory at the layout kept as given (tp 2 x pp 2, "
        "recompute none).")
    # searched: the layouts were the planner's, and none of them fits
    assert _first_line(capsys, ["--workload", "gpt-145.6b", "--max-devices", "8"]) == (
        "No plan runs: none of the layouts searched fits in device memory.")


def test_a_parameter_count_workload_keeps_data_parallelism():
    profile = resolve_profile(None, "a2-highgpu-8g", "bert-large")
    base = Scenario(train_samples=1e9, price_per_device_hour=3.0, micro_batch=100000)
    answer = seek(profile, base, 720 * 3600.0, 1e6, 8)
    assert (answer.layout, answer.kept_layout, answer.closest) == ("given", "data parallel", None)
    assert answer.sentence == ("No plan runs: nothing fits in device memory at the layout kept "
                               "as given (data parallel).")
    assert answer.to_dict()["kept_layout"] == "data parallel"
    # full recompute given: the sentence names it as the note does
    profile = resolve_profile(None, "a2-highgpu-8g", "gpt-145.6b")
    split = Scenario(train_samples=1e9, price_per_device_hour=3.0,
                     layout=ScenarioLayout(recompute="full"))
    assert seek(profile, split, 720 * 3600.0, 1e6, 8).no_fit_words == (
        "nothing fits in device memory at the layout kept as given (tp 1 x pp 1, recompute full)")


def test_the_app_says_the_clis_sentence_with_the_layout_in_its_labels(capsys):
    """The same sentence; the kept layout (``goal.kept_said``) in the sidebar's labels where
    the CLI writes its notation (session 50)."""
    at = open_app({"v": "18", "wl": "llama3-8b", "train": "1000000000", "price": "3", "dl": "720",
                   "bud": "1000000", "gmax": "64", "glay": "given", "tab": "goal"})
    (box,) = [w.value for w in at.warning if w.value.startswith("No plan runs")]
    cli = _first_line(capsys, ["--workload", "llama3-8b", "--max-devices", "64", "--layout",
                               "given"])
    said = "No plan runs: nothing fits in device memory at the layout kept as given ({})."
    assert cli == said.format("tp 1 x pp 1, recompute none")
    assert box.replace("\\", "") == said.format(
        "Tensor parallel 1, Pipeline stages 1, Activation recompute none")
    assert "layouts searched" not in box
