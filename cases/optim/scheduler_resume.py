"""Resuming an ``lr_scheduler`` (notes 001 "lr_scheduler").

A scheduler built with ``last_epoch != -1`` reads ``initial_lr`` from each param group, which only a
scheduler built with ``last_epoch=-1`` puts there: a fresh optimizer raises ``KeyError``. The notes
give two fixes: put ``initial_lr`` into the groups by hand, or save the optimizer's state dict (its
groups carry ``initial_lr``). The check runs both as the notes give them against an uninterrupted
run; the optimizer and scheduler state dicts restored together are a better way, reported beside.
"""

from __future__ import annotations

import io

import torch

from cases.spec import Case, Check, Claim, ClaimKind, Erratum, ErratumKind, Finding, Verdict

EPOCHS, STOP, LR = 8, 3, 0.1


def _lam(epoch):
    return 0.5**epoch


def _opt(device):
    p = torch.nn.Parameter(torch.ones(2, device=device))
    return torch.optim.SGD([p], lr=LR, momentum=0.9)


def _run(opt, sched, epochs):
    lrs = []
    for _ in range(epochs):
        lrs.append(opt.param_groups[0]["lr"])
        opt.param_groups[0]["params"][0].grad = torch.ones_like(opt.param_groups[0]["params"][0])
        opt.step()
        sched.step()
    return lrs


NOTES_MESSAGE = "param 'initial_lr' is not specified in param_groups[0] when resuming an optimizer"


def check_resume_raises(device):
    opt = _opt(device)
    try:
        torch.optim.lr_scheduler.LambdaLR(opt, _lam, last_epoch=STOP - 1)
        message = None
    except KeyError as e:
        # str(KeyError) is the repr of its text; newer torch adds lines of advice after the first.
        message = str(e).strip('"').split("\\n")[0]
    return judge_resume_raises(message)


def judge_resume_raises(message: str | None) -> Finding:
    """The notes' error: a scheduler built with last_epoch != -1 on an optimizer whose groups have
    no initial_lr raises KeyError naming it. The wording torch uses today is context."""
    raised = bool(message and "initial_lr" in message)
    return Finding(
        Verdict.HOLDS if raised else Verdict.FAILS,
        f"LambdaLR(fresh optimizer, last_epoch={STOP - 1}) "
        + (f"raises KeyError '{message}'" if raised else f"does NOT raise KeyError 'initial_lr' ({message})")
        + (f" (the notes quote '…{NOTES_MESSAGE[-40:]}')" if raised and NOTES_MESSAGE not in message else ""),
    )


def _params(opt):
    return opt.param_groups[0]["params"][0].detach().clone()


def check_resume_matches_uninterrupted(device):
    opt = _opt(device)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _lam)
    expected = _run(opt, sched, EPOCHS)
    expected_p = _params(opt)

    # Train STOP epochs, checkpoint, rebuild everything, resume.
    opt = _opt(device)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _lam)
    first = _run(opt, sched, STOP)
    buf = io.BytesIO()
    torch.save({"model": _params(opt), "optimizer": opt.state_dict(), "scheduler": sched.state_dict()}, buf)

    def fresh():
        """A new run from the checkpoint file. Loaded anew each time: load_state_dict keeps the
        loaded momentum buffers (same device and dtype), so a second run would see the first's."""
        buf.seek(0)
        ckpt = torch.load(buf)
        opt = _opt(device)
        with torch.no_grad():
            opt.param_groups[0]["params"][0].copy_(ckpt["model"])
        return opt, ckpt

    def resume(opt, sched):
        lrs = first + _run(opt, sched, EPOCHS - STOP)
        return lrs == expected, torch.equal(_params(opt), expected_p), lrs[STOP]

    # The notes' recipe: the checkpoint holds optimizer.state_dict() (whose groups carry
    # initial_lr), so after loading it a scheduler built with last_epoch != -1 no longer raises.
    # The constructor takes a step, so k epochs done means last_epoch = k - 1.
    opt_notes, ckpt = fresh()
    opt_notes.load_state_dict(ckpt["optimizer"])
    try:
        notes = resume(opt_notes, torch.optim.lr_scheduler.LambdaLR(opt_notes, _lam, last_epoch=STOP - 1))
        notes_raised = None
    except KeyError as e:
        notes, notes_raised = (False, False, float("nan")), str(e)
    # Both state dicts, done right: build the scheduler, then load both (the constructor writes
    # lr = initial_lr·λ(0) into the groups and the scheduler's state dict does not write lr back).
    opt2, ckpt = fresh()
    sched2 = torch.optim.lr_scheduler.LambdaLR(opt2, _lam)
    opt2.load_state_dict(ckpt["optimizer"])
    sched2.load_state_dict(ckpt["scheduler"])
    both = resume(opt2, sched2)
    # The other order: load the optimizer, build a fresh scheduler, load its state.
    opt5, ckpt = fresh()
    opt5.load_state_dict(ckpt["optimizer"])
    sched5 = torch.optim.lr_scheduler.LambdaLR(opt5, _lam)
    sched5.load_state_dict(ckpt["scheduler"])
    other_order = resume(opt5, sched5)
    # The notes' other fix: set initial_lr by hand (the optimizer state is not restored).
    opt3, _ = fresh()
    opt3.param_groups[0]["initial_lr"] = LR
    by_hand = resume(opt3, torch.optim.lr_scheduler.LambdaLR(opt3, _lam, last_epoch=STOP - 1))
    opt4, _ = fresh()
    opt4.param_groups[0]["initial_lr"] = LR
    one_late = resume(opt4, torch.optim.lr_scheduler.LambdaLR(opt4, _lam, last_epoch=STOP))
    base_lr = hasattr(sched2, "base_lr") or not hasattr(sched2, "base_lrs")
    return judge_resume(
        expected[STOP], both, notes, notes_raised, by_hand, other_order, one_late, base_lr_exists=base_lr
    )


def judge_resume(
    lr_at_stop: float,
    both: tuple[bool, bool, float],
    notes: tuple[bool, bool, float],
    notes_raised: str | None,
    by_hand: tuple[bool, bool, float],
    other_order: tuple[bool, bool, float],
    one_late: tuple[bool, bool, float],
    base_lr_exists: bool = False,
) -> Finding:
    """Each resume is (lr sequence equal to the uninterrupted run's, parameters bit-identical at
    the end, lr of the first resumed epoch). The notes' claim is their two fixes: save and load
    optimizer.state_dict() and build the scheduler with last_epoch = epochs done − 1, or put
    initial_lr into the param groups by hand; it holds when both resume the uninterrupted run's
    lr schedule (by hand the momentum buffers are not restored: reported, the notes never say
    they are), and fails where either raises or resumes at another lr. Both state dicts restored
    together, the other load order and last_epoch = epochs done are context. `self.base_lr` for
    the scheduler's `base_lrs` is a misspelt name: a typo."""
    errata = ()
    if not base_lr_exists:
        errata = (
            Erratum(
                ErratumKind.TYPO,
                "`self.base_lr` 存储了各个参数组的初始学习率",
                "a scheduler has no attribute `base_lr` (AttributeError); the initial lrs are "
                "`base_lrs`, as the notes' own excerpt spells it",
            ),
        )

    def say(r):
        return ("same lrs" if r[0] else f"lr {r[2]:.4g} at epoch {STOP}") + (
            ", same params" if r[1] else ", params differ"
        )

    notes_ok = notes_raised is None and notes[0]
    ok = notes_ok and by_hand[0]
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        f"stopped after {STOP} of {EPOCHS} epochs (uninterrupted lr at epoch {STOP}: {lr_at_stop:.4g}); "
        f"the notes' fix of saving optimizer.state_dict() (loaded, then LambdaLR(last_epoch={STOP - 1})): "
        + (f"raises KeyError {notes_raised}" if notes_raised else say(notes))
        + ("" if notes_ok else " (NOT the uninterrupted schedule)")
        + f"; their fix of initial_lr by hand, last_epoch={STOP - 1}: {say(by_hand)}"
        + ("" if by_hand[0] else " (NOT the uninterrupted schedule)")
        + ("" if by_hand[1] else " (the momentum buffers are not restored that way)")
        + f"; a better way, both state dicts loaded after building the scheduler: {say(both)}; "
        f"beyond the notes: the scheduler built after optimizer.load_state_dict, then its state loaded: "
        f"{say(other_order)}; initial_lr by hand with last_epoch={STOP}: {say(one_late)}",
        errata,
    )


CASE = Case(
    id="optim.scheduler_resume",
    tier=3,
    claim="Resuming a scheduler with last_epoch != -1 raises KeyError 'initial_lr'; adding initial_lr to the "
    "param groups or saving the optimizer state dict fixes it.",
    source="001 lr_scheduler",
    claims=(
        Claim(
            "raises",
            "`lr_scheduler` 在恢复训练时若有如下错误"
            " … KeyError: \"param 'initial_lr' is not specified in param_groups[0] "
            'when resuming an optimizer"',
            "001",
            ClaimKind.BEHAVIOUR,
            reading="a scheduler built with last_epoch != -1 on an optimizer whose groups have no "
            "initial_lr raises KeyError naming initial_lr (the message's wording is torch's, which "
            "has changed since: reported, not judged)",
        ),
        Claim(
            "resume",
            "所以解决问题就在于在 `optimizer.param_groups` (dict) 中添加 `initial_lr` "
            "或者在保存模型的时候保存 `optimizer.state_dict`",
            "001",
            ClaimKind.BEHAVIOUR,
            reading="either fix (initial_lr put into the groups by hand, or the optimizer's state dict "
            "saved and loaded) lets the scheduler be rebuilt with last_epoch = epochs done − 1 and "
            "resume the uninterrupted run's learning rates",
        ),
    ),
    checks={
        "resume_raises": Check(check_resume_raises, devices=("cpu",), claim="raises"),
        "resume_matches_uninterrupted": Check(
            check_resume_matches_uninterrupted, devices=("cpu",), claim="resume"
        ),
    },
)
