"""Measurement (session 44): would searching the layout at each global batch goal tries change
goal's answer? A: ``goal --layout search`` as is (the layout searched at the reference batch B_N,
``goal_layouts.searched_groups``). B: A's layout groups plus, at each count N and each factor f
of F, the planner's best row at f*B_N (its layout, micro-batch and accumulation; every strategy),
so B's plans hold A's. Both with goal's refinement off; R: goal as it is now (session 44: A, then
the layouts re-searched at the batches goal tries at the few counts near A's answer,
``goal._refined``), and the CPU seconds of A and R. Prints the answers per case (docs/model.md
section 21 records them).

Run: python benchmarks/goal_batch_layouts.py {8a,8h,18a,70h} [max devices, default 256]
(the figures recorded: 128; minutes of CPU each)."""
import time

import scalesim.goal as goal_mod
from scalesim.bounds import KNOB_BY_FIELD, flag_type
from scalesim.cli.main import OneLineParser
from scalesim.errors import ScalesimError
from scalesim.goal_layouts import LayoutGroup, reference_batch_at
from scalesim.goal_layouts import searched_groups as orig
from scalesim.layout_predict import plan_at, scenario_of_row
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario

F = (0.5, 2, 4, 8, 16, 32)
CACHE = {}

def cached_plan(key, profile, base, n, G):
    k = (key, n, G)
    if k not in CACHE:
        try:
            r = plan_at(profile, base, [n], G, top=1, include_unfit=True)
            CACHE[k] = r.by_count[0].best
        except ScalesimError:
            CACHE[k] = None
    return CACHE[k]

def make_variant(key):
    def variant(profile, base, counts, reference, g, around):
        s = orig(profile, base, counts, reference, g, around)
        extra = []
        for n in counts:
            bn = reference_batch_at(reference, g, n)
            for f in F:
                G = int(bn * f)
                if G < 1 or bn * f != G:
                    continue
                row = cached_plan(key, profile, base, n, G)
                if row is None or not row.fits:
                    continue
                lay = scenario_of_row(base, row).layout.model_copy(update={"shard_group": None})
                extra.append(LayoutGroup(lay, {"devices": [n], "micro_batch": [row.micro_batch],
                    "accumulation": [row.accumulation], "strategy": list(goal_mod.STRATEGIES)}))
        return type(s)(s.groups + extra, s.best, s.layouts_tried)
    return variant

def key_of(p):
    return None if p is None else (p.devices, round(p.time_s, 3), round(p.cost_usd, 2))


def plan_words(p):
    if p is None:
        return "-"
    return (f"{p.devices} dev tp{p.tp} pp{p.pp} cp{p.cp} {p.schedule}/{p.virtual_stages} "
            f"rc {p.recompute} sp {p.sequence_parallel} mb{p.micro_batch}x{p.accumulation} "
            f"GB{p.global_batch} {p.strategy}: {p.time_s / 86400:.3f} d ${p.cost_usd:,.0f}")

def no_refinement(*args):
    return None


def run(hw, wl, samples, price, cases, max_devices, critical=None):
    profile = resolve_profile(None, hw, wl)
    base = Scenario(train_samples=samples, price_per_device_hour=price, critical_batch_size=critical)
    key = (hw, wl)
    out = []
    for deadline_d, budget in cases:
        refine = goal_mod._refined
        goal_mod._refined = no_refinement
        t0 = time.process_time()
        a = goal_mod.seek(profile, base, deadline_d * 86400, budget, max_devices, layout="search")
        ta = time.process_time() - t0
        goal_mod.searched_groups = make_variant(key)
        b = goal_mod.seek(profile, base, deadline_d * 86400, budget, max_devices, layout="search")
        goal_mod.searched_groups, goal_mod._refined = orig, refine
        t0 = time.process_time()
        r = goal_mod.seek(profile, base, deadline_d * 86400, budget, max_devices, layout="search")
        tr = time.process_time() - t0
        pa, pb, pr = a.best or a.closest, b.best or b.closest, r.best or r.closest
        same = key_of(pa) == key_of(pb)
        print(f"{wl} on {hw}, {samples:.3g} samples, ${price}/h, crit {critical}, "
              f"{deadline_d} d, ${budget:,.0f}, up to {max_devices}:", flush=True)
        print(f"   A {'meets' if a.best else 'closest'}: {plan_words(pa)}", flush=True)
        print(f"   B {'meets' if b.best else 'closest'}: {plan_words(pb)}  "
              f"{'SAME' if same else 'DIFFERENT'}", flush=True)
        print(f"   R {'meets' if r.best else 'closest'}: {plan_words(pr)}  "
              f"{'= B' if key_of(pr) == key_of(pb) else '= A' if key_of(pr) == key_of(pa) else 'OTHER'}"
              f"; CPU s A {ta:.2f}, R {tr:.2f}", flush=True)
        out.append(same)
    return out

# each case's runs: (hardware, workload, samples, USD per device-hour, [(deadline days, budget
# USD)], critical batch or None)
CASES = {
    "8a": [("dgx-a100", "llama3-8b", 2e7, 3.0, [(3, 2e5), (10, 1e5), (30, 1e6), (1, 1e6)], None),
           ("dgx-a100", "llama3-8b", 2e7, 3.0, [(3, 2e5), (10, 1e5), (1, 1e6)], 2048)],
    "8h": [("dgx-h100", "llama3-8b", 2e7, 4.0, [(3, 2e5), (10, 1e5), (1, 1e6)], None)],
    "18a": [("dgx-a100", "gpt-18.4b", 2e6, 3.0, [(0.6, 1e4), (0.3, 1e5), (3, 5e3), (10, 1e6)], None),
            ("dgx-a100", "gpt-18.4b", 2e6, 3.0, [(0.6, 1e4), (0.3, 1e5)], 1024)],
    "70h": [("dgx-h100", "llama3-70b", 2e6, 4.0, [(3, 1e5), (1, 1e6), (10, 5e4)], None),
            ("dgx-h100", "llama3-70b", 2e6, 4.0, [(3, 1e5), (1, 1e6)], 1024)],
}


def main(argv: list[str] | None = None) -> None:
    knob = KNOB_BY_FIELD["max_devices"]
    parser = OneLineParser(prog="python benchmarks/goal_batch_layouts.py",
                           description=__doc__.split("\n\n")[0])
    parser.add_argument("case", choices=list(CASES), help="the what-if to run")
    parser.add_argument("max_devices", nargs="?", type=flag_type(knob.quantity), default=256,
                        help="largest device count goal searches (default 256)")
    args = parser.parse_args(argv)
    t0 = time.time()
    for hw, wl, samples, price, cases, critical in CASES[args.case]:
        run(hw, wl, samples, price, cases, args.max_devices, critical=critical)
    print(f"took {time.time()-t0:.0f} s; planner calls {len(CACHE)}")


if __name__ == "__main__":
    main()
