"""The options' plumbing without a run (suite/options.py, tox.ini): the tox environments' install step
keeps an installed torch, else pins the CPU wheel. Every option on a real selection is in
tests/integration/test_options.py."""

import importlib.util

import pytest

from tests import paths

ROOT = paths.ROOT


@pytest.mark.parametrize("present", [True, False])
def test_tox_install_keeps_an_installed_torch_else_pins_the_cpu_wheel(present):
    spec = importlib.util.spec_from_file_location("install_suite", ROOT / ".ci" / "install_suite.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    command = module.install_command(present)
    assert ("-c" in command) is (not present)
    if not present:
        pins = (ROOT / "constraints.txt").read_text()
        assert command[command.index("-c") + 1].endswith("constraints.txt") and "torch==" in pins
    tox = (ROOT / "tox.ini").read_text()
    for env in ("gpu", "multigpu"):
        section = tox.split(f"[testenv:{env}]")[1].split("\n[")[0]
        assert "python .ci/install_suite.py" in section and "skip_install = true" in section, env
