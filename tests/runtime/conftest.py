"""Options, fixtures and the CUDA skip for the runtime tests (they mirror `runtime/`).

`--spec-package`, `--spec-path` and `--spec-no-guard` point the conformance suite
(test_conformance.py) at another package that follows the SpecWorkerBase contract:

    python -m pytest tests/runtime/test_conformance.py --spec-package legacy_spec \
        --spec-path tests/fixtures/legacy_workers --spec-no-guard

Give these options with a path under tests/runtime (as above): that makes this an initial conftest,
whose options pytest knows before it parses the command line. Over all of `tests` (plain `pytest`)
this conftest is found during collection; pytest still registers the options then, with their
defaults, so the suite runs on `runtime.speculative`. Nothing here needs tests/conftest.py:
`pytest tests/runtime --confcutdir tests/runtime` runs with only torch and pytest installed.
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
    """The conformance suite's options (see the module docstring)."""
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
    """Skip the runtime's `gpu` tests, with the reason, where CUDA is absent."""
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
