"""Session 20 (units20): one figure, one unit and one precision wherever it is printed: a
throughput in the workload's unit (``figures.rate``, ``Workload.sample_unit``) on decide's card
as in predict and the app; a run's memory need at one decimal (``figures.gib``) in decide's
question and notes, the app's subheader, error box, story and A/B, and plan's 'why'."""

from __future__ import annotations

import json
import re
from pathlib import Path

from app_harness import open_app
from cli_harness import run_cli
from scalesim.app.plan import ab_misfit, headline, make_plan, misfit_words, story
from scalesim.app.report import decision_html
from scalesim.app.state import default_state, encode_query, preset_profile

from scalesim.decision import card_rows
from scalesim.figures import gib, rate, throughput
from scalesim.plan import _why

LLAMA_64 = ["decide", "--workload", "llama3-70b", "--hardware", "dgx-h100", "--devices", "64",
            "--tp", "8", "--pp", "2", "--train-samples", "1e6"]
SEQUENCES = "sequences of 8192 tokens"  # llama3-70b's sample_unit


def _llama_plan():
    state = default_state().model_copy(update={
        "wl": "llama3-70b", "hw": "dgx-h100", "dmax": 64, "focus": 64, "tp": 8, "pp": 2,
        "train": 1e6})
    return make_plan(preset_profile(state), state)


def test_rate_and_gib_write_the_figure_one_way():
    assert rate(5.5912, SEQUENCES) == "5.591 sequences of 8192 tokens/s"  # as a table writes it
    assert rate(1234.4, "images") == "1,234 images/s"
    assert rate(140_912.0, "tokens") == "140,900 tokens/s" == f"{throughput(140_912.0)} tokens/s"
    assert gib(101.24 * 2**30) == "101.2 GiB"
    assert gib(1398.94 * 2**30) == "1,398.9 GiB"  # was '1,399 GiB' beside '1,398.9 GiB'


def test_decide_says_the_workloads_unit_as_predict_and_the_app_do(capsys):
    """Was '5.59 samples/s' on decide's card while predict's table and the app said
    sequences: now the card's throughput is in the workload's unit, in the CLI and the app."""
    code, out, _ = run_cli(capsys, LLAMA_64)
    assert code == 0 and "samples/s" not in out
    # the add-server option's (ZeRO-2 since session 44's fp32 reduce of ZeRO-1: 5.788 at ZeRO-1;
    # ZeRO-1 again in session 46, piped FSDP ZeRO-2 waiting for its first stage's reduce-scatter
    # and Megatron-Core's step sweeping 34 B: 5.763 at ZeRO-2; 5.599, not 5.62, since session 47
    # counted Megatron-Core's default gradient-norm clip of its fp32 main grads, 46 B; 5.617 since
    # session 50's bubble passes the stages but the slowest in fill and drain, docs/model.md §15)
    assert f"5.617 {SEQUENCES}/s" in out
    code, out, _ = run_cli(capsys, ["predict", *LLAMA_64[1:9]])
    assert code == 0 and f"{SEQUENCES.split()[0]}/s" in out  # predict's column header
    plan = _llama_plan()
    assert plan.unit == SEQUENCES
    rows = card_rows(plan.decision)
    for o, row in zip(plan.decision.options, rows[1:], strict=True):
        assert row["throughput"] == f"{throughput(o.samples_per_s)} {SEQUENCES}/s"
        assert row["throughput"] in decision_html(plan)  # the report's card
    at = open_app(encode_query(plan.state, plan.profile))
    shown = at.table[0].value.reset_index().to_dict("records")
    assert shown == rows and all("samples/s" not in r["throughput"] for r in shown)


def test_decide_json_keys_are_unchanged(capsys):
    code, out, _ = run_cli(capsys, [*LLAMA_64, "--json"])
    card = json.loads(out)
    assert code == 0 and list(card) == ["question", "goal", "model_error", "now", "options",
                                        "recommendation", "assumption", "notes"]
    assert all(isinstance(o["samples_per_s"], float) for o in card["options"])


def test_one_memory_need_reads_the_same_everywhere(capsys):
    """Was '101 GiB' in decide's question and notes and the app's subheader and story, '101.2
    GiB' in the app's error box and A/B: now one decimal everywhere."""
    plan = _llama_plan()
    per = f"{gib(plan.focus.memory_bytes)} per device"  # the app's default batch: 1,138.4 GiB
    assert f"({per} needed)" in plan.decision.question  # the app's subheader
    assert headline(plan)["runnable"].startswith(f"not runnable: needs {per}, ")  # error box
    assert f"this layout needs {per} and does not fit" in story(plan)
    assert misfit_words(plan.focus, plan.profile) == f"does not fit (needs {per} of 80 GiB)"
    assert ab_misfit(plan, "A") == f"A does not fit (needs {per} of 80 GiB)"
    at = open_app(encode_query(plan.state, plan.profile))
    assert any(s.value == plan.decision.question for s in at.subheader)
    assert any(per in e.value for e in at.error)
    # the CLI's batch: 109.4 GiB (was '101 GiB'; 101.2 GiB before session 48 counted
    # Megatron-Core DDP's fp32 main_grad at tp 8 x pp 2: 2 B more a parameter)
    code, out, _ = run_cli(capsys, LLAMA_64)
    assert code == 0 and "(109.4 GiB per device needed): what should we do?" in out
    assert ("note: not shown: today's layout at 80 devices does not fit in device memory (109.4 "
            "GiB per device needed)") in out


def test_plans_why_writes_a_need_over_a_thousand_gib_with_its_separator():
    row = {"fits": False, "memory_bytes": 1398.94 * 2**30, "headroom_bytes": -1318.94 * 2**30}
    assert _why({}, row, "throughput") == "does not fit: 1,398.9 GiB > 80.0 GiB per device"


def _spelled_out(pattern: str, comments: bool = True) -> list[str]:
    """'file: match' for each match of ``pattern`` (a unit's literal spelling) in the package,
    the app and calibration (``figures.py``, where the units are defined, left out; with
    ``comments`` False, what follows a '#' too)."""
    root = Path(__file__).resolve().parents[1]
    literal = re.compile(pattern, re.M)
    return [f"{path.relative_to(root)}: {m.group(0)}"
            for folder in ("scalesim", "app", "calibration")
            for path in sorted((root / folder).rglob("*.py"))
            if not path.relative_to(root).as_posix().startswith(("scalesim/app/",
                                                                 "scalesim/calibration/"))
            and path.name != "figures.py"
            for text in [path.read_text()]
            for m in literal.finditer(text if comments else "\n".join(
                line.split("#")[0] for line in text.splitlines()))]


def test_a_gib_is_defined_once_and_imported():
    """``figures.GIB_BYTES`` is the one GiB: presets (device memory) and the layout model (the
    framework's 2 GiB) had their own ``GIB = 1024**3``, 18 lines divided by a literal 2**30 or
    1024**3; none is left in the package, the app or calibration."""
    from scalesim.figures import GIB_BYTES
    from scalesim.model.layout_step import FRAMEWORK_BYTES
    from scalesim.presets import device_memory_of

    assert GIB_BYTES == 1_073_741_824
    assert FRAMEWORK_BYTES == 2_147_483_648.0
    assert device_memory_of("NVIDIA H100 80GB HBM3")[0] == 85_899_345_920
    assert _spelled_out(r"[/*]\s*(2\s*\*\*\s*30|1024\s*\*\*\s*3)\b|^GIB\w* = ") == []


def test_a_mib_is_defined_once_and_imported():
    """``figures.MIB_BYTES`` is the one MiB, beside the GiB: the model's overlap had its own
    ``MIB = 1024 * 1024`` (imported by plan, predict, sweep and layout_predict), the step's DDP
    bucket defaults, the app's upload limit, calibration's sweep sizes, beta threshold and
    ``--message-size`` flag, and the nccl-tests / calibrate-from notes wrote ``1024 * 1024`` or
    ``/ 2**20`` (14 lines); none is left in the package, the app or calibration."""
    from scalesim.calibration.link_fit import LARGE_BYTES

    from scalesim.figures import MIB_BYTES, bytes_text
    from scalesim.model.overlap import DDP_BUCKET_BYTES, DDP_FIRST_BUCKET_BYTES
    from scalesim.model.step import StepInputs

    assert MIB_BYTES == 1_048_576 and bytes_text(MIB_BYTES) == "1 MiB"
    assert (DDP_BUCKET_BYTES, DDP_FIRST_BUCKET_BYTES, LARGE_BYTES) == (26_214_400, 1_048_576, 1_048_576)
    defaults = StepInputs.__dataclass_fields__
    assert defaults["bucket_bytes"].default == DDP_BUCKET_BYTES
    assert defaults["first_bucket_bytes"].default == DDP_FIRST_BUCKET_BYTES
    assert _spelled_out(r"1024\s*\*\s*1024|1024\s*\*\*\s*2|\b1_?048_?576\b"
                        r"|[/*]\s*(2\s*\*\*\s*20|1\s*<<\s*20)\b|^MIB\w* = ",
                        comments=False) == []  # remedies' "micro-batch / 2**20" is halvings
