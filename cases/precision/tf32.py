"""TF32 and the other reduced-precision modes of fp32 matmul and convolution (notes 003, cuda).

The notes: "since PyTorch 1.7 setting `torch.backends.cuda.matmul.allow_tf32` and
`torch.backends.cudnn.allow_tf32` to True speeds up fp32 maths; both default to True". TF32 keeps
fp32's 8-bit exponent and rounds the mantissa to 10 bits (unit roundoff 2⁻¹¹ vs fp32's 2⁻²⁴), so
an fp32 GEMM on Ampere+ tensor cores is ~8× faster at ~1e-3 relative error. On a CPU the same knob,
`set_float32_matmul_precision('medium')` (new API: `mkldnn.matmul.fp32_precision = 'bf16'`), makes
oneDNN compute fp32 GEMMs in bf16 (8-bit mantissa) on CPUs with AMX; with AVX-512-BF16 alone it
only changes the summation order, and 'high' does nothing on any CPU met so far. Whether the flag
lowers precision on the machine at hand is measured (`harness.machine.premises`), and where it does not the
error checks say `depends`. Every variant carries its flags as its context
(`harness.measure.block_context.scoped`): a direct call sets and restores them itself, and the harness
sets them once around a block of timed calls, so the ~110-170 µs of saving, setting and checking
them is not timed with the GEMM; nothing leaks into other cases either way.
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F

from cases._lib.inputs import generator
from cases.spec import (
    Case,
    Check,
    Claim,
    ClaimKind,
    Finding,
    InputFamily,
    Tol,
    Verdict,
    naive,
    optimized,
)
from harness.contract.rules import AllOf, Faster
from harness.machine import premises
from harness.measure import block_context
from harness.measure import precision_flags as flags

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
    @block_context.scoped(lambda a, b: flags.matmul_precision(level))
    def run(a, b):
        # 2n³ flops; reads 2n², writes n² elements. Only the kernel choice differs between levels.
        return a @ b

    run.__name__ = f"matmul_{level}"
    return run


def _conv(reduced):
    @block_context.scoped(lambda x, w: flags.conv_precision(x.device, reduced))
    def run(x, w):
        # 2·B·C²·9·H·W flops: compute-bound, so the precision of the MACs sets the speed.
        return F.conv2d(x, w, padding=1)

    run.__name__ = "conv_reduced" if reduced else "conv_ieee"
    return run


@contextlib.contextmanager
def _notes_conv_flag(x, w):
    with flags.conv_precision(x.device, False):
        torch.backends.cudnn.allow_tf32 = True
        yield


@block_context.scoped(_notes_conv_flag)
def conv_notes_flag(x, w):
    """The notes' own line, `torch.backends.cudnn.allow_tf32 = True`, over an IEEE start on every
    backend (a oneDNN bf16 setting from the environment must not stand in for it). cuDNN's flag: on
    a CPU it selects nothing, and the conv is the IEEE one."""
    return F.conv2d(x, w, padding=1)


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


_READ_DEFAULTS = (
    "import os, torch; "
    "print(torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32, "
    "os.environ.get('TORCH_ALLOW_TF32_CUBLAS_OVERRIDE', ''))"
)


def check_defaults(device):
    """The notes: "默认值即为 True" and, on each flag, "This flag defaults to True". Read in a fresh
    interpreter: in this one any case (or the harness's precision contexts) may have set them, and
    a default is what a user's `import torch` gets."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _READ_DEFAULTS], capture_output=True, text=True, timeout=120, check=False
    )
    fields = done.stdout.split()
    if done.returncode != 0 or len(fields) < 2:
        return judge_defaults(None, None, f"the fresh interpreter failed: {done.stderr.strip()[-300:]}")
    matmul, cudnn = (f == "True" for f in fields[:2])
    override = fields[2] if len(fields) > 2 else ""
    return judge_defaults(
        matmul,
        cudnn,
        f"torch {torch.__version__}, a fresh interpreter: cuda.matmul.allow_tf32={matmul}, "
        f"cudnn.allow_tf32={cudnn}"
        + (f" (TORCH_ALLOW_TF32_CUBLAS_OVERRIDE={override} in the environment)" if override else ""),
    )


def judge_defaults(matmul, cudnn, evidence: str) -> Finding:
    """The notes' stated defaults, both True: holds where both read True, fails where either reads
    False (matmul's default is False since torch 1.12), not measured where they could not be read.
    A default is a claim of the notes, judged as written (CATALOG.md: a wrong default fails)."""
    if matmul is None or cudnn is None:
        return Finding(Verdict.NOT_MEASURED, evidence)
    wrong = [
        f"{flag} defaults to False"
        + (
            "; it was True only from torch 1.7 to 1.11: set it, or torch.set_float32_matmul_precision('high')"
            if what == "matmul"
            else ""
        )
        for what, flag, value in (
            ("matmul", "torch.backends.cuda.matmul.allow_tf32", matmul),
            ("cuDNN", "torch.backends.cudnn.allow_tf32", cudnn),
        )
        if not value
    ]
    return Finding(
        Verdict.FAILS if wrong else Verdict.HOLDS,
        evidence + (": " + "; ".join(wrong) if wrong else ": both default to True, as the notes say"),
    )


def check_api_mixing(device):
    """In torch with the new API, a new-API write the legacy view cannot express makes the legacy
    getter raise; the legacy setter is mirrored into the new API. Both directions, and the
    restore, observed (not assumed)."""
    if not flags.has_new_api():
        with flags.preserved():
            torch.backends.cuda.matmul.allow_tf32 = True
            legacy_high = torch.get_float32_matmul_precision()
        return judge_api_mixing(None, None, True, legacy_high)
    with flags.preserved() as saved:
        torch.set_float32_matmul_precision("medium")
        mirrored = (torch.backends.cuda.matmul.fp32_precision, torch.backends.mkldnn.matmul.fp32_precision)
        flags.restore(saved)
        torch.backends.mkldnn.matmul.fp32_precision = "bf16"
        try:
            torch.get_float32_matmul_precision()
            raised = None
        except RuntimeError as exc:
            raised = str(exc).split(",")[0]
    return judge_api_mixing(mirrored, raised, flags.snapshot() == saved)


def judge_api_mixing(mirrored, raised, restored: bool, legacy_high: str = "") -> Finding:
    """The catalogue's description of the two flag APIs, context (the notes know only the legacy
    flags): 'medium' mirrored as (cuda, mkldnn) = ('tf32', 'bf16'), the legacy getter raising after
    a new-API write it cannot express, the state restored. Legacy-only torch (`mirrored` None):
    allow_tf32 = True must read back as 'high'."""
    if mirrored is None:
        ok = legacy_high == "high" and restored
        return Finding(
            Verdict.HOLDS if ok else Verdict.FAILS,
            f"torch {torch.__version__} has only the legacy API (no fp32_precision); allow_tf32 = True reads "
            f"as {legacy_high!r}",
        )
    ok = tuple(mirrored) == ("tf32", "bf16") and restored
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        f"torch {torch.__version__}: set_float32_matmul_precision('medium') sets "
        f"(cuda.matmul, mkldnn.matmul) "
        f"= {tuple(mirrored)}; after mkldnn.matmul.fp32_precision='bf16' the legacy getter "
        + (f"raises RuntimeError ({raised!r})" if raised else "still reads")
        + ("" if restored else "; the state was NOT restored"),
    )


def _reduced_mode(device_type):
    """(name, unit roundoff) of the reduced path the flags select: TF32 on CUDA, oneDNN bf16 on CPU."""
    return ("TF32", U_TF32) if device_type == "cuda" else ("oneDNN bf16", U_BF16)


def judge_reduced_error(what, device_type, k, full, reduced, premise):
    """The finding on "lower precision" from the two relative errors against float64.

    Worst case of a length-K dot product: γ_K·Σ|a||b| ≈ K·u·(max output scale); the observed max
    error of random data sits ~√K below that. So whatever the hardware, the IEEE path is held to
    K·u_fp32 and the flagged path to K·u of its mode (a flag without effect leaves the fp32 error,
    inside both): an error past either bound fails (not the arithmetic the flags name). Only where
    the premise holds (the flag really selects reduced kernels here) is the claim judged: the
    reduced error must then exceed the fp32 *observed* error tenfold, or it fails."""
    mode, unit = _reduced_mode(device_type)
    measured = (
        f"{what} (K={k}) on {device_type}: rel error vs float64 {full:.2g} in full fp32, "
        f"{reduced:.2g} with {mode}"
    )
    beyond = []
    if not full <= k * U_FP32:
        beyond.append(f"reduced precision off: error {full:.3g} > K·u = {k * U_FP32:.3g}, NOT fp32")
    if not reduced <= k * unit:
        beyond.append(f"{mode} error {reduced:.3g} > K·u = {k * unit:.3g}, NOT {mode}")
    if beyond:
        return Finding(Verdict.FAILS, f"{measured}: " + "; ".join(beyond) + f"; {premise}")
    if not premise.present:
        return Finding(Verdict.DEPENDS, f"{premise}: the flag does not lower precision here; {measured}")
    if not reduced > 10 * full:
        return Finding(
            Verdict.FAILS,
            f"{measured}: {mode} error {reduced:.3g} not tenfold fp32's {full:.3g}: the flag did not "
            f"lower precision; {premise}",
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
    return judge_cpu_high(err, k, same, premise.present, str(premise))


def judge_cpu_high(err: float, k: int, same: bool, tf32_path: bool, premise: str) -> Finding:
    """Context: what 'high' (= the notes' allow_tf32 = True) does to a CPU matmul. Without a oneDNN
    TF32 path it must keep fp32's bound (K·u_fp32; no verdict: the catalogue's measurement); with
    one, TF32's bound, and the claim "'high' leaves CPUs alone" depends on the CPU."""
    if not tf32_path:
        within = err <= k * U_FP32
        return Finding(
            None if within else Verdict.FAILS,
            f"on CPU, 'high' keeps fp32 matmuls in fp32 (256³: rel error {err:.2g}"
            + ("" if within else f" > K·u_fp32 = {k * U_FP32:.3g}: NOT fp32")
            + f", {'bitwise the same as' if same else 'summed in another order than'} 'highest'); {premise}",
        )
    within = err <= k * U_TF32
    return Finding(
        Verdict.DEPENDS if within else Verdict.FAILS,
        f"{premise}: on this CPU 'high' rounds fp32 matmuls to TF32 (rel error {err:.2g} vs float64, "
        + ("within K·u_tf32" if within else f"beyond K·u_tf32 = {k * U_TF32:.3g}")
        + "), where the claim is that it leaves them alone",
    )


def check_notes_flags_error(what):
    """The notes: with their two flags set, "运算精度会变低许多". The flags as written
    (cuda.matmul.allow_tf32 = True, i.e. 'high'; cudnn.allow_tf32 = True) against IEEE fp32, on
    this device. They are CUDA's: whether they select a TF32 kernel here is measured (TF32 tensor
    cores on CUDA; on a CPU, a oneDNN TF32 path for 'high' or any effect of cuDNN's flag)."""
    make, full, notes = (
        (make_matmul, _matmul_at("highest"), _matmul_at("high"))
        if what == "matmul"
        else (make_conv, _conv(False), conv_notes_flag)
    )

    def check(device):
        inputs = make({"n": 512}, FP32, device, seed=13)
        truth = truth_float64(*inputs)
        k = inputs[0].shape[1] if what == "matmul" else inputs[1][0].numel()
        ieee_out, notes_out = full(*inputs), notes(*inputs)
        shapes = [tuple(t.shape) for t in inputs]
        if device.type == "cuda":
            premise = premises.cuda_tf32(device, what, shapes=shapes)
            present, said = premise.present, str(premise)
        elif what == "matmul":
            premise = premises.onednn_reduced("matmul", "tf32", shapes=shapes)
            present, said = premise.present, str(premise)
        else:
            present = not torch.equal(ieee_out, notes_out)
            said = (
                f"premise 'TF32 for fp32 conv under cudnn.allow_tf32 on cpu' "
                f"{'present' if present else 'absent'} "
                f"(the flag is cuDNN's: the CPU conv with it set is "
                f"{'NOT ' if present else ''}bitwise the IEEE one)"
            )
        return judge_notes_flags_error(
            what, device.type, k, _rel_error(ieee_out, truth), _rel_error(notes_out, truth), present, said
        )

    check.__name__ = f"check_notes_flags_{what}_error"
    return check


def judge_notes_flags_error(
    what: str, device_type: str, k: int, full: float, flagged: float, premise_present: bool, premise: str
) -> Finding:
    """The notes' "precision much lower" under their flags. Where the flags select no TF32 kernel
    on this device (no TF32 hardware: a CPU, a GPU before sm_80) the claim is not about this
    machine: depends, the premise named. Where they do: the flagged error must exceed fp32's
    observed one tenfold (TF32 rounds operands to 10 bits, ~2⁻¹¹ against 2⁻²⁴) and stay within
    K·u_tf32 (a larger error is not TF32's)."""
    measured = (
        f"{what} (K={k}) on {device_type} with the notes' flags: rel error vs float64 {flagged:.2g}, "
        f"{full:.2g} in IEEE fp32"
    )
    if not premise_present:
        return Finding(
            Verdict.DEPENDS, f"{premise}: the notes' flags do not lower precision here; {measured}"
        )
    lower, within = flagged > 10 * full, flagged <= k * U_TF32
    return Finding(
        Verdict.HOLDS if lower and within else Verdict.FAILS,
        f"{measured} ({flagged / full if full else float('inf'):.0f}× fp32's"
        + ("" if lower else ": NOT much lower precision")
        + ("" if within else f"; beyond TF32's K·u = {k * U_TF32:.3g}")
        + f"); {premise}",
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
TF32_KERNEL = (
    "a TF32 kernel under the notes' flags (TF32 tensor cores, an sm_80+ GPU; the flags are CUDA's, "
    "and a CPU has no TF32 hardware for them)"
)


CASE = Case(
    id="precision.tf32",
    tier=1,
    claim="torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32 (both default True "
    "since 1.7) make fp32 matmul and convolution much faster at lower precision.",
    source="003 cuda",
    # TF32 on against off: on CUDA the flags must decide it (harness.machine.premises.tf32_flags_decide).
    requires=("tf32_flags",),
    make_inputs=make_matmul,
    variants={
        "matmul.highest": naive(_matmul_at("highest"), tolerance=IEEE_FP32),
        # 'high' is what the notes' torch.backends.cuda.matmul.allow_tf32 = True sets.
        "matmul.high": optimized(_matmul_at("high")),
        # oneDNN's bf16 (the CPU) / TF32 (CUDA): a reduced mode the notes never mention, context.
        "matmul.medium": optimized(_matmul_at("medium")),
        "conv.ieee": naive(_conv(False), inputs=make_conv, tolerance=IEEE_FP32),
        # The notes' torch.backends.cudnn.allow_tf32 = True: TF32 under cuDNN, nothing on a CPU.
        "conv.reduced": optimized(conv_notes_flag, inputs=make_conv),
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
    claims=(
        Claim(
            "faster",
            "pytorch 1.7 之后，可以通过设置这两个参数为 True 提升 32 位浮点运算的速度 … 但速度会快很多",
            "003",
            ClaimKind.SPEED,
            reading="fp32 matmul and conv with the notes' two flags set are faster than with TF32 off, at "
            "the largest size measured; where the flags select no TF32 kernel (no TF32 hardware) it depends",
        ),
        Claim(
            "lower_precision",
            "设置为 True 之后，运算精度会变低许多",
            "003",
            ClaimKind.BEHAVIOUR,
            reading="with the notes' two flags set, the error of an fp32 matmul and conv against float64 is "
            "over 10× IEEE fp32's (and within TF32's K·u); where the flags select no TF32 kernel it depends",
        ),
        Claim(
            "defaults",
            "默认值即为 True … # The flag below controls whether to allow TF32 on matmul. This flag "
            "defaults to True. … # The flag below controls whether to allow TF32 on cuDNN. "
            "This flag defaults to True.",
            "003",
            ClaimKind.BEHAVIOUR,
            reading="torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32 both read "
            "True in a fresh interpreter of the installed torch",
        ),
    ),
    checks={
        # The notes' stated defaults: a claim of theirs, read in a fresh interpreter.
        "defaults": Check(check_defaults, devices=("cpu",), claim="defaults"),
        # The catalogue's own measurements and the backends' reduced modes (TF32 on CUDA, oneDNN bf16
        # on a CPU, which the notes never mention): context.
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
        # The notes' flags as written: what decides "lower_precision".
        "notes_flags_matmul_error": Check(check_notes_flags_error("matmul"), claim="lower_precision"),
        "notes_flags_conv_error": Check(check_notes_flags_error("conv"), claim="lower_precision"),
    },
    # The notes' flags are CUDA's: their gain needs a TF32 kernel under them (TF32 tensor cores;
    # oneDNN's AMX-TF32, which no CPU met so far has). Where the two sides give bitwise-identical
    # results (every CPU met: 'high' and cuDNN's flag change nothing there) the premise is absent
    # and the claim depends, named. oneDNN's bf16 path ('medium') is timed beside it as context.
    verdict=AllOf(
        (
            AllOf(
                (
                    Faster("matmul.high", "matmul.highest", premise=TF32_KERNEL),
                    Faster("conv.reduced", "conv.ieee", premise=TF32_KERNEL),
                ),
                claim="faster",
            ),
            Faster("matmul.medium", "matmul.highest", premise=REDUCED_KERNEL),
        )
    ),
)
