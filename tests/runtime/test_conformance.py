"""The conformance suite, parametrised over every SpecWorkerBase subclass of a package.

By default the package is `runtime.speculative`; see conftest.py to point it at another one.
"""

# mypy: disable-error-code="no-untyped-call"

from runtime import conformance as conf

_REFERENCES: dict[type, list[list[int]]] = {}


def _discovery(config):
    cached = getattr(config, "_spec_discovery", None)
    if cached is None:
        package = config.getoption("--spec-package")
        paths = tuple(config.getoption("--spec-path"))
        try:
            workers = conf.discover_workers(
                package, paths=paths, guard=not config.getoption("--spec-no-guard")
            )
            cached = (package, workers, None)
        except Exception as exc:  # reported by test_package_imports
            cached = (package, [], exc)
        config._spec_discovery = cached
    return cached


def _cases(worker_cls):
    if conf.check_instantiable(worker_cls):
        return []  # test_instantiable reports it
    try:
        return conf.fault_cases(worker_cls, conf.Scenario())
    except Exception:
        return [None]  # test_failure_restores_state reports the crash


def pytest_generate_tests(metafunc):
    _, workers, _ = _discovery(metafunc.config)
    ids = [w.__qualname__ for w in workers]
    if "fault_case" in metafunc.fixturenames:
        params = [(w, c) for w in workers for c in _cases(w)]
        metafunc.parametrize(
            ("worker_cls", "fault_case"),
            params,
            ids=[f"{w.__qualname__}-{c.id if c else 'record'}" for w, c in params],
        )
    elif "worker_cls" in metafunc.fixturenames:
        metafunc.parametrize("worker_cls", workers, ids=ids)


def test_package_imports(request):
    package, workers, error = _discovery(request.config)
    assert error is None, f"importing {package} failed: {type(error).__name__}: {error}"
    assert workers, f"no SpecWorkerBase subclass found in {package}"


def test_class_creation_passes_the_guard(worker_cls):
    assert conf.check_guard(worker_cls) == []


def test_instantiable(worker_cls):
    assert conf.check_instantiable(worker_cls) == []


def test_successful_forward_leaves_metadata_untouched(worker_cls):
    assert conf.check_success(worker_cls) == []


def test_failure_restores_state_and_recovers(worker_cls, fault_case):
    assert fault_case is not None, "recording the injection points of a clean run crashed"
    if worker_cls not in _REFERENCES:
        _REFERENCES[worker_cls] = conf.clean_run(worker_cls, conf.Scenario())
    problems = conf.check_failure(worker_cls, fault_case, reference=_REFERENCES[worker_cls])
    assert problems == []
