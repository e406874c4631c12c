"""Time of diagnose's remedy-gain bands (``runs_diagnosis.set_gain_bands``) on the seed's cases.

    python benchmarks/diagnose_bands.py [--repeats 3] [--draws-alone]

Each case of ``tests/diagnose_cases.py`` (runs the model made, one per row of the seed's
symptoms table) is diagnosed with ``--params`` 25.6e6, and the seed's BERT-large runs on 1-32
A100s with their transformer (``--workload``: the layout model), each with the bands and with
no draws (``REMEDY_BAND_DRAWS`` / ``LAYOUT_BAND_DRAWS`` set to 0: the report before session 24).
Prints the best of ``--repeats`` wall times in seconds as a markdown table for
docs/performance.md. ``--draws-alone``: each draw's remedies predicted one after another, not
in lockstep (``lockstep.map_in_lockstep`` unbatched: the report before session 54, the same
numbers).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import diagnose_cases as cases  # noqa: E402
from stage_split import best_of  # noqa: E402  (this folder: the same timing)

from scalesim import layout_predict, runs_diagnosis  # noqa: E402
from scalesim.cli.main import OneLineParser  # noqa: E402
from scalesim.lockstep import map_in_lockstep  # noqa: E402
from scalesim.presets import get_transformer  # noqa: E402
from scalesim.profiles import default_profile  # noqa: E402
from scalesim.runs import parse_runs_text, runs_from_records  # noqa: E402
from scalesim.runs_model import runs_model  # noqa: E402
from scalesim.schemas import Scenario  # noqa: E402


def _timed(diagnose, repeats: int) -> tuple[float, float]:
    """(s with the bands, s without), each diagnosis with no compute pin kept from the one
    before (``layout_predict._PIN_KEPT`` cleared: as in a fresh process)."""
    def fn():
        layout_predict._PIN_KEPT.clear()
        return diagnose()

    banded = best_of(repeats, fn)
    saved = runs_diagnosis.REMEDY_BAND_DRAWS, runs_diagnosis.LAYOUT_BAND_DRAWS
    runs_diagnosis.REMEDY_BAND_DRAWS = runs_diagnosis.LAYOUT_BAND_DRAWS = 0
    try:
        plain = best_of(repeats, fn)
    finally:
        runs_diagnosis.REMEDY_BAND_DRAWS, runs_diagnosis.LAYOUT_BAND_DRAWS = saved
    return banded, plain


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python benchmarks/diagnose_bands.py")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--draws-alone", action="store_true")
    args = p.parse_args(argv)
    if args.draws_alone:
        runs_diagnosis.map_in_lockstep = lambda fn, items, batched=True: map_in_lockstep(
            fn, items, False)
    print("| case | with bands s | without s | bands s |")
    print("|---|---:|---:|---:|")
    total = [0.0, 0.0]
    for name, fn in cases.CASES.items():
        runs = runs_from_records(fn(), name)
        banded, plain = _timed(lambda runs=runs: runs_diagnosis.diagnose_runs(runs, params=25.6e6),
                               args.repeats)
        total[0] += banded
        total[1] += plain
        print(f"| {name} | {banded:.2f} | {plain:.2f} | {banded - plain:.2f} |")
    print(f"| all data-parallel | {total[0]:.2f} | {total[1]:.2f} | {total[0] - total[1]:.2f} |")
    rows = cases._rows(default_profile(), Scenario(devices=[1, 2, 4, 8, 16, 32], micro_batch=32))
    runs = parse_runs_text(cases.to_csv(rows), "runs.csv")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bert128.json"
        path.write_text(json.dumps({"name": "bert-large at 128", "params": 336e6,
                                    "transformer": get_transformer("bert-large").model_dump()}))
        model = runs_model(str(path), "A100 40GB")
    banded, plain = _timed(lambda: runs_diagnosis.diagnose_runs(runs, None, 2.0, transformer=model),
                           args.repeats)
    print(f"| BERT-large --workload (layout model) | {banded:.2f} | {plain:.2f} | "
          f"{banded - plain:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
