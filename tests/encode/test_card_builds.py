"""A torch build for every card (consert.hardware: the pinned release's CUDA builds against each card's compute
capability, torch's own architecture list held against the card before any work) and, before Ampere, fp16 measured
against graphed fp32 rather than left out (consert.encode.precision.training_precision)."""

from __future__ import annotations

import contextlib
import importlib.util
import re
import tomllib

import pytest
import torch

from consert.encode import precision
from consert.encode.models import NoGpuError, default_device
from consert.hardware import TORCH_RELEASE, build_fault, card_paths, cuda_build_fault, torch_build_for
from tests.conftest import ROOT

#: ``torch.cuda.get_arch_list()`` of the two Linux x86 CUDA builds of torch 2.12/2.13, as PyTorch's support matrix
#: lists their architectures (RELEASE.md; the issue's table): 12.6 Maxwell to Hopper, 13.0 Turing to Blackwell + PTX.
CU126 = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
CU130 = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]
PIP_CU126 = f"pip install torch=={TORCH_RELEASE} --index-url https://download.pytorch.org/whl/cu126"

#: card: (compute capability, the build the matrix says runs it: PyPI's 13.0 where it does, else 12.6, else none)
CARDS = {
    "K80": ((3, 7), None),
    "GTX 1080": ((6, 1), "12.6"),
    "V100": ((7, 0), "12.6"),
    "T4": ((7, 5), "13.0"),
    "A100": ((8, 0), "13.0"),
    "H100/H200": ((9, 0), "13.0"),
    "B200": ((10, 0), "13.0"),
}


@pytest.mark.parametrize("card", CARDS)
def test_each_card_gets_the_build_the_support_matrix_names_and_a_wrong_build_stops_in_one_line(card):
    capability, cuda = CARDS[card]
    build = torch_build_for(capability)
    assert (build.cuda if build else None) == cuda
    for arch_list, runs in ((CU126, capability[0] in (5, 6, 7, 8, 9)), (CU130, capability >= (7, 5))):
        fault = build_fault(capability, arch_list, card)
        assert (fault == "") == runs, (arch_list, fault)
        if fault:
            assert "\n" not in fault and fault.startswith(f"{card} (compute capability {capability[0]}.")
            assert (PIP_CU126 in fault) == (cuda == "12.6") and (cuda is not None or "no build of torch" in fault)


def test_ptx_runs_a_newer_card_and_a_binary_only_its_own_major():
    from consert.hardware import arch_runs

    assert arch_runs((12, 1), ["sm_90", "compute_120"]) and not arch_runs((10, 0), ["sm_90", "sm_120"])
    assert arch_runs((8, 6), ["sm_80"]) and not arch_runs((8, 0), ["sm_86"]) and not arch_runs((9, 0), ["sm_80"])


def test_a_v100_under_pypis_build_stops_before_any_work_naming_the_cu126_line(monkeypatch):
    """``torch.cuda.is_available()`` says True on a V100 under the CUDA 13 build; the device choice says why not."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_arch_list", lambda: CU130)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index=0: (7, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: "Tesla V100-SXM2-32GB")
    with pytest.raises(NoGpuError) as raised:
        default_device("cuda")
    assert raised.value.args[0] == cuda_build_fault() and PIP_CU126 in raised.value.args[0]
    monkeypatch.setattr(torch.cuda, "get_arch_list", lambda: CU126)
    assert default_device("cuda") == "cuda"


def test_the_pins_and_the_gpu_box_table_name_one_release():
    """The README's pin, pyproject's lower bound and the card table's release are one (the table is built from it)."""
    readme = re.search(r"pip install torch==([\d.]+) -e \.", (ROOT / "README.md").read_text()).group(1)
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert readme == TORCH_RELEASE and f"torch>={TORCH_RELEASE.rsplit('.', 1)[0]}" in dependencies
    spec = importlib.util.spec_from_file_location("config_keys", ROOT / "docs" / "hooks" / "config_keys.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = hook.on_page_markdown((ROOT / "docs" / "gpu-box.md").read_text())
    assert f"| 7.0 | V100 | 12.6 | `{PIP_CU126}` |" in page and "<!-- card table -->" not in page
    assert f"| 10.0 | B200 | 13.0 | `pip install torch=={TORCH_RELEASE}` |" in page
    assert "| 3.7 | K80 | none |" in page


@pytest.fixture()
def stand_in_card(monkeypatch, tmp_path):
    """A CUDA card of a chosen capability, seen by the precision choice only: its timings are the test's."""
    seen = {}

    def use(capability, timings):
        monkeypatch.setattr(precision, "cuda_card_paths", lambda device=None: card_paths(capability))
        monkeypatch.setattr(precision, "hardware_summary", lambda *a, **k: f"a card of {capability} (stand-in)")
        monkeypatch.setattr(precision, "cache_path", lambda: tmp_path / f"{capability}.json")
        monkeypatch.setattr(precision, "measurement_conditions", lambda device: contextlib.nullcontext())
        monkeypatch.setattr(torch.random, "fork_rng", lambda *a, **k: contextlib.nullcontext())
        monkeypatch.setattr(precision, "_runner", lambda candidate, *args: "eager")

        def probe(candidates, device, purpose, model, runner):
            seen.update({c[0]: runner(c, device, purpose, model, None, None) for c in candidates})
            return {candidate: timings[candidate[0]] for candidate in candidates}

        monkeypatch.setattr(precision, "_probe", probe)
        return seen

    return use


@pytest.mark.parametrize(
    ("capability", "timings", "chosen"),
    [((7, 0), {"fp16": 1.0, "fp32": 2.5}, "fp16"), ((7, 5), {"fp16": 3.0, "fp32": 2.5}, "fp32")],
    ids=["V100: fp16 faster", "T4: graphed fp32 faster"],
)
def test_before_ampere_fp16_eager_is_measured_against_graphed_fp32(stand_in_card, capability, timings, chosen):
    """fp16 timed by the eager runner (its scaler's host read), fp32 by the graphs'; the faster wins, named as
    measured (never `requested` under auto), with how each ran."""
    seen = stand_in_card(capability, timings)
    model = torch.nn.Linear(2, 2)
    chosen_precision = precision.training_precision("auto", "cuda", model, graphed_runner=lambda *a: "graphed")
    assert seen == {"fp16": "eager", "fp32": "graphed"} and chosen_precision.dtype == chosen
    assert chosen_precision.how == "measured" and "measured as fp16 eager, fp32 as cuda graphs" in (
        chosen_precision.describe()
    )


def test_from_ampere_the_graphed_probe_leaves_fp16_out(stand_in_card):
    seen = stand_in_card((9, 0), {"bf16": 1.0, "fp16": 0.5, "fp32": 2.0})
    chosen = precision.training_precision("auto", "cuda", torch.nn.Linear(2, 2), graphed_runner=lambda *a: "graphed")
    assert seen == {"bf16": "graphed", "fp32": "graphed"} and chosen.dtype == "bf16" and not chosen.probed_as


def test_auto_with_one_candidate_left_says_so_not_requested(monkeypatch):
    monkeypatch.setattr(precision, "_candidates", lambda device, purpose: [("fp32", "torch")])
    assert precision.training_precision("auto", "cpu", torch.nn.Linear(2, 2)).how == "only candidate"
    assert precision.training_precision("fp32", "cpu", torch.nn.Linear(2, 2)).how == "requested"
