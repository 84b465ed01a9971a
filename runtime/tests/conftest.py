"""Options and markers for the runtime tests.

`--spec-package`, `--spec-path` and `--spec-no-guard` point the conformance suite
(test_conformance.py) at another package that follows the SpecWorkerBase contract:

    python -m pytest runtime/tests/test_conformance.py --spec-package legacy_spec \
        --spec-path tests/fixtures/legacy_workers --spec-no-guard
"""

import sys
from pathlib import Path

import pytest
import torch

# Make `runtime` importable when pytest runs from an uninstalled checkout (importlib mode does not
# put the rootdir on sys.path).
_REPO_ROOT = str(Path(__file__).resolve().parents[2])
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

HAS_CUDA = torch.cuda.is_available()


def pytest_configure(config):
    # The test models are tiny: intra-op threads only add contention on a busy machine.
    torch.set_num_threads(1)


def pytest_addoption(parser):
    group = parser.getgroup("spec-dec conformance")
    group.addoption(
        "--spec-package",
        default="runtime.speculative",
        help="module path of the package whose SpecWorkerBase subclasses are checked",
    )
    group.addoption(
        "--spec-path",
        action="append",
        default=[],
        help="directory to put on sys.path before importing --spec-package (repeatable)",
    )
    group.addoption(
        "--spec-no-guard",
        action="store_true",
        help="import --spec-package with the class-creation guard off (pre-contract code)",
    )


def pytest_collection_modifyitems(config, items):
    if HAS_CUDA:
        return
    here = Path(__file__).parent
    skip = pytest.mark.skip(reason="needs a CUDA device: torch.cuda.is_available() is False")
    for item in items:
        if "gpu" in item.keywords and here in Path(str(item.path)).parents:
            item.add_marker(skip)


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def device(request):
    """Run a test on the CPU and, under `-m gpu` with CUDA present, on the GPU."""
    return request.param
