"""Hardware premises (harness/machine/premises.py) and every check branch that rests on one, each premise
faked both ways, in this process (the fresh-process ones: tests/integration/test_premises.py)."""

from __future__ import annotations

import pytest
import torch

from cases._launch import isolated as _isolated
from cases.misc import sampling_ops as sampling
from cases.parallel import dp_vs_ddp
from cases.precision import tf32
from cases.spec import Verdict
from harness import machine
from harness.machine import premises, requirements
from harness.machine.premises import Premise

CPU = torch.device("cpu")
PRESENT = Premise("faked premise", True, "faked present by the test")
ABSENT = Premise("faked premise", False, "faked absent by the test")


def _fake(monkeypatch, name: str, premise: Premise) -> None:
    monkeypatch.setattr(premises, name, lambda *args, **kwargs: premise)


def _fake_gpu(monkeypatch, sm: tuple[int, int]) -> None:
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: sm)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Fake GPU")


def _bf16_inputs(run):
    """A stand-in for oneDNN's bf16 path that rounds the same on every CPU: inputs to bf16, then IEEE."""
    return lambda a, b: run(a.bfloat16().float(), b.bfloat16().float())


def _tf32_inputs(run):
    """A stand-in for a TF32 path: inputs truncated to TF32's 10 explicit mantissa bits."""

    def truncate(t):
        return (t.contiguous().view(torch.int32) & -(1 << 13)).view(torch.float32)

    return lambda a, b: run(truncate(a), truncate(b))


def _reordered(run):
    """A stand-in for oneDNN under the bf16 flag on AVX-512-BF16 without AMX (issue 14): fp32 inputs
    kept, the K products summed in another order (both operands' K axis reversed)."""
    return lambda a, b: run(a.flip(1), b.flip(0) if b.dim() == 2 else b.flip(1))


def _kernels(monkeypatch, reduce):
    """Make the kernels the flags select behave the same on every CPU: IEEE kernels, their inputs
    passed through `reduce` under a reduced-precision flag."""
    real = premises._flagged

    def flagged(op, device, mode):
        ieee = real(op, device, "ieee")
        return ieee if mode == "ieee" else reduce(ieee)

    monkeypatch.setattr(premises, "_flagged", flagged)
    premises._rounds_inputs.cache_clear()


@pytest.fixture(autouse=True)
def _fresh_probes():
    premises._rounds_inputs.cache_clear()  # a faked kernel must not leave its answer cached
    yield
    premises._rounds_inputs.cache_clear()


# ---- detection --------------------------------------------------------------------------------------


def test_onednn_premise_is_measured_not_read_from_the_cpu_flags(monkeypatch):
    monkeypatch.setattr(premises, "cpu_flags", lambda: frozenset({"avx512f", "avx512_bf16", "amx_bf16"}))
    _kernels(monkeypatch, _reordered)
    flags_say_yes = premises.onednn_reduced("matmul", "bf16")
    assert not flags_say_yes.present
    assert "amx_bf16 yes" in flags_say_yes.evidence and "unrounded" in flags_say_yes.evidence
    monkeypatch.setattr(premises, "cpu_flags", lambda: frozenset())
    _kernels(monkeypatch, _bf16_inputs)
    flags_say_no = premises.onednn_reduced("conv", "bf16")
    assert flags_say_no.present
    assert "amx_bf16 no" in flags_say_no.evidence and "rounded the fp32 inputs" in flags_say_no.evidence


@pytest.mark.parametrize("what", ["matmul", "conv"])
def test_onednn_premise_agrees_with_the_precision_delivered_on_random_data(what):
    """On this machine, whatever its CPU: the probe at the check's shapes says 'rounds' exactly when
    the flag's error on random data is in bf16's class (over 10× fp32's), and 'unrounded' when not."""
    if what == "matmul":
        a, b = tf32.make_matmul({"n": 512}, torch.float32, CPU, seed=5)
        ieee, reduced = tf32._matmul_at("highest"), tf32._matmul_at("medium")
    else:
        a, b = tf32.make_conv({"n": 512}, torch.float32, CPU, seed=5)
        ieee, reduced = tf32._conv(False), tf32._conv(True)
    truth = tf32.truth_float64(a, b)
    lowered = tf32._rel_error(reduced(a, b), truth) > 10 * tf32._rel_error(ieee(a, b), truth)
    assert premises.onednn_reduced(what, "bf16", shapes=[a.shape, b.shape]).present == lowered


def test_a_kernel_with_its_own_small_error_is_not_mistaken_for_rounding(monkeypatch):
    """Winograd/FFT convolutions (cuDNN's choice for some fp32 shapes) are off by ~1e-6 relative;
    the rounding signature is K·2⁻¹², hundreds of times larger."""
    _kernels(monkeypatch, lambda run: lambda a, b: run(a, b) * (1 - 1e-6))
    assert not premises.onednn_reduced("conv", "bf16").present


def test_the_probe_runs_at_the_shapes_it_is_given(monkeypatch):
    """oneDNN with AMX keeps GEMMs below 32×32 in fp32: the premise holds per shape."""

    def amx_like(run):
        return lambda a, b: _bf16_inputs(run)(a, b) if a.shape[-1] >= 32 else run(a, b)

    _kernels(monkeypatch, amx_like)
    assert not premises.onednn_reduced("matmul", "bf16", shapes=[(16, 16), (16, 16)]).present
    assert premises.onednn_reduced("matmul", "bf16", shapes=[(512, 512), (512, 512)]).present


@pytest.mark.parametrize("sm, rounds", [((7, 5), False), ((8, 0), True), ((9, 0), False)])
def test_tf32_premise_records_the_capability_and_is_decided_by_the_measurement(monkeypatch, sm, rounds):
    _fake_gpu(monkeypatch, sm)
    monkeypatch.setattr(premises, "_rounds_inputs", lambda *args: (rounds, "faked measurement"))
    found = premises.cuda_tf32(torch.device("cuda", 0), "matmul")
    assert found.present is rounds
    assert f"Fake GPU sm_{sm[0]}{sm[1]}" in found.evidence and "sm_80+" in found.evidence


@pytest.mark.parametrize(
    "sm, tensor_cores", [((7, 0), {"fp16"}), ((7, 5), {"fp16"}), ((8, 6), {"fp16", "bf16", "tf32"})]
)
def test_tensor_cores_per_dtype_from_the_compute_capability(monkeypatch, sm, tensor_cores):
    _fake_gpu(monkeypatch, sm)
    gpu = torch.device("cuda", 0)
    found = {d for d in ("fp16", "bf16", "tf32") if premises.cuda_tensor_cores(gpu, d).present}
    assert found == tensor_cores


def test_compiler_premise_is_a_compiled_probe_not_a_name_on_path(monkeypatch):
    monkeypatch.setattr(premises, "_inductor_compilers", lambda: ["/nonexistent/c++", "false"])
    monkeypatch.setattr(premises, "_COMPILE_PROBED", {})  # not what an earlier test found
    found = premises.torch_compile("cpu")
    assert not found.present
    assert "/nonexistent/c++" in found.evidence and "false failed" in found.evidence


def test_tokens_give_the_premise_as_the_skip_reason(monkeypatch):
    _fake(monkeypatch, "torch_compile", Premise("torch.compile on cpu", False, "no C++ compiler builds"))
    reason = requirements.unmet(("compiler",), "cpu")
    assert reason == "torch.compile cannot build kernels for cpu here: no C++ compiler builds"
    _fake(monkeypatch, "torch_compile", PRESENT)
    assert requirements.unmet(("compiler",), "cpu") is None
    _fake(monkeypatch, "nccl", Premise("NCCL", False, "torch is not built with NCCL"))
    assert requirements.unmet(("nccl",), "cpu") == "needs NCCL: torch is not built with NCCL"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert requirements.unmet(("gpus>=2",), "cuda") == "needs >= 2 GPUs, found 1"


def test_torch_compile_is_probed_once_and_only_where_a_point_asks(monkeypatch):
    """The results file names torch.compile's premise as the run found it, and a run that never
    asked (no compiled point selected) records it not probed instead of paying 1.5-3 s for it."""
    calls = []
    monkeypatch.setattr(premises, "_COMPILE_PROBED", {})
    monkeypatch.setattr(premises, "_torch_compile", lambda d: calls.append(d) or PRESENT)
    assert premises.summary()["torch.compile on cpu"]["present"] is None and calls == []
    assert requirements.unmet(("compiler",), "cpu") is None and premises.torch_compile("cpu") is PRESENT
    assert calls == ["cpu"]
    assert premises.summary()["torch.compile on cpu"] == {"present": True, "evidence": PRESENT.evidence}


def test_machine_info_records_the_premises():
    found = machine.machine_info()["premises"]
    assert {"oneDNN bf16 for fp32 matmul on this CPU", ">= 2 GPU(s)", "torch.compile on cpu"} <= set(found)
    assert all(set(p) == {"present", "evidence"} and p["evidence"] for p in found.values())


# ---- precision.tf32: oneDNN bf16 on the CPU, TF32 on the GPU --------------------------------------


@pytest.mark.parametrize("name", ["matmul_error", "conv_error"])
def test_reduced_error_depends_where_the_premise_is_absent(monkeypatch, name):
    _fake(monkeypatch, "reduced_fp32", ABSENT)
    finding = tf32.CASE.checks[name].fn(CPU)
    assert finding.verdict is Verdict.DEPENDS and str(ABSENT) in finding.evidence


@pytest.mark.parametrize("what", ["matmul", "conv"])
def test_reduced_error_is_judged_where_the_premise_holds(monkeypatch, what):
    _fake(monkeypatch, "reduced_fp32", PRESENT)
    if what == "matmul":
        make, ieee = tf32.make_matmul, tf32._matmul_at("highest")
    else:
        make, ieee = tf32.make_conv, tf32._conv(False)
    finding = tf32._error_check(make, ieee, _bf16_inputs(ieee), what)(CPU)
    assert finding.verdict is Verdict.HOLDS and str(PRESENT) in finding.evidence
    unchanged = tf32._error_check(make, ieee, ieee, what)(CPU)
    assert unchanged.verdict is Verdict.FAILS and "did not lower precision" in unchanged.evidence


@pytest.mark.parametrize("what", ["matmul", "conv"])
def test_the_xeon_without_amx_of_issue_14(monkeypatch, what):
    """The bf16 flag changes oneDNN's summation order there but not its precision (matmul error
    9.1e-07 with the flag, 6.23e-07 without): detected as an absent premise, judged `depends`."""
    if what == "matmul":
        make, ieee = tf32.make_matmul, tf32._matmul_at("highest")
    else:
        make, ieee = tf32.make_conv, tf32._conv(False)
    _kernels(monkeypatch, _reordered)
    finding = tf32._error_check(make, ieee, _reordered(ieee), what)(CPU)
    assert finding.verdict is Verdict.DEPENDS
    assert "unrounded" in finding.evidence and "amx_bf16" in finding.evidence
    _kernels(monkeypatch, _bf16_inputs)
    assert tf32._error_check(make, ieee, _bf16_inputs(ieee), what)(CPU).verdict is Verdict.HOLDS


def test_reduced_error_on_cuda_by_compute_capability(monkeypatch):
    k, fp32_err = 512, 3e-7  # the H100 run in the shared logs: 3e-07 fp32, 0.00031 TF32 at K = 512
    _fake_gpu(monkeypatch, (7, 5))
    monkeypatch.setattr(premises, "_rounds_inputs", lambda *args: (False, "faked: inputs unrounded"))
    turing = tf32.judge_reduced_error(
        "matmul", "cuda", k, fp32_err, fp32_err, premises.cuda_tf32(torch.device("cuda", 0), "matmul")
    )
    assert turing.verdict is Verdict.DEPENDS and "sm_75" in turing.evidence
    _fake_gpu(monkeypatch, (9, 0))
    monkeypatch.setattr(premises, "_rounds_inputs", lambda *args: (True, "faked: inputs rounded"))
    hopper = premises.cuda_tf32(torch.device("cuda", 0), "matmul")
    assert tf32.judge_reduced_error("matmul", "cuda", k, fp32_err, 3.1e-4, hopper).verdict is Verdict.HOLDS
    beyond = tf32.judge_reduced_error("matmul", "cuda", k, fp32_err, 2 * k * tf32.U_TF32, hopper)
    assert beyond.verdict is Verdict.FAILS and "K·u" in beyond.evidence


@pytest.mark.parametrize("tf32_path", [False, True], ids=["no_tf32_path", "tf32_path"])
def test_high_on_cpu_by_whether_onednn_has_a_tf32_path(monkeypatch, tf32_path):
    real = tf32._matmul_at

    def at(level):  # a CPU whose oneDNN does (or does not) give 'high' a TF32 path
        if level != "high":
            return real(level)
        return _tf32_inputs(real("highest")) if tf32_path else real("highest")

    monkeypatch.setattr(tf32, "_matmul_at", at)
    _kernels(monkeypatch, _tf32_inputs if tf32_path else (lambda run: run))
    finding = tf32.check_cpu_high_is_noop(CPU)
    if tf32_path:
        assert finding.verdict is Verdict.DEPENDS and "oneDNN tf32" in finding.evidence
    else:
        assert finding.verdict is None and "bitwise the same" in finding.evidence


def test_dataparallel_without_gpus_in_this_process(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    finding = dp_vs_ddp.check_dataparallel_without_gpus(CPU)
    assert "in this process" in finding.evidence and "device_ids=[]" in finding.evidence


def _dp(**changes):
    seen = {
        "gpus": 4,
        "device_ids": [0, 1, 2, 3],
        "module_device": "cuda:0",
        "output_device": "cuda:0",
        "bitwise_equal": False,
        "max_abs_err": 1e-7,
        "bound": 1e-4,
    }
    return {**seen, **changes}


def test_dataparallel_judgement_for_one_and_several_gpus():
    assert "over 4 GPUs" in dp_vs_ddp.judge_dataparallel(_dp(), "this process").evidence
    one = _dp(gpus=1, device_ids=[0], bitwise_equal=True)
    assert "with 1 GPU" in dp_vs_ddp.judge_dataparallel(one, "this process").evidence
    for wrong in (
        _dp(max_abs_err=0.3),
        _dp(device_ids=[0, 1]),
        {**one, "bitwise_equal": False},
        {**one, "module_device": "cpu"},
        _dp(gpus=0, device_ids=[0]),
    ):
        with pytest.raises(AssertionError):
            dp_vs_ddp.judge_dataparallel(wrong, "this process")


def test_device_side_assert_evidence(monkeypatch):
    """The shape of what the H100 printed (1-checks-all.log), as the fresh processes report it."""
    printed = (
        "TensorCompare.cu:109: _assert_async_cuda_kernel: block: [0,0,0], thread: [0,0,0] Assertion "
        "`probability tensor contains either `inf`, `nan` or element < 0` failed."
    )
    raised = {"raised": "AcceleratorError", "message": "CUDA error: device-side assert triggered"}
    answer = _isolated.Outcome(raised, None, printed)
    monkeypatch.setattr(sampling, "_asserts_on_device", lambda device: True)
    monkeypatch.setattr(sampling._isolated, "run_each", lambda calls, **kw: [answer for _ in calls])
    found = sampling._rejections(CPU)
    kernel = "probability tensor contains either `inf`, `nan` or element < 0"
    assert all(r["kernel"] == kernel for r in found.values())
    assert sampling._how(found["negative"]).startswith("a device-side assert ('probability tensor")
    silent = _isolated.Outcome({"raised": None, "message": ""}, None, "")
    monkeypatch.setattr(sampling._isolated, "run_each", lambda calls, **kw: [silent for _ in calls])
    accepted = sampling.check_multinomial_weights(CPU)
    assert accepted.verdict is Verdict.FAILS and "ACCEPTED" in accepted.evidence
