"""Where no layout the planner searches fits, goal said '0 plans evaluated, 0 fit in memory'
(session 43), though the planner had ranked thousands of layouts at every device count: it now
says how many layouts it tried, at how many counts, and that none fits
(``GoalAnswer.searched_words``, shared by the CLI's line and the app's caption)."""

from __future__ import annotations

from cli_harness import run_cli, whole_lines

from scalesim.goal import device_grid, seek
from scalesim.goal_layouts import reference_batch_at
from scalesim.layout_predict import plan_at
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario

# gpt-145.6b on A100 40 GB servers up to 16 GPUs: no layout fits
NO_FIT = ["goal", "--workload", "gpt-145.6b", "--train-samples", "1e9", "--price", "3",
          "--deadline", "30d", "--budget", "1e6", "--max-devices", "16"]


def test_nothing_fits_says_how_many_layouts_the_planner_tried():
    profile = resolve_profile(None, "a2-highgpu-8g", "gpt-145.6b")
    base = Scenario(train_samples=1e9, price_per_device_hour=3.0)
    answer = seek(profile, base, 30 * 86400.0, 1e6, 16, layout="search")
    assert answer.closest is None and answer.evaluated == 0
    grid = device_grid(8, 16)
    # every layout the planner ranks at each count, fitting or not, listed row by row
    listed = sum(len(plan_at(profile, base, [n], reference_batch_at(answer.reference_batch, 8, n),
                             top=None, include_unfit=True)) for n in grid)
    assert (answer.layouts_tried, answer.layout_counts) == (listed, len(grid)) == (3984, 5)
    assert answer.searched_words() == (
        "the planner tried 3,984 layouts at 5 device counts and none fits in device memory, so "
        "there was no plan to evaluate")
    assert answer.to_dict()["layouts_tried"] == 3984


def test_the_cli_line_says_it_not_zero_plans(capsys):
    code, out, err = run_cli(capsys, NO_FIT)
    assert code == 0, err
    line = next(x for x in whole_lines(out).splitlines() if x.startswith("goal: "))
    assert "0 plans evaluated" not in line
    assert line.endswith("; the planner tried 3,984 layouts at 5 device counts and none fits in "
                         "device memory, so there was no plan to evaluate")


def test_a_searched_answer_counts_its_plans_and_the_layouts_behind_them():
    profile = resolve_profile(None, "dgx-a100", "gpt-18.4b")
    base = Scenario(train_samples=2e6)
    searched = seek(profile, base, 0.6 * 86400.0, 1e9, 64, layout="search")
    assert searched.evaluated > 0 and searched.layouts_tried > searched.evaluated
    assert searched.searched_words() == (
        f"{searched.evaluated:,} plans evaluated, {searched.runnable:,} fit in memory (around "
        f"the planner's best layouts, chosen from the {searched.layouts_tried:,} it tried at "
        f"{searched.layout_counts} device counts)")
    given = seek(profile, base, 0.6 * 86400.0, 1e9, 64, layout="given")
    assert given.layouts_tried is None and given.searched_words() == (
        f"{given.evaluated:,} plans evaluated, {given.runnable:,} fit in memory")
