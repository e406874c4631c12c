"""Attention kernels found in profiler traces by name (``attention_kernel.TRACE_ATTENTION_KERNELS``,
one table), their time per step and family in the trace summary, and diagnose's finding where a
FlashAttention-2-class kernel ran on Hopper: the measured attention time, the saving
``t x (1 - 329/631)`` from pytorch/pytorch#142132's one benchmark, the remedy
"use a Hopper attention kernel" (docs/diagnose.md). Traces are built here, small and exact."""

from __future__ import annotations

import json

import pytest

from scalesim import trace_ranks, traces
from scalesim.attention_kernel import (
    FLASH2_KERNEL,
    MEM_EFFICIENT_FAMILY,
    TRACE_ATTENTION_KERNELS,
    VENDOR_KERNEL,
    attention_family,
)
from scalesim.cli.main import main
from scalesim.presets import FLASH2_SPEED_RATIO_TO_VENDOR_ON_HOPPER
from scalesim.remedies import ATTENTION_KERNEL_TITLE
from scalesim.trace_diagnosis import diagnose_traces

# Kernel names as the sources define them (the table's citations) and as traces show them.
FA2_FWD = ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, "
           "false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, "
           "cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>"
           "(pytorch_flash::Flash_fwd_params)")
FA2_BWD = ("void flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, "
           "64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t>, false, true, false, false, "
           "true, true, false>(flash::Flash_bwd_params)")
CUDNN_FWD = "cudnn_generated_fort_native_sdpa_sm90_knob_7_64x128x128_4x1x1_kernel0_0"
FA3_FWD = ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<"
           "flash::CollectiveMainloopFwdSm90<2, cute::tuple<>, cutlass::bfloat16_t> > > >"
           "(flash::FlashAttnFwdSm90<...>::Params)")
MEM_EFF = ("fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel<"
           "cutlass::bfloat16_t, cutlass::arch::Sm80, true, 64, 128, 128, true, true>::Params)")
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"
NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


@pytest.mark.parametrize("name, family", [
    (FA2_FWD, FLASH2_KERNEL), (FA2_BWD, FLASH2_KERNEL),
    ("void flash::flash_fwd_splitkv_combine_kernel<X, 4, 1, true>(flash::Flash_fwd_params)",
     FLASH2_KERNEL),
    ("void pytorch_flash::flash_bwd_convert_dq_kernel<X>(pytorch_flash::Flash_bwd_params)",
     FLASH2_KERNEL),
    (CUDNN_FWD, VENDOR_KERNEL),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x128_1x",
     VENDOR_KERNEL),
    (FA3_FWD, VENDOR_KERNEL),
    ("void cutlass::device_kernel<flash::FlashAttnBwdPostprocessConvertdQ<X> >(Params)",
     VENDOR_KERNEL),
    (MEM_EFF, MEM_EFFICIENT_FAMILY),
    ("fmha_cutlassB_bf16_aligned_128x128_k128_sm80(Params)", MEM_EFFICIENT_FAMILY),
    (GEMM, None), (NCCL, None), ("void at::native::vectorized_elementwise_kernel<4>(...)", None),
    ("triton_per_fused_softmax_0", None),
])
def test_each_kernel_name_has_its_family(name, family):
    assert attention_family(name) == family


def test_every_pattern_of_the_table_names_its_source():
    assert {family for family, _, _ in TRACE_ATTENTION_KERNELS} == {
        FLASH2_KERNEL, VENDOR_KERNEL, MEM_EFFICIENT_FAMILY}
    for _, _, source in TRACE_ATTENTION_KERNELS:
        assert any(repo in source for repo in ("Dao-AILab/flash-attention", "pytorch/pytorch",
                                                "tritonbench", "facebookresearch/xformers"))


def event(name, ts_us, dur_us, cat="kernel", tid=7, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts_us,
            "dur": dur_us, "args": args}


def trace(rank=0, world=2, device="NVIDIA H100 80GB HBM3", fwd=FA2_FWD, bwd=FA2_BWD):
    """Three 1,000 us steps on GPU 1 (deviceProperties lists two): a 500 us GEMM, the attention
    forward 100 us and backward 200 us (300 us, 30 % of the step), a 300 us all-reduce half hidden
    under the backward (overlap on), 50 us idle."""
    events = [event(f"ProfilerStep#{n}", (n - 1) * 1000.0, 1000.0, cat="user_annotation",
                    tid=1) for n in (1, 2, 3)]
    for n in (1, 2, 3):
        t = (n - 1) * 1000.0
        events += [event(GEMM, t, 500.0, device=1), event(fwd, t + 500, 100.0, device=1),
                   event(bwd, t + 600, 200.0, device=1),
                   event(NCCL, t + 650, 300.0, tid=8, device=1)]
    props = [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}] if device else []
    if device:
        props.append({"id": 1, "name": device})
    return {"distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world},
            "deviceProperties": props, "traceEvents": events}


def write(tmp_path, data, name="r0.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def test_the_summary_has_the_attention_time_per_step_its_family_and_the_device(tmp_path):
    s = traces.summarise(write(tmp_path, trace()))
    assert [st.attention_s for st in s.steps] == pytest.approx([300e-6] * 3)
    assert s.steps[0].compute_s == pytest.approx(800e-6)  # attention is a part of compute
    assert (s.attention_family, s.device_name) == (FLASH2_KERNEL, "NVIDIA H100 80GB HBM3")
    vendor = traces.summarise(write(tmp_path, trace(fwd=CUDNN_FWD, bwd=FA3_FWD)))
    assert vendor.attention_family == VENDOR_KERNEL and vendor.median("attention_s") == \
        pytest.approx(300e-6)
    plain = trace()
    plain["traceEvents"] = [e for e in plain["traceEvents"] if attention_family(e["name"]) is None]
    none = traces.summarise(write(tmp_path, plain))
    assert (none.attention_family, none.median("attention_s")) == ("", 0.0)
    assert traces.summarise(write(tmp_path, trace(device=""))).device_name == ""


def test_flash2_on_hopper_is_a_finding_with_the_saving_and_the_remedy(tmp_path):
    """Two H100 ranks, 1 ms steps, 0.3 ms of FlashAttention-2 each: the vendor kernel would take
    0.3 x 329.483 / 631.338 = 0.157 ms, saving 0.143 ms, 14.3 % of the step, a throughput gain of
    1 / (1 - 0.143) - 1 = +16.7 %. Not the scaling cause: listed beside it, and its remedy first
    (the largest gain)."""
    paths = [write(tmp_path, trace(rank=r), f"r{r}.json") for r in (0, 1)]
    report = diagnose_traces(trace_ranks.load_traces(paths), "two ranks")
    assert report.cause.key != "attention_kernel"
    kernel = next(f for f in report.others if f.key == "attention_kernel")
    ratio = FLASH2_SPEED_RATIO_TO_VENDOR_ON_HOPPER
    assert ratio == pytest.approx(0.5219, abs=1e-4)
    saving = 300e-6 * (1 - ratio)
    assert kernel.share == pytest.approx(saving / 1000e-6)
    assert "0.3 ms per step, 30% of the step" in kernel.evidence[0]
    assert "NVIDIA H100 80GB HBM3" in kernel.evidence[0]
    assert "pytorch/pytorch#142132" in kernel.evidence[1] and "0.143 ms per step (14%)" in \
        kernel.evidence[1]
    remedy = report.first_remedy
    assert (remedy.key, remedy.title, remedy.applicable) == ("attention_kernel",
                                                             ATTENTION_KERNEL_TITLE, True)
    assert remedy.gain == pytest.approx(1000e-6 / (1000e-6 - saving) - 1)
    assert [r.key for r in report.remedies].count("attention_kernel") == 1
    assert report.table[0]["attention_s"] == pytest.approx(300e-6)
    text = report.to_text()
    assert "Also: A FlashAttention-2-class attention kernel on Hopper (14% of the step)" in text
    assert "First remedy to try: Use a Hopper attention kernel" in text and "+16.7%" not in text
    assert "+17% throughput predicted" in text and "attn" in text


@pytest.mark.parametrize("changes", [
    {"device": "NVIDIA A100-SXM4-80GB"},  # FlashAttention-2 near the matmuls' rate there
    {"fwd": CUDNN_FWD, "bwd": FA3_FWD},  # the vendor kernels already
    {"fwd": MEM_EFF, "bwd": MEM_EFF},  # no published Hopper ratio for it here
    {"device": ""},  # the trace does not say which GPU
])
def test_no_finding_elsewhere(tmp_path, changes):
    paths = [write(tmp_path, trace(rank=r, **changes), f"r{r}.json") for r in (0, 1)]
    report = diagnose_traces(trace_ranks.load_traces(paths), "two ranks")
    assert all(f.key != "attention_kernel" for f in [report.cause, *report.others])
    kernel = [r for r in report.remedies if r.key == "attention_kernel"]
    assert all(not r.applicable for r in kernel)  # the model's: a traced job has no shape


def test_one_rank_and_the_cli(tmp_path, capsys):
    """A single-rank trace has no scaling to diagnose, but the kernel finding and its remedy
    stand; the CLI prints them and puts them in --json."""
    path = write(tmp_path, trace(world=1))
    assert main(["diagnose", "--trace", path]) == 0
    out = capsys.readouterr().out
    assert "Also: A FlashAttention-2-class attention kernel on Hopper" in out
    assert "First remedy to try: Use a Hopper attention kernel" in out
    assert main(["diagnose", "--trace", path, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["first_remedy"]["key"] == "attention_kernel"
    assert data["table"][0]["attention_family"] == FLASH2_KERNEL
    assert data["table"][0]["device_name"] == "NVIDIA H100 80GB HBM3"


def test_calibrating_from_gpu_traces_takes_their_gpu_and_attention_kernel(tmp_path, capsys):
    """`calibrate --from-trace` of two H100 ranks that ran FlashAttention-2: the new profile is
    rebased on the hardware preset of the traces' GPU (it stayed the default presets' A100,
    whatever GPU the traces named) and its compute records the flash2 family, which predictions
    of a transformer timed by it price the attention core with. A --base of another GPU is
    refused, as for nccl-tests logs."""
    from scalesim.profiles import load_profile

    paths = [write(tmp_path, trace(rank=r), f"r{r}.json") for r in (0, 1)]
    out = str(tmp_path / "p.json")
    assert main(["calibrate", "--from-trace", *[f"4={p}" for p in paths], "--out", out]) == 0
    said = capsys.readouterr().out
    assert "the traces ran on NVIDIA H100 80GB HBM3: the parts they do not measure come from " \
           "the hardware preset dgx-h100" in said
    profile = load_profile(out)
    assert profile.hardware.device_name == "H100-SXM5 80GB"
    assert profile.compute.attention_kernel == FLASH2_KERNEL
    assert "attention kernel: flash2 (the traces' kernels)" in profile.compute.source
    code = main(["calibrate", "--from-trace", f"4={paths[0]}", "--out",
                 str(tmp_path / "q.json"), "--base", "dgx-a100"])
    assert code == 2
    assert "the traces ran on NVIDIA H100 80GB HBM3" in capsys.readouterr().err


def test_traces_of_another_gpu_than_an_existing_profiles_are_said(tmp_path, capsys):
    """Traces of H100 ranks into an existing A100 profile (updated in place, not rebased): its
    compute is then the H100's and the rest the A100's, which the report says."""
    from scalesim.profiles import resolve_profile

    out = tmp_path / "a100.json"
    out.write_text(resolve_profile(None, "dgx-a100", "llama3-8b").model_dump_json())
    path = write(tmp_path, trace(rank=0, world=1))
    assert main(["calibrate", "--from-trace", f"4={path}", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert ("the traces ran on NVIDIA H100 80GB HBM3, the profile's device is A100-SXM4 80GB: "
            "their compute is that GPU's") in said


def test_traces_of_two_gpus_are_refused_as_logs_of_two_are(tmp_path, capsys):
    """Traces of an H100 run and an A100 run in one call: one compute curve was fitted to both
    GPUs' steps and the new profile stayed the default presets' A100 40GB, without a word
    (``traced_gpu`` gave None for two names). Refused now in one line naming each GPU's files,
    as nccl-tests logs of two GPUs are, and nothing is written; two spellings of one GPU (the
    trace's and a preset's) are one."""
    from scalesim.sources.calibrate_from import traced_gpu
    from scalesim.sources.trace_compute import parse_entries, read_runs

    h100 = write(tmp_path, trace(rank=0, world=1), "h100.json")
    a100 = write(tmp_path, trace(rank=0, world=1, device="NVIDIA A100-SXM4-80GB"), "a100.json")
    out = tmp_path / "p.json"
    assert main(["calibrate", "--from-trace", f"4={h100}", f"8={a100}", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the traces ran on 2 different GPUs (NVIDIA A100-SXM4-80GB " \
        "in a100.json; NVIDIA H100 80GB HBM3 in h100.json): a profile describes one machine" in err
    assert not out.exists()
    spelled = write(tmp_path, trace(rank=0, world=1, device="H100-SXM5 80GB"), "spelled.json")
    runs = read_runs(parse_entries([f"4={h100}", f"8={spelled}"], None))
    assert traced_gpu(runs) in ("NVIDIA H100 80GB HBM3", "H100-SXM5 80GB")


def test_logs_that_name_no_gpu_take_the_traces_gpu(tmp_path, capsys):
    """A new profile from an nccl-tests results table without its rank lines (no GPU named) and
    traces of an H100: it stayed the default presets' A100 40GB, the traces' GPU unused
    (nccl-tests logs describe the server), and the report told the user to "trace the GPU the
    profile describes", which the traces had done. It is rebased on the traces' GPU now, the
    logs' links kept; a --base of another GPU is refused, as for the traces alone."""
    from pathlib import Path

    from scalesim.profiles import load_profile

    log = Path(__file__).parent / "fixtures" / "nccl_tests" / "a40_pcie_sys_4gpu_table_only.txt"
    path = write(tmp_path, trace(rank=0, world=1))
    out = tmp_path / "p.json"
    assert main(["calibrate", "--from-nccl-tests", str(log), "--from-trace", f"4={path}",
                 "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "the traces ran on NVIDIA H100 80GB HBM3: the parts they do not measure come from " \
           "the hardware preset dgx-h100" in said
    assert "the profile's device is" not in said
    profile = load_profile(out)
    assert profile.hardware.device_name == "H100-SXM5 80GB"
    assert profile.hardware.devices_per_node == 4
    assert profile.hardware.intra_node.source.startswith("nccl-tests logs a40_pcie_sys_4gpu")
    assert main(["calibrate", "--from-nccl-tests", str(log), "--from-trace", f"4={path}",
                 "--out", str(tmp_path / "q.json"), "--base", "dgx-a100"]) == 2
    assert "--base dgx-a100: its GPU is A100-SXM4 80GB, the traces ran on NVIDIA H100 80GB " \
           "HBM3" in capsys.readouterr().err


def test_gpu_traces_that_name_no_gpu_say_the_profile_stays_the_defaults(tmp_path, capsys):
    """GPU traces without deviceProperties into a new profile: it stays the default presets'
    A100 40GB, as before session 36, but silently, where a GPU no preset lists is said. It is
    said now, in one line; with --base PRESET nothing is (the user chose the GPU)."""
    path = write(tmp_path, trace(rank=0, world=1, device=""))
    assert main(["calibrate", "--from-trace", f"4={path}", "--out", str(tmp_path / "p.json")]) == 0
    said = [line for line in capsys.readouterr().out.splitlines() if "deviceProperties" in line]
    assert said == ["  the traces do not name their GPU (no deviceProperties): this new profile's "
                    "device, peak and memory stay the default presets' A100-SXM4 40GB (give --base "
                    "the hardware preset of the GPU that ran them: scalesim presets)"]
    assert main(["calibrate", "--from-trace", f"4={path}", "--out", str(tmp_path / "q.json"),
                 "--base", "dgx-h100"]) == 0
    assert "deviceProperties" not in capsys.readouterr().out


def test_traces_of_a_gpu_no_preset_lists_keep_their_own_compute_in_the_words(tmp_path, capsys):
    """Traces of a GPU no preset lists: the new profile's device, peak and memory stay the
    default's, but its compute curve is the traces' own; the line said that the compute stayed
    the default presets' too (the words of nccl-tests logs, which measure no compute)."""
    from scalesim.profiles import load_profile

    path = write(tmp_path, trace(rank=0, world=1, device="NVIDIA B300 SXM6 AC"))
    out = tmp_path / "p.json"
    assert main(["calibrate", "--from-trace", f"4={path}", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "the traces ran on NVIDIA B300 SXM6 AC, which no hardware preset lists: this new " \
           "profile's device, peak and memory stay the default presets' A100-SXM4 40GB" in said
    assert load_profile(out).compute.measured
