"""Datasheet rows of devices the tables missed or read as a sibling (``scalesim.presets``): H100
NVL's 94 GB, the L40S / L40 (Ada, PCIe), the V100 PCIe's and V100S's own peaks and bandwidth."""

from __future__ import annotations

import pytest

from scalesim.figures import GIB_BYTES
from scalesim.presets import device_memory_of, memory_bandwidth_of, peak_tflops_of


def test_h100_nvl_holds_94_gb():
    # nvidia-smi's "NVIDIA H100 NVL" states no size; the bare H100 row's 80 GB is the SXM's
    assert device_memory_of("NVIDIA H100 NVL")[0] == pytest.approx(94 * GIB_BYTES)
    assert device_memory_of("NVIDIA H100 PCIe")[0] == pytest.approx(80 * GIB_BYTES)


def test_l40s_and_l40():
    assert peak_tflops_of("NVIDIA L40S")[0] == pytest.approx(362.05)
    assert peak_tflops_of("NVIDIA L40S", fp8=True)[0] == pytest.approx(733.0)
    assert peak_tflops_of("NVIDIA L40")[0] == pytest.approx(181.05)
    assert peak_tflops_of("NVIDIA L40", fp8=True)[0] == pytest.approx(362.0)
    for name in ("NVIDIA L40S", "NVIDIA L40"):
        assert memory_bandwidth_of(name)[0] == pytest.approx(864.0)
        assert device_memory_of(name)[0] == pytest.approx(48 * GIB_BYTES)


def test_v100_pcie_and_v100s():
    assert peak_tflops_of("Tesla V100-PCIE-16GB")[0] == pytest.approx(112.0)
    assert peak_tflops_of("Tesla V100S-PCIE-32GB")[0] == pytest.approx(130.0)
    assert memory_bandwidth_of("Tesla V100S-PCIE-32GB")[0] == pytest.approx(1134.0)
    # SXM2 / SXM3 boards keep the SXM2 row: "V100-SXM" without hyphens contains "v100s"
    for name in ("Tesla V100-SXM2-16GB", "Tesla V100-SXM3 32GB (DGX-2)", "Tesla V100-PCIE-32GB"):
        assert memory_bandwidth_of(name)[0] == pytest.approx(900.0), name
    assert peak_tflops_of("Tesla V100-SXM2-32GB")[0] == pytest.approx(125.0)
    assert peak_tflops_of("Tesla V100-SXM3 32GB (DGX-2)")[0] == pytest.approx(125.0)


# ---------------------------------------------------------------- the GPUs the tables missed
# Real device names (nvidia-smi / torch.cuda.get_device_name, or as a case would write them) ->
# (memory bandwidth GB/s, dense 16-bit TFLOP/s, dense fp8 TFLOP/s, memory GiB), each figure
# written by hand from the datasheet the row cites; None: not listed.
REAL_NAMES = [
    ("Tesla T4", 320.0, 65.0, None, 16),
    ("NVIDIA A10G", 600.0, None, None, 24),  # no published tensor peak: not the A10's 125
    ("NVIDIA A10", 600.0, 125.0, None, 24),
    ("NVIDIA A30", 933.0, 165.0, None, 24),
    ("NVIDIA A40", 696.0, 149.7, None, 48),
    ("NVIDIA L4", 300.0, 121.0, 242.5, 24),
    ("NVIDIA A800-SXM4-80GB", 2039.0, 312.0, None, 80),
    ("NVIDIA A800 80GB PCIe", 1935.0, 312.0, None, 80),
    ("NVIDIA A800-PCIE-40GB", 1555.0, 312.0, None, 40),
    ("NVIDIA H800", 3350.0, 989.0, 1979.0, 80),
    ("NVIDIA H800 PCIe", 2000.0, 756.5, 1513.0, 80),
    ("NVIDIA H20", 4000.0, 148.0, 296.0, 96),
    ("AMD Instinct MI300A", 5300.0, 980.6, 1961.2, 128),
    ("AMD Instinct MI250X", 1638.4, 191.5, None, 64),  # one GCD: half the OAM
    ("AMD Instinct MI250", 1638.4, 181.05, None, 64),
    ("AMD Instinct MI210", 1638.4, 181.0, None, 64),
    ("AMD Instinct MI100", 1228.8, 184.6, None, 32),
    ("NVIDIA RTX A6000", 768.0, 154.85, None, 48),
    ("NVIDIA RTX A5000", 768.0, 111.1, None, 24),
    ("NVIDIA RTX A4000", 448.0, 76.7, None, 16),
    ("NVIDIA RTX 6000 Ada Generation", 960.0, 364.25, 728.5, 48),
    ("Quadro RTX 6000", 672.0, 130.5, None, 24),
    ("Quadro RTX 8000", 672.0, 130.5, None, 48),
    ("TITAN V", 652.8, 110.0, None, 12),
    ("NVIDIA TITAN RTX", 672.0, 130.0, None, 24),
    ("TITAN Xp", 547.7, None, None, 12),
    ("TITAN X (Pascal)", 480.0, None, None, 12),
    ("NVIDIA GeForce RTX 5090", 1792.0, None, None, 32),
    ("NVIDIA GeForce RTX 4090", 1008.0, 165.2, 330.3, 24),
    ("NVIDIA GeForce RTX 4090 D", 1008.0, None, None, 24),
    ("NVIDIA GeForce RTX 3090 Ti", 1008.0, None, None, 24),
    ("NVIDIA GeForce RTX 3090", 936.0, 71.0, None, 24),
    ("NVIDIA GeForce RTX 2080 Ti", 616.0, 53.8, None, 11),
    ("NVIDIA GeForce GTX 1080 Ti", 484.0, None, None, 11),
    ("Tesla P100-PCIE-12GB", 549.0, None, None, 12),
    ("Tesla P100-PCIE-16GB", 732.0, None, None, 16),
    ("Tesla P40", 346.0, None, None, 24),
    ("Tesla P4", 192.0, None, None, 8),
    ("Tesla M60", 160.0, None, None, 8),  # one GM204 of the board's two
    ("Tesla M40 24GB", 288.0, None, None, 24),
    ("Tesla M40", 288.0, None, None, None),  # sold in 12 and 24 GB: the name must say
    ("Tesla K40m", 288.0, None, None, 12),
    ("Tesla K80", 240.0, None, None, 12),  # one GK210 of the board's two
    ("NVIDIA GeForce RTX 4090 Laptop GPU", None, None, None, None),  # another chip
    ("NVIDIA RTX A5000 Laptop GPU", None, None, None, None),
    # smaller cards whose names hold a listed one's: not listed, not read as it
    ("NVIDIA RTX A1000", None, None, None, None),  # holds 'A100'
    ("NVIDIA RTX A400", None, None, None, None),  # holds 'A40'
    ("NVIDIA T400", None, None, None, None),  # holds 'T4'
    ("Quadro P4000", None, None, None, None),  # holds 'P40' and 'P4'
    ("Quadro M4000", None, None, None, None),  # holds 'M40'
    ("NVIDIA H20 141GB", None, 148.0, 296.0, 141),  # bandwidth of this board not published
    # the rows that were there, by names the new ones could have taken
    ("NVIDIA A100-SXM4-40GB", 1555.0, 312.0, None, 40),
    ("NVIDIA A100-SXM4-80GB", 2039.0, 312.0, None, 80),
    ("NVIDIA A100 80GB PCIe", 1935.0, 312.0, None, 80),
    ("NVIDIA A100-PCIE-40GB", 1555.0, 312.0, None, 40),
    ("NVIDIA A100", 1555.0, 312.0, None, None),  # 40 or 80 GB: not the A10's 24
    ("NVIDIA H200", 4800.0, 989.0, 1979.0, 141),
    ("NVIDIA H200 NVL", 4800.0, 835.5, 1670.5, 141),
    # an SXM board described by its links: "NVLink" does not hold the word NVL
    ("H200 (8 per host, NVLink)", 4800.0, 989.0, 1979.0, 141),
    ("NVIDIA GH200 480GB", 4000.0, 989.0, 1979.0, 96),
    ("NVIDIA H100 80GB HBM3", 3350.0, 989.0, 1979.0, 80),
    ("NVIDIA H100 PCIe", 2000.0, 756.5, 1513.0, 80),
    ("NVIDIA L40S", 864.0, 362.05, 733.0, 48),
    ("NVIDIA L40", 864.0, 181.05, 362.0, 48),
    ("Tesla V100-SXM2-16GB", 900.0, 125.0, None, 16),
    ("Tesla V100-PCIE-32GB", 900.0, 112.0, None, 32),
    ("Tesla V100S-PCIE-32GB", 1134.0, 130.0, None, 32),
    ("NVIDIA B200", 7700.0, 2250.0, 4500.0, 180),
    ("NVIDIA GB200", 8000.0, 2500.0, 5000.0, 186),
    # session 16: Blackwell Ultra (before: no row, a nominal peak for every case of these GPUs)
    ("NVIDIA GB300", 8000.0, 2500.0, 5000.0, 288),  # session 17: NVIDIA's 288, not 20 TB / 72
    ("NVIDIA B300 SXM6 AC", 8000.0, 2250.0, 4500.0, 288),  # not GB300's row, which holds 'B300'
    ("AMD Instinct MI300X", 5300.0, 1307.4, 2614.9, 192),
    ("AMD Instinct MI325X", 6000.0, 1307.4, 2614.9, 256),
]


@pytest.mark.parametrize("name, bandwidth, bf16, fp8, gib", REAL_NAMES)
def test_real_device_names_get_their_datasheet_figures(name, bandwidth, bf16, fp8, gib):
    def first(found):
        return None if found is None else found[0]

    assert first(memory_bandwidth_of(name)) == (None if bandwidth is None
                                                else pytest.approx(bandwidth))
    assert first(peak_tflops_of(name)) == (None if bf16 is None else pytest.approx(bf16))
    assert first(peak_tflops_of(name, fp8=True)) == (None if fp8 is None else pytest.approx(fp8))
    assert first(device_memory_of(name)) == (None if gib is None else pytest.approx(gib * GIB_BYTES))


@pytest.mark.parametrize("table", ["MEMORY_BANDWIDTH_GBPS", "PEAK_TFLOPS", "DEVICE_MEMORY_GIB",
                                   "SOLD_MEMORY_GB"])
def test_no_row_is_shadowed_by_an_earlier_one(table):
    """First match wins: a name made of a row's own words must find that row, not one above
    it whose words it also holds ("A10" above "A100", "L4" above "L40", "H20" above "H200")."""
    from scalesim import presets

    rows = getattr(presets, table)
    for row in rows:
        name = " ".join(row[0])
        assert presets._first_row(rows, name) is row, (table, row[0],
                                                        presets._first_row(rows, name)[0])
    assert len({row[0] for row in rows}) == len(rows)  # no row listed twice


def test_rows_that_list_no_figure_only_keep_a_name_from_a_later_row():
    """A None figure (laptop GPUs, the A10G's peak, the RTX 4090 D's) stands for a name no
    datasheet figure covers: a later row's must not be read for it; every row has a source."""
    from scalesim import presets

    for table in (presets.MEMORY_BANDWIDTH_GBPS, presets.PEAK_TFLOPS, presets.DEVICE_MEMORY_GIB):
        for i, row in enumerate(table):
            assert row[-1], row[0]
            if row[1] is None:
                name = " ".join(row[0])
                assert any(presets.name_has_words(name, later[0]) for later in table[i + 1:]) \
                    or row[0] == ("Laptop",), row[0]


def test_export_variants_are_not_their_siblings_for_same_device():
    """H800 / A800: the H100's / A100's peak and bandwidth, but NVLink cut to 400 GB/s, so a
    profile or nccl-tests log of one is not the other (calibrate --from-nccl-tests finds no
    preset of theirs and keeps the default device, as before they were listed)."""
    from scalesim.presets import same_device
    from scalesim.sources.calibrate_from import preset_for_logs, presets_of_device

    assert peak_tflops_of("NVIDIA H800")[0] == peak_tflops_of("H100-SXM5 80GB")[0]  # same
    assert memory_bandwidth_of("NVIDIA H800")[0] == memory_bandwidth_of("H100-SXM5 80GB")[0]
    assert not same_device("NVIDIA H800", "H100-SXM5 80GB")  # ... not one device
    assert not same_device("NVIDIA H800 PCIe", "NVIDIA H100 PCIe")
    assert not same_device("NVIDIA A800-SXM4-80GB", "A100-SXM4 80GB")
    assert same_device("NVIDIA H800", "H800 SXM5 80GB")
    assert same_device("NVIDIA A800-SXM4-80GB", "A800 80GB SXM")
    assert not same_device("NVIDIA H800", "NVIDIA H800 PCIe")  # 3.35 against 2 TB/s
    assert presets_of_device("NVIDIA H800") == []
    assert presets_of_device("NVIDIA A800-SXM4-80GB") == []
    assert preset_for_logs("NVIDIA H800") == (None, [], [])
    # the presets' own devices are still found from nvidia-smi's names
    assert presets_of_device("NVIDIA A100-SXM4-80GB") == ["dgx-a100"]
    assert presets_of_device("NVIDIA H100 80GB HBM3") == ["dgx-h100"]
    assert presets_of_device("Tesla V100-SXM2-16GB") == ["dgx1-v100"]


def test_same_device_among_the_new_rows():
    from scalesim.presets import same_device

    # one Turing chip and clocks, 24 or 48 GB: one device, as a V100 16GB and 32GB are
    assert same_device("Quadro RTX 6000", "Quadro RTX 8000")
    assert same_device("Tesla V100-SXM2-16GB", "Tesla V100-SXM2-32GB")
    assert not same_device("NVIDIA A10G", "NVIDIA A10")  # the A10G lists no peak
    assert not same_device("NVIDIA L4", "NVIDIA L40")
    assert not same_device("NVIDIA H20", "NVIDIA H200")
    assert not same_device("AMD Instinct MI250", "AMD Instinct MI210")  # 181.05 against 181
    assert not same_device("Tesla T4", "Tesla P4")  # the P4 has no tensor peak


def test_h800_attention_is_hoppers_h20_and_ampere_are_not():
    """The H800 is the H100's die, the A800 the A100's (both kernels run FlashAttention-2 there,
    at the A100's figure); the A10G (GA102) has no published figure: the matmuls' rate."""
    from scalesim.attention_kernel import FLASH2_KERNEL, VENDOR_KERNEL
    from scalesim.presets import (
        ATTENTION_ON_A100_EFFICIENCY,
        FLASH2_ON_HOPPER_EFFICIENCY,
        attention_efficiency_of,
    )

    assert attention_efficiency_of("NVIDIA H800", FLASH2_KERNEL) == FLASH2_ON_HOPPER_EFFICIENCY
    for kernel in (FLASH2_KERNEL, VENDOR_KERNEL):
        assert attention_efficiency_of("NVIDIA A800-SXM4-80GB", kernel) == \
            ATTENTION_ON_A100_EFFICIENCY
    assert attention_efficiency_of("NVIDIA A10G", FLASH2_KERNEL) is None


def test_sizes_a_gpu_is_sold_with():
    from scalesim.presets import stated_memory_problem

    assert "40, 80" in stated_memory_problem("NVIDIA A800 4GB")
    assert "12, 16" in stated_memory_problem("Tesla P100 61GB")
    assert stated_memory_problem("Tesla M40 24GB") is None
    assert "12, 24" in stated_memory_problem("Tesla M40 42GB")
    assert stated_memory_problem("Quadro M4000 8GB") is None  # not an M40
    assert stated_memory_problem("Quadro GP100 16GB") is None  # the GP100 chip: 16 GB as well


def test_validate_takes_the_optimizer_step_of_a_newly_listed_gpu():
    """`scalesim validate` set the optimizer step to 0 (flagged) on a GPU without a datasheet
    bandwidth; a T4 case now gets one at its 320 GB/s, which changes the prediction."""
    import json

    from scalesim.shipped import validation_path
    from scalesim.validate import parse_cases, predict_case

    data = json.loads(validation_path("cases.json").read_text())
    case = next(c for c in data["cases"] if "V100" in c["hardware"]["gpu"])

    def result(gpu):
        data["cases"] = [{**case, "hardware": {**case["hardware"], "gpu": gpu}}]
        return predict_case(parse_cases(data)[0])

    unlisted, t4 = result("Gaudi3"), result("Tesla T4")
    assert any("memory bandwidth of 'Gaudi3' unknown" in f for f in unlisted.flags)
    assert not any("memory bandwidth of" in f or "optimizer estimate" in f for f in t4.flags)
    assert t4.points[-1].predicted != pytest.approx(unlisted.points[-1].predicted, rel=1e-6)


@pytest.mark.parametrize("name", ["Quadro P1000", "Quadro P400", "Quadro P4200", "Quadro K4000",
                                  "Quadro M600M", "NVIDIA A1000", "NVIDIA RTX 40900",
                                  "NVIDIA RTX A1000", "NVIDIA RTX A400", "NVIDIA T400",
                                  "Quadro P4000", "Quadro M4000"])
def test_a_longer_model_number_is_not_the_shorter_row(name):
    # nvidia-smi names (Quadro P1000: 4 GB, 82 GB/s) that contain a listed model number followed
    # by more digits read the P100's 732 GB/s and 16 GB, the K40's, the P40's, the A100's
    # (the RTX A1000 / A400, T400, P4000, M4000 had rows of their own to stop that, one by one)
    for of in (peak_tflops_of, memory_bandwidth_of, device_memory_of):
        assert of(name) is None, (of.__name__, name, of(name))


def test_a_model_number_followed_by_a_separator_still_matches():
    assert memory_bandwidth_of("NVIDIA A100-SXM4-80GB")[0] == pytest.approx(2039.0)
    assert peak_tflops_of("NVIDIA H100 80GB HBM3")[0] == pytest.approx(989.0)
    assert memory_bandwidth_of("Tesla P40")[0] == pytest.approx(346.0)
    assert memory_bandwidth_of("Tesla P4")[0] == pytest.approx(192.0)


def test_a_pcie_board_is_not_its_sxm_sibling_of_the_same_figures(tmp_path):
    """The A100 40GB PCIe and SXM4 list one peak (312) and one bandwidth (1,555 GB/s), but not
    one link or power: a log of the PCIe board was read as the NVSwitch a2-highgpu-8g, its
    unmeasured intra link NVSwitch's 230 GB/s under the PCIe board's name."""
    import json

    from scalesim.cli.main import main
    from scalesim.presets import same_device
    from scalesim.sources.calibrate_from import presets_of_device

    assert peak_tflops_of("NVIDIA A100-PCIE-40GB") == peak_tflops_of("A100-SXM4 40GB")
    assert memory_bandwidth_of("NVIDIA A100-PCIE-40GB") == memory_bandwidth_of("A100-SXM4 40GB")
    assert not same_device("NVIDIA A100-PCIE-40GB", "A100-SXM4 40GB")
    assert same_device("NVIDIA A100-SXM4-40GB", "A100-SXM4 40GB")
    assert same_device("NVIDIA A100 80GB PCIe", "A100-PCIe 80GB")
    assert presets_of_device("NVIDIA A100-PCIE-40GB") == []
    assert presets_of_device("NVIDIA A100 80GB PCIe") == ["pcie-8gpu-100gbe", "pcie-8gpu-25gbe"]
    # a two-server log of the PCIe board: the device stays the default's, said so
    rows = [f"#  Rank {r:2d} Group  0 Pid {1000 + r:6d} on     node{r // 8:02d} device {r % 8:2d} "
            f"[0000:{0x1b + r:02x}:00] NVIDIA A100-PCIE-40GB" for r in range(16)]
    table = ["#       size         count      type   redop    root     time   algbw   busbw "
             "#wrong     time   algbw   busbw #wrong"]
    for k in range(10, 31, 4):
        size = 2 ** k
        t_us = 30 * 20e-6 * 1e6 + 30 / 16 * size / 11e3
        alg = size / t_us / 1e3
        table.append(f"{size:12d}  {size // 4:12d}     float     sum      -1  {t_us:7.2f}  "
                     f"{alg:6.2f}  {alg * 30 / 16:6.2f}      0  {t_us:7.2f}  {alg:6.2f}  "
                     f"{alg * 30 / 16:6.2f}      0")
    log = tmp_path / "all_reduce_perf.txt"
    log.write_text("# nThread 1 nGpus 1 minBytes 1024 maxBytes 1073741824\n"
                   + "\n".join(rows + table) + "\n# Avg bus bandwidth    : 9\n")
    out = tmp_path / "p.json"
    assert main(["calibrate", "--from-nccl-tests", str(log), "--out", str(out)]) == 0
    profile = json.loads(out.read_text())
    assert profile["hardware"]["device_name"] != "NVIDIA A100-PCIE-40GB"
    assert any("NVIDIA A100-PCIE-40GB, which no hardware preset lists" in n
               for n in profile["notes"])
