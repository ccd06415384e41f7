"""torch.compile of a naive variant (harness/measure/compiled.py): state set around the variant stays
outside the compiled graph, and a training step compiles the part a user would."""

import torch

from harness.measure import compiled


def test_state_set_around_a_variant_stays_outside_the_compiled_graph(monkeypatch):
    from cases._lib.precision import ieee_fp32

    def f(x):
        return (x * 2).sin()

    compiled_fns = []
    real_compile = torch.compile

    def spy(fn, mode=None):
        compiled_fns.append(fn)
        # What is compiled is the question, not how: dynamo's eager backend traces the same graph
        # without inductor's codegen and C++ build (~9 s on the CI machine).
        return real_compile(fn, backend="eager")

    monkeypatch.setattr(torch, "compile", spy)
    wrapped = compiled.Compiled(ieee_fp32(f))
    x = torch.randn(8)
    out, _, breaks = wrapped.compile_and_time(x)
    assert compiled_fns == [f] and breaks == 0  # f itself, not the flag-setting wrapper
    torch.testing.assert_close(out, f(x))


def test_a_training_step_compiles_the_part_a_user_would():
    from cases.precision import amp

    compiled_fns = []

    def step(*inputs):
        return inputs

    def compile_model(compile_fn):
        compiled_fns.append(compile_fn)
        return lambda *inputs: ("model compiled", inputs)

    step.__compile__ = compile_model
    wrapped = compiled.Compiled(step)
    out, _, _ = wrapped.compile_and_time(torch.ones(2))
    assert out[0] == "model compiled" and len(compiled_fns) == 1
    assert amp.fp32_step.__compile__ is amp._compile_the_model  # the amp step compiles its model only
