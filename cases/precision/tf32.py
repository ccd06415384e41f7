"""TF32 and the other reduced-precision modes of fp32 matmul and convolution (notes 003, cuda).

The notes: "since PyTorch 1.7 setting `torch.backends.cuda.matmul.allow_tf32` and
`torch.backends.cudnn.allow_tf32` to True speeds up fp32 maths; both default to True". TF32 keeps
fp32's 8-bit exponent and rounds the mantissa to 10 bits (unit roundoff 2⁻¹¹ vs fp32's 2⁻²⁴), so
an fp32 GEMM on Ampere+ tensor cores is ~8× faster at ~1e-3 relative error. On a CPU the same knob,
`set_float32_matmul_precision('medium')` (new API: `mkldnn.matmul.fp32_precision = 'bf16'`), makes
oneDNN compute fp32 GEMMs in bf16 (8-bit mantissa) on CPUs with AMX; with AVX-512-BF16 alone it
only changes the summation order, and 'high' does nothing on any CPU met so far. Whether the flag
lowers precision on the machine at hand is measured (`harness.premises`), and where it does not the
error checks say `depends`. Every variant sets its flags inside the call and restores them afterwards
(`harness.precision_flags`), so nothing leaks into other cases.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from cases._lib.inputs import generator
from cases.spec import Case, Check, Erratum, ErratumKind, Finding, InputFamily, Tol, Verdict, naive, optimized
from harness import precision_flags as flags
from harness import premises
from harness.rules import AllOf, Faster

FP32 = torch.float32
U_FP32, U_TF32, U_BF16 = 2.0**-24, 2.0**-11, 2.0**-9


def _randn(shape, g, scale, device):
    return torch.randn(shape, generator=g, device=device) * scale


def make_matmul(size, dtype, device, seed):
    """(n, n) @ (n, n), entries scaled by n^-1/4 so that outputs are O(1) at every n."""
    g, n = generator(device, seed), size["n"]
    s = n**-0.25
    return _randn((n, n), g, s, device).to(dtype), _randn((n, n), g, s, device).to(dtype)


def make_conv(size, dtype, device, seed):
    """3×3 conv, C = n/8 channels in and out on 32×32 images, batch 8; weights scaled by
    1/√(9C) so outputs are O(1)."""
    g, c = generator(device, seed), max(size["n"] // 8, 8)
    x = _randn((8, c, 32, 32), g, 1.0, device).to(dtype)
    w = _randn((c, c, 3, 3), g, (9 * c) ** -0.5, device).to(dtype)
    return x, w


def _matmul_at(level):
    def run(a, b):
        # 2n³ flops; reads 2n², writes n² elements. Only the kernel choice differs between levels.
        with flags.matmul_precision(level):
            return a @ b

    run.__name__ = f"matmul_{level}"
    return run


def _conv(reduced):
    def run(x, w):
        # 2·B·C²·9·H·W flops: compute-bound, so the precision of the MACs sets the speed.
        with flags.conv_precision(x.device, reduced):
            return F.conv2d(x, w, padding=1)

    run.__name__ = "conv_reduced" if reduced else "conv_ieee"
    return run


def truth_float64(a, b):
    if a.dim() == 2:
        return a.double() @ b.double()
    return F.conv2d(a.double(), b.double(), padding=1)


def _rel_error(got, truth):
    return ((got.double() - truth).abs().max() / truth.abs().max()).item()


def _reduced_matmul_level(device):
    """The level that reduces fp32 matmul precision on this device: 'high' (TF32) on CUDA,
    'medium' (bf16) on the CPU, where 'high' is documented to have no effect."""
    return "high" if device.type == "cuda" else "medium"


# ---- checks -------------------------------------------------------------------------------------


def check_defaults(device):
    """The installed torch's real defaults, read in a fresh state (inside `preserved`, so whatever
    another case left behind cannot leak in or out). The notes claim both legacy flags are True."""
    with flags.preserved() as before:
        state = dict(before)
    matmul, cudnn = state["backends.cuda.matmul.allow_tf32"], state["backends.cudnn.allow_tf32"]
    assert matmul in (True, False, flags.UNREADABLE), f"allow_tf32 read as {matmul!r}"
    evidence = (
        f"torch {torch.__version__}: cuda.matmul.allow_tf32={matmul}, cudnn.allow_tf32={cudnn}, "
        f"float32_matmul_precision={state['float32_matmul_precision']!r}"
    )
    if flags.has_new_api():
        evidence += "; new API: " + ", ".join(
            f"{p.removeprefix('backends.')}={state[p]!r}" for p in flags.NEW_API if state[p] != flags.ABSENT
        )
    return judge_defaults(matmul, cudnn, evidence)


def judge_defaults(matmul, cudnn, evidence: str) -> Finding:
    """A default is the notes' statement, not the technique: each flag the notes say defaults to
    True and does not here is a wrong-default erratum. The finding decides nothing (the toggles are
    judged by the error and speed checks)."""
    errata = tuple(
        Erratum(
            ErratumKind.WRONG_DEFAULT,
            f"# The flag below controls whether to allow TF32 on {what}. This flag defaults to True.",
            f"{flag} defaults to {value} here"
            + ("; it was True for matmul only up to torch 1.11" if what == "matmul" else ""),
        )
        for what, flag, value in (
            ("matmul", "torch.backends.cuda.matmul.allow_tf32", matmul),
            ("cuDNN", "torch.backends.cudnn.allow_tf32", cudnn),
        )
        if value is False  # an unreadable legacy flag proves nothing either way
    )
    return Finding(None, evidence, errata)


def check_api_mixing(device):
    """In torch with the new API, a new-API write the legacy view cannot express makes the legacy
    getter raise; the legacy setter is mirrored into the new API. Both directions, and the
    restore, observed (not assumed)."""
    if not flags.has_new_api():
        with flags.preserved():
            torch.backends.cuda.matmul.allow_tf32 = True
            assert torch.get_float32_matmul_precision() == "high", "legacy allow_tf32 should mean 'high'"
        return Finding(None, f"torch {torch.__version__} has only the legacy API (no fp32_precision)")
    with flags.preserved() as saved:
        torch.set_float32_matmul_precision("medium")
        mirrored = (torch.backends.cuda.matmul.fp32_precision, torch.backends.mkldnn.matmul.fp32_precision)
        assert mirrored == ("tf32", "bf16"), f"'medium' mirrored as (cuda, mkldnn) = {mirrored}"
        flags.restore(saved)
        torch.backends.mkldnn.matmul.fp32_precision = "bf16"
        try:
            torch.get_float32_matmul_precision()
            raised = None
        except RuntimeError as exc:
            raised = str(exc).split(",")[0]
    assert flags.snapshot() == saved, "state not restored after mixing the APIs"
    return Finding(
        None,
        f"torch {torch.__version__}: set_float32_matmul_precision('medium') sets cuda.matmul='tf32' and "
        f"mkldnn.matmul='bf16'; after mkldnn.matmul.fp32_precision='bf16' the legacy getter "
        + (f"raises RuntimeError ({raised!r})" if raised else "still reads"),
    )


def _reduced_mode(device_type):
    """(name, unit roundoff) of the reduced path the flags select: TF32 on CUDA, oneDNN bf16 on CPU."""
    return ("TF32", U_TF32) if device_type == "cuda" else ("oneDNN bf16", U_BF16)


def judge_reduced_error(what, device_type, k, full, reduced, premise):
    """The finding on "lower precision" from the two relative errors against float64.

    Worst case of a length-K dot product: γ_K·Σ|a||b| ≈ K·u·(max output scale); the observed max
    error of random data sits ~√K below that. So whatever the hardware, the IEEE path is held to
    K·u_fp32 and the flagged path to K·u of its mode (a flag without effect leaves the fp32 error,
    inside both). Only where the premise holds (the flag really selects reduced kernels here) is the
    claim judged: the reduced error must then exceed the fp32 *observed* error tenfold."""
    mode, unit = _reduced_mode(device_type)
    assert full <= k * U_FP32, f"{what} with reduced precision off: error {full:.3g} > K·u = {k * U_FP32:.3g}"
    assert reduced <= k * unit, f"{what} {mode} error {reduced:.3g} > K·u = {k * unit:.3g}"
    measured = (
        f"{what} (K={k}) on {device_type}: rel error vs float64 {full:.2g} in full fp32, "
        f"{reduced:.2g} with {mode}"
    )
    if not premise.present:
        return Finding(Verdict.DEPENDS, f"{premise}: the flag does not lower precision here; {measured}")
    assert reduced > 10 * full, (
        f"{what} {mode} error {reduced:.3g} not tenfold fp32's {full:.3g}: the flag did not lower precision"
    )
    return Finding(Verdict.HOLDS, f"{measured} ({reduced / full:.0f}× fp32's); {premise}")


def _error_check(make, run_full, run_reduced, what):
    def check(device):
        size = {"n": 512}
        inputs = make(size, FP32, device, seed=11)
        truth = truth_float64(*inputs)
        k = inputs[0].shape[1] if what == "matmul" else inputs[1][0].numel()
        # Which kernels the flags select depends on the shapes (oneDNN keeps GEMMs below 32×32 in
        # fp32 even with AMX), so the premise is measured at this computation's shapes.
        premise = premises.reduced_fp32(device, what, shapes=[tuple(t.shape) for t in inputs])
        full, reduced = _rel_error(run_full(*inputs), truth), _rel_error(run_reduced(*inputs), truth)
        return judge_reduced_error(what, device.type, k, full, reduced, premise)

    return check


def check_cpu_high_is_noop(device):
    """'high' lets CUDA use TF32 but leaves the CPU in full fp32 where oneDNN has no TF32 path for
    it: fp32's error bound, bitwise the same result here. Where it rounds to TF32 the claim depends
    on the CPU, and the change is held to TF32's bound."""
    a, b = make_matmul({"n": 256}, FP32, device, seed=3)
    truth, k = truth_float64(a, b), a.shape[1]
    highest, high = _matmul_at("highest")(a, b), _matmul_at("high")(a, b)
    err, same = _rel_error(high, truth), torch.equal(highest, high)
    premise = premises.onednn_reduced("matmul", "tf32", shapes=[tuple(a.shape), tuple(b.shape)])
    if not premise.present:
        assert err <= k * U_FP32, f"'high' on CPU: rel error {err:.3g} > K·u_fp32 = {k * U_FP32:.3g}"
        return Finding(
            None,
            f"on CPU, 'high' keeps fp32 matmuls in fp32 (256³: rel error {err:.2g}, "
            f"{'bitwise the same as' if same else 'summed in another order than'} 'highest'); "
            f"{premise}",
        )
    assert err <= k * U_TF32, f"'high' on CPU: rel error {err:.3g} > K·u_tf32 = {k * U_TF32:.3g}"
    return Finding(
        Verdict.DEPENDS,
        f"{premise}: on this CPU 'high' rounds fp32 matmuls to TF32 (rel error "
        f"{err:.2g} vs float64, within K·u_tf32), where the claim is that it leaves them alone",
    )


# Outputs are O(1) sums of K products (matmul K = n, conv K = 9·C = 9·max(n/8, 8), the larger) of
# any sign: ~u·√K of the terms' size on every output, near-zero ones included, so a floor at the
# outputs' scale: 2u·√K (1.6e-5 at n = 16384) in IEEE fp32, while a silent TF32/bf16 path is off by
# ~1e-3.
IEEE_FP32 = {FP32: lambda s: Tol(rtol=8 * U_FP32, floor=2 * U_FP32 * (9 * max(s["n"] // 8, 8)) ** 0.5)}


def _scaled(power):
    def transform(a, b):
        # A power of two scales exactly: the same mantissas, every product's exponent moved by 2·power.
        return a * 2.0**power, b * 2.0**power

    return transform


# Both operands scaled by 2⁶⁰: outputs ≈ 2¹²⁰ (fp32's largest is ≈ 2¹²⁸), so a kernel that
# overflows an intermediate (a partial sum, a bf16/TF32 split of an operand) shows. By 2⁻⁵⁶:
# products ≈ 2⁻¹¹⁶, still 10 binades above fp32's smallest normal (2⁻¹²⁶), so rounding stays
# relative and the bounds, relative to the truth's own scale, hold unchanged.
INPUT_FAMILIES = {"near_fp32_max": InputFamily(_scaled(60)), "tiny": InputFamily(_scaled(-56))}


REDUCED_KERNEL = (
    "a reduced-precision fp32 kernel under the flag (TF32 tensor cores; oneDNN's AMX/AVX-512 bf16)"
)


CASE = Case(
    id="precision.tf32",
    tier=1,
    claim="torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32 (both default True "
    "since 1.7) make fp32 matmul and convolution much faster at lower precision.",
    source="003 cuda",
    make_inputs=make_matmul,
    variants={
        "matmul.highest": naive(_matmul_at("highest"), tolerance=IEEE_FP32),
        "matmul.high": optimized(_matmul_at("high")),
        "matmul.medium": optimized(_matmul_at("medium")),
        "conv.ieee": naive(_conv(False), inputs=make_conv, tolerance=IEEE_FP32),
        "conv.reduced": optimized(_conv(True), inputs=make_conv),
    },
    oracle=truth_float64,
    # The case tolerance admits the reduced modes on purpose: TF32 (u = 2⁻¹¹) or oneDNN's bf16
    # (inputs rounded to 8 bits, u = 2⁻⁸) rounds every product's operands: ~u·√2 of the products'
    # size per output, 1.4u of the outputs' rms, a few times that at the worst of millions of
    # outputs (measured: 0.7u of max|truth|, bf16 on AMX): 4u_bf16 at the outputs' scale and 2u
    # relative. The IEEE variants are held to IEEE_FP32; the *_error checks assert both bounds per K.
    tolerance={FP32: Tol(rtol=2 * 2.0**-8, floor=4 * 2.0**-8)},
    input_families=INPUT_FAMILIES,
    dtypes={"cpu": (FP32,), "cuda": (FP32,)},
    sizes={
        "quick": [{"n": 256}, {"n": 512}],
        "full": [{"n": n} for n in (2048, 4096, 8192, 16384)],
    },
    checks={
        "defaults": Check(check_defaults, devices=("cpu",)),
        "api_mixing": Check(check_api_mixing, devices=("cpu",)),
        "matmul_error": Check(
            _error_check(
                make_matmul,
                _matmul_at("highest"),
                lambda a, b: _matmul_at(_reduced_matmul_level(a.device))(a, b),
                "matmul",
            )
        ),
        "conv_error": Check(_error_check(make_conv, _conv(False), _conv(True), "conv")),
        "cpu_high_is_noop": Check(check_cpu_high_is_noop, devices=("cpu",)),
    },
    # A gain needs a reduced-precision kernel under the flag (TF32 tensor cores, oneDNN's AMX/bf16):
    # where the two sides give bitwise-identical results there is none, and the claim depends on
    # that hardware (measured on an AMD EPYC without AMX: 1.00× [0.99, 1.00], identical outputs).
    verdict=AllOf(
        (
            Faster("matmul.high", "matmul.highest", premise=REDUCED_KERNEL),
            Faster("conv.reduced", "conv.ieee", premise=REDUCED_KERNEL),
        )
    ),
)
