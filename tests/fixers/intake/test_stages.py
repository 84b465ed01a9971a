from __future__ import annotations

import pytest

from fixers.intake.stages import StageName, gpu_type_of, parse_stage


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("H100_PCIe-PyTorch-1", StageName("H100_PCIe", 1, "PyTorch", False, 1)),
        ("A10-PyTorch-1", StageName("A10", 1, "PyTorch", False, 1)),
        ("DGX_B200-4_GPUs-PyTorch-2", StageName("DGX_B200", 4, "PyTorch", False, 2)),
        ("DGX_H100-4_GPUs-PyTorch-Post-Merge-1", StageName("DGX_H100", 4, "PyTorch", True, 1)),
        ("A30-CPP-3", StageName("A30", 1, "CPP", False, 3)),
    ],
)
def test_stage_names_split_into_their_parts(name, expected):
    assert parse_stage(name) == expected
    assert gpu_type_of(name) == expected.gpu_type


@pytest.mark.parametrize(
    "name", ["Build", "", "H100_PCIe", "H100-PyTorch", "-PyTorch-1", "H100 PyTorch 1"]
)
def test_names_outside_the_convention_have_no_gpu_type(name):
    assert parse_stage(name) is None
    assert gpu_type_of(name) is None
