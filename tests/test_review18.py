"""Session 18 review: what the merges of grow18, words18 and cpu18 left in GPU words or bare.

A CPU calibration's devices are processes on hosts (``device_nouns.nouns_for``); sentences that
words18 and grow18 wrote with ``figures.count(n, 'device')`` while cpu18 moved decide and the
remedies to ``Nouns`` kept saying devices and servers on a CPU profile (predict's knee, its
data-stall and one-device lines, the app's headline, story, chart words and report). The app's
chart words wrote the knee's counts bare ('8 -> 2048 devices')."""

from __future__ import annotations

from app_harness import open_app, upload_profile
from cli_harness import run_cli, whole_lines
from scalesim.app.charts import chart_text
from scalesim.app.plan import headline, make_plan, story
from scalesim.app.report import report_html
from scalesim.app.state import default_state, preset_profile, with_profile_defaults
from test_cpu_words import cpu_profile

from scalesim.device_nouns import CPU_NOUNS, GPU_NOUNS


def _cpu_file(tmp_path):
    path = tmp_path / "cpu.json"
    path.write_text(cpu_profile().model_dump_json())
    return str(path)


def _lines(out: str, start: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(start)]


def test_predict_on_cpu_processes_names_the_knee_in_processes_and_hosts(capsys, tmp_path):
    """Was 'knee: 2 -> 4 devices, ...: crosses server boundary: inter-server link' under a
    header that says '2 per host' and notes on 'several hosts'."""
    code, out, err = run_cli(capsys, ["predict", "--profile", _cpu_file(tmp_path), "--devices", "1,2,4"])
    assert code == 0, err
    (knee,) = _lines(out, "knee:")
    assert knee.startswith("knee: 2 -> 4 processes, efficiency ")
    assert knee.endswith(": crosses host boundary: inter-host link")
    code, out, _ = run_cli(capsys, ["predict", "--devices", "1,8,16"])  # GPU words kept
    assert _lines(out, "knee:")[0].endswith(": crosses server boundary: inter-server link")


def test_a_one_process_baseline_that_cannot_hold_the_model_is_said_in_processes(capsys, tmp_path):
    """Was 'one device cannot hold the model: ... 'Nx one device' ...' beside decide's '8 CPU:
    AMD EPYC processes give 0.0x one process', 'rows marked NO do not fit in device memory' and
    'only one of the rows fits in device memory' on a CPU profile."""
    args = ["--workload", "gpt-7b", "--strategy", "zero3", "--devices", "1,8"]
    code, out, err = run_cli(capsys, ["predict", "--profile", _cpu_file(tmp_path), *args])
    assert code == 0, err
    note = (
        "note: one process cannot hold the model: speed-up, efficiency and 'Nx one process' "
        "are against the model's hypothetical one-process run (docs/model.md §10)"
    )
    assert note in out.splitlines()
    assert "knee: none (only one of the rows fits in the host's memory, " in out
    assert "warning: rows marked NO do not fit in the host's memory: " in out
    assert "device memory" not in out
    code, out, err = run_cli(
        capsys,
        [
            "decide",
            "--profile",
            _cpu_file(tmp_path),
            "--workload",
            "gpt-7b",
            "--strategy",
            "zero3",
            "--devices",
            "8",
        ],
    )
    assert code == 0, err
    assert " processes give " in out and note in whole_lines(out).splitlines()
    code, out, _ = run_cli(capsys, ["predict", *args])  # a GPU keeps its words
    assert (
        "note: one device cannot hold the model: speed-up, efficiency and 'Nx one device' "
        "are against the model's hypothetical one-device run (docs/model.md §10)" in out
    )


def test_every_knee_cause_reads_in_the_devices_nouns():
    from scalesim.knee import CAUSE_LABELS, cause_label

    for cause in CAUSE_LABELS:
        gpu, cpu = cause_label(cause, GPU_NOUNS), cause_label(cause, CPU_NOUNS)
        assert "{" not in gpu + cpu
        assert not any(w in cpu for w in ("device", "server")), cpu
    assert cause_label("colocation", CPU_NOUNS) == "more busy processes per host slow each other's compute"


def _cpu_plan():
    profile = cpu_profile()
    state = with_profile_defaults(default_state(), profile)
    return make_plan(profile, state)


def test_the_app_story_headline_chart_words_and_report_say_processes_on_cpu():
    """Was 'throughput grows almost linearly to 2 devices ... crosses server boundary:
    inter-server link', 'Scaling efficiency: 1 device 100%, 2 devices 98%, ...' and the
    report's 'Speedup over one device', 'Changes at 4 devices', the cost tab's rows '1 device',
    'Add devices (4 -> 6)', beside the decision card's 'Add one host (4 -> 6 processes)'."""
    plan = _cpu_plan()
    assert plan.knee is not None
    h = headline(plan)
    assert h["knee"] == (  # the page's arrow since session 51 (was '->', the CLI's)
        f"{plan.knee.devices_before} → {plan.knee.devices_after} processes: "
        "crosses host boundary: inter-host link"
    )
    words = " ".join(
        [
            story(plan),
            h["knee"],
            *(chart_text(plan, n) for n in ("throughput", "efficiency", "step_breakdown")),
        ]
    )
    assert "processes" in words and "1 process 100%" in words
    assert not any(w in words for w in (" device", "server")), words
    html = report_html(plan, "http://example/?v=1")
    assert "Speedup over one process" in html and "Speedup over one device" not in html
    assert f"Changes at {plan.focus.devices} processes" in html
    labels = [o.label for o in plan.options]  # the Hours & cost tab's rows
    assert "1 process" in labels and f"{plan.focus.devices} processes" in labels
    # the card's add-server option, in its words (session 20: was 'Add processes (4 -> 6)')
    assert plan.decision.added.option.title in labels
    assert any(label.startswith("Add one host (") for label in labels), labels
    assert not any("device" in label for label in labels), labels


def test_the_app_metrics_say_processes_for_an_uploaded_cpu_profile():
    at = upload_profile(open_app(), cpu_profile())
    labels = [m.label for m in at.metric]
    assert any(
        label.startswith("Scaling efficiency at ") and label.endswith(" processes") for label in labels
    ), labels
    assert "Speedup over one process" in labels
    assert "Speedup over one device" not in labels


def test_the_chart_words_write_the_knee_counts_with_separators():
    """The throughput chart's words said 'the knee is at 8 -> 2048 devices' where the story and
    the headline say '2,048' (``figures.count_change``)."""
    state = default_state().model_copy(update={"grid": "list", "dlist": "8,2048"})
    plan = make_plan(preset_profile(state), state)
    text = chart_text(plan, "throughput")
    # the page's arrow since session 51 (was '8 -> 2,048 devices', the CLI's)
    assert "the knee is at 8 → 2,048 devices (crosses server boundary: inter-server link)" in text
    assert "2048" not in text
    assert headline(plan)["knee"] == "8 → 2,048 devices: crosses server boundary: inter-server link"


def test_the_goal_chart_words_and_the_layouts_chart_title_say_processes_on_cpu():
    """The Pareto chart's words said '(0.0 days for $0, 2 devices)' of a CPU goal whose
    sentence says '2 processes (1 host)' and '15 min for $0.02' (days and whole dollars, not
    ``figures``); the Layouts tab's chart 'Ranked layouts on 4 devices'."""
    from scalesim.app.charts import layouts_chart, pareto_text

    from scalesim.figures import amount, duration_text
    from scalesim.goal import seek
    from scalesim.layout_predict import plan_at
    from scalesim.presets import transformer_workload
    from scalesim.schemas import Scenario

    scenario = Scenario(devices=[1], train_samples=1e6, price_per_device_hour=0.05)
    answer = seek(cpu_profile(), scenario, 86400.0, 100.0)
    text = pareto_text(answer)
    assert f"{answer.front[-1].devices:,} process" in text and "device" not in text
    fast = answer.front[0]  # was '(0.0 days for $0, ...)' of a plan of seconds and cents
    assert f"({duration_text(fast.time_s)} for ${amount(fast.cost_usd)}, " in text
    assert "0.0 days" not in text and "$0," not in text
    profile = cpu_profile().model_copy(update={"workload": transformer_workload("gpt-1.7b")})
    rows = plan_at(profile, Scenario(devices=[4]), 4, 64, top=3)
    title = layouts_chart(rows, 4, words=CPU_NOUNS).to_dict()["title"]["text"]
    assert title == "Ranked layouts on 4 processes: where each step's time goes"
