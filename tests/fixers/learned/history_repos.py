"""Builds the git repositories the learned-migration tests read: real histories, made here.

Each builder writes files and commits them with ``git`` in a fresh repository under the given
folder and returns its path. The shapes follow real contract commits (see the closing note of
issue 29): an abstract method renamed with a new keyword-only parameter, a new keyword the base
passes, a new abstract method, siblings that disagree, a subclass on a concurrent branch, a base
from an installed library. Names are shipping/metering/storage, unlike anything in runtime/.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.fixers.git_repos import git


def write(repo: Path, files: dict[str, str]) -> None:
    """Write each file (dedented)."""
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


def commit(repo: Path, message: str, files: dict[str, str] | None = None) -> str:
    """Write ``files``, commit everything; the new sha."""
    write(repo, files or {})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def new_repo(path: Path) -> Path:
    """An empty repository on branch main."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    return path


def _carrier(name: str, method: str, params: str, body: str) -> str:
    return f"""
        from shipping.base import Carrier


        class {name}(Carrier):
            # {name.lower()} legs
            def {method}({params}):
                {body}
        """


BASE_BEFORE = '''
    import abc


    class Carrier(abc.ABC):
        @abc.abstractmethod
        def dispatch(self, parcel):
            """Send one parcel."""

        def run(self, parcel):
            return self.dispatch(parcel)
    '''

BASE_AFTER = '''
    import abc


    class Carrier(abc.ABC):
        @abc.abstractmethod
        def ship(self, parcel, *, priority=0):
            """Send one parcel."""

        def run(self, parcel, priority=0):
            return self.ship(parcel, priority=priority)
    '''

SIBLINGS = {"road": "RoadCarrier", "air": "AirCarrier", "sea": "SeaCarrier"}


def shipping_before(repo: Path, *, filler: int = 3) -> None:
    """The shipping package before its contract commit, with ``filler`` unrelated commits."""
    files = {"shipping/__init__.py": "", "shipping/base.py": BASE_BEFORE}
    for short, cls in [*SIBLINGS.items(), ("rail", "RailCarrier")]:
        files[f"shipping/{short}.py"] = _carrier(
            cls, "dispatch", "self, parcel", f'return "{short}:" + parcel'
        )
    files["shipping/courier.py"] = """
        class Courier:
            def dispatch(self, parcel):
                return parcel
        """
    files["tests/test_shipping.py"] = """
        from shipping.base import Carrier


        class FakeCarrier(Carrier):
            def dispatch(self, parcel):
                return parcel


        def test_fake():
            assert FakeCarrier().run("p") == "p"
        """
    commit(repo, "shipping: carriers", files)
    for i in range(filler):
        commit(repo, f"docs: note {i}", {f"docs/note{i}.md": f"note {i}\n"})


def shipping_contract_commit(repo: Path, *, priorities: dict[str, str] | None = None) -> str:
    """Carrier.dispatch becomes ship(parcel, *, priority=...): the siblings migrated, rail and
    the test double missed. ``priorities`` gives each sibling's default (all 0 by default)."""
    files = {"shipping/base.py": BASE_AFTER}
    for short, cls in SIBLINGS.items():
        default = (priorities or {}).get(short, "0")
        files[f"shipping/{short}.py"] = _carrier(
            cls, "ship", f"self, parcel, *, priority={default}", f'return "{short}:" + parcel'
        )
    return commit(repo, "Carrier.dispatch becomes ship with a priority", files)


def shipping_repo(path: Path, **options: dict[str, str]) -> Path:
    """The rename shape: three siblings migrated, RailCarrier and FakeCarrier missed."""
    repo = new_repo(path)
    shipping_before(repo)
    shipping_contract_commit(repo, **options)
    commit(repo, "docs: after", {"docs/after.md": "after\n"})
    return repo


def shipping_with_concurrent_branch(path: Path) -> Path:
    """A branch made before the contract commit adds TruckCarrier; merged after it."""
    repo = new_repo(path)
    shipping_before(repo)
    git(repo, "checkout", "-q", "-b", "trucks")
    commit(repo, "add trucks", {"shipping/truck.py": _carrier(
        "TruckCarrier", "dispatch", "self, parcel", 'return "truck:" + parcel')})  # fmt: skip
    git(repo, "checkout", "-q", "main")
    shipping_contract_commit(repo)
    git(repo, "merge", "-q", "--no-edit", "trucks")
    return repo


def metering_repo(path: Path, *, positional: bool = False) -> Path:
    """The new-parameter shape: Meter.record passes labels= to sample (``positional``: as a
    second positional argument); Gauge missed it."""
    repo = new_repo(path)
    base = """
        class Meter:
            def sample(self, value):
                return value

            def record(self, value{extra}):
                return self.sample(value{call})
        """
    meter = """
        from metering.base import Meter


        class {cls}(Meter):
            def sample(self, value{params}):
                return value * {factor}
        """
    names = {"counter": "Counter", "timer": "Timer", "gauge": "Gauge"}
    files = {"metering/__init__.py": "", "metering/base.py": base.format(extra="", call="")}
    for i, (short, cls) in enumerate(names.items()):
        files[f"metering/{short}.py"] = meter.format(cls=cls, params="", factor=i + 1)
    commit(repo, "metering", files)
    call = ", labels" if positional else ", labels=labels"
    params = ", labels=None" if positional else ", *, labels: dict | None = None"
    files = {"metering/base.py": base.format(extra=", labels=None", call=call)}
    for i, (short, cls) in enumerate(names.items()):
        if short != "gauge":
            files[f"metering/{short}.py"] = meter.format(cls=cls, params=params, factor=i + 1)
    commit(repo, "Meter.record passes labels to sample", files)
    return repo


def storage_repo(path: Path) -> Path:
    """The new-abstract-method shape: Store gains scan(); each production store wrote its own
    body, DiskStore (production) and FakeStore (a test double) were missed."""
    repo = new_repo(path)
    base = """
        import abc


        class Store(abc.ABC):
            @abc.abstractmethod
            def get(self, key: str) -> bytes | None: ...
        {extra}"""
    scan = """
            @abc.abstractmethod
            def scan(self, prefix: str) -> list[str]: ...
        """
    store = """
        from storage.base import Store


        class {cls}(Store):
            def get(self, key):
                return None
        {extra}"""
    files = {
        "storage/__init__.py": "",
        "storage/base.py": base.format(extra=""),
        "storage/memory.py": store.format(cls="MemoryStore", extra=""),
        "storage/cloud.py": store.format(cls="CloudStore", extra=""),
        "storage/disk.py": store.format(cls="DiskStore", extra=""),
        "tests/test_storage.py": store.format(cls="FakeStore", extra=""),
    }
    commit(repo, "storage", files)
    commit(repo, "Store.scan lists keys", {
        "storage/base.py": base.format(extra=scan),
        "storage/memory.py": store.format(cls="MemoryStore", extra='''
            def scan(self, prefix):
                return sorted(k for k in self.keys if k.startswith(prefix))
        '''),
        "storage/cloud.py": store.format(cls="CloudStore", extra='''
            def scan(self, prefix):
                return list(self.client.list(prefix=prefix))
        '''),
    })  # fmt: skip
    return repo


def made_abstract_storage_repo(path: Path) -> Path:
    """Store.compact was concrete (it raised NotImplementedError) and every production store
    defined it; then a commit only decorated it with ``@abc.abstractmethod`` (the ``def`` line
    unchanged) and a later one made another method abstract: FakeStore, a test double that
    never defined compact, can no longer be instantiated (nor SlowFakeStore, derived from it)."""
    repo = new_repo(path)
    base = """
        import abc


        class Store{parent}:
            def get(self, key: str) -> bytes | None:
                return None
        {decorator}
            def compact(self, level: int = 1) -> None:
                raise NotImplementedError
        {later}
            def stats(self) -> dict:
                return {{}}
        """
    store = """
        from storage.base import Store


        class {cls}(Store):
            def compact(self, level=1):
                return None
        """
    files = {
        "storage/__init__.py": "",
        "storage/base.py": base.format(parent="", decorator="", later=""),
        "storage/memory.py": store.format(cls="MemoryStore"),
        "storage/disk.py": store.format(cls="DiskStore"),
        "tests/test_storage.py": "from storage.base import Store\n\n\nclass FakeStore(Store):\n    pass\n\n\nclass SlowFakeStore(FakeStore):\n    pass\n",
    }  # fmt: skip
    commit(repo, "storage with compaction", files)
    abstract = "    @abc.abstractmethod"
    commit(repo, "Make Store an ABC", {
        "storage/base.py": base.format(parent="(abc.ABC)", decorator=abstract, later="")})  # fmt: skip
    commit(repo, "Store.stats is abstract too", {"storage/base.py": base.format(
        parent="(abc.ABC)", decorator=abstract, later=abstract)})  # fmt: skip
    return repo


def plugins_repo(path: Path) -> Path:
    """A base from an installed library (``plugkit``, not in the repository): upgrading it
    renamed Plugin.activate to start(app); two plugins migrated, the third missed."""
    repo = new_repo(path)
    plugin = """
        from plugkit import Plugin


        class {cls}(Plugin):
            def {method}(self{params}):
                return "{cls}"
        """
    names = {"alpha": "AlphaPlugin", "beta": "BetaPlugin", "gamma": "GammaPlugin"}
    files = {"requirements.txt": "plugkit==1.4\n", "plugins/__init__.py": ""}
    for short, cls in names.items():
        files[f"plugins/{short}.py"] = plugin.format(cls=cls, method="activate", params="")
    commit(repo, "plugins", files)
    files = {"requirements.txt": "plugkit==2.0\n"}
    for short, cls in names.items():
        if short != "gamma":
            files[f"plugins/{short}.py"] = plugin.format(cls=cls, method="start", params=", app")
    commit(repo, "Upgrade plugkit to 2.0: activate() is now start(app)", files)
    return repo


def failure_log(path: Path, line: str) -> Path:
    """A pytest-style console log ending in ``line`` (the exception's own wording)."""
    path.write_text(
        "============================= FAILURES =============================\n"
        "______________________________ test_run ______________________________\n"
        "tests/test_run.py:12: in test_run\n"
        "    obj = make()\n"
        f"E   {line}\n"
        "=========================== short test summary info ===========================\n"
        f"FAILED tests/test_run.py::test_run - {line}\n",
        encoding="utf-8",
    )
    return path


PLUGKIT_CORE = '''
    import abc


    class _Hooks(abc.ABC):
        def start(self, app, *, timeout: float = 5.0):
            """Called once; ``timeout`` is new in plugkit 3."""

        def render(self, page, context):
            return page

        @abc.abstractmethod
        def stop(self, *, force: bool = False) -> None:
            """New in plugkit 3."""


    class Plugin(_Hooks):
        pass
    '''


def plugkit_library(site_packages: Path) -> None:
    """plugkit 3 as installed: ``Plugin`` re-exported by the package from ``plugkit.core``,
    its methods defined on a private base there."""
    write(site_packages, {
        "plugkit/__init__.py": "from .core import Plugin\n",
        "plugkit/core.py": PLUGKIT_CORE,
    })  # fmt: skip


def upgraded_plugins_repo(path: Path, *, venv: bool = True) -> Path:
    """A repository whose commit bumped plugkit to 3 and migrated nothing: its plugins and a
    test double still have plugkit 2's methods; plugkit 3 is installed in its ``.venv`` (not
    tracked) when ``venv``."""
    repo = new_repo(path)
    plugin = """
        from plugkit import Plugin


        class {cls}(Plugin):
            def start(self, app):
                return "{cls}"

            def render(self, page):
                return page

            def stop(self, *, force=False):
                return None
        """
    files = {".gitignore": ".venv/\n", "requirements.txt": "plugkit==2.1\n"}
    files["plugins/__init__.py"] = ""
    files["plugins/alpha.py"] = plugin.format(cls="AlphaPlugin")
    files["plugins/beta.py"] = plugin.format(cls="BetaPlugin")
    files["tests/fakes.py"] = (
        "from plugkit import Plugin\n\n\nclass FakePlugin(Plugin):\n"
        "    def start(self, app, *, timeout=5.0):\n        return None\n"
    )
    commit(repo, "plugins", files)
    commit(repo, "Bump plugkit to 3", {"requirements.txt": "plugkit==3.0\n"})
    if venv:
        plugkit_library(repo / ".venv/lib/python3.12/site-packages")
    return repo


def notifiers_repo(path: Path, *, new: str, missed: str = "title, body") -> Path:
    """The reorder shape: Notifier.notify(title, body) became send(``new``) (its parameters
    reordered, re-defaulted or both) in one commit that migrated Mail and Slack; SmsNotifier,
    defined as ``notify(self, {missed})``, was missed."""
    repo = new_repo(path)
    base = """
        import abc


        class Notifier(abc.ABC):
            @abc.abstractmethod
            def {method}(self, {params}): ...
        """
    notifier = """
        from notifiers.base import Notifier


        class {cls}(Notifier):
            def {method}(self, {params}):
                return "{cls}"
        """
    names = {"mail": "MailNotifier", "slack": "SlackNotifier", "sms": "SmsNotifier"}
    files = {"notifiers/__init__.py": "",
             "notifiers/base.py": base.format(method="notify", params="title, body")}  # fmt: skip
    for short, cls in names.items():
        params = missed if short == "sms" else "title, body"
        files[f"notifiers/{short}.py"] = notifier.format(cls=cls, method="notify", params=params)
    commit(repo, "notifiers", files)
    files = {"notifiers/base.py": base.format(method="send", params=new)}
    for short, cls in names.items():
        if short != "sms":
            files[f"notifiers/{short}.py"] = notifier.format(cls=cls, method="send", params=new)
    commit(repo, "Notifier.notify becomes send", files)
    return repo


def counters_repo(path: Path, *, base_takes_it: bool) -> Path:
    """A keyword passed from another module (limits 4e1d2d0's shape): strategies.py starts to
    call ``storage.incr(key, amount=amount)``; the base's abstract ``incr`` takes ``amount: int
    = 1`` (``base_takes_it``) or is left as it was; Memory and Redis storages migrated, Disk
    missed."""
    repo = new_repo(path)
    base = """
        import abc


        class Storage(abc.ABC):
            @abc.abstractmethod
            def incr(self, key: str{extra}) -> int: ...
        """
    storage = """
        from counters.base import Storage


        class {cls}(Storage):
            def incr(self, key{extra}):
                return {ret}
        """
    strategy = "def hit(storage, key, amount=1):\n    return storage.incr(key{call})\n"
    names = {"memory": "MemoryStorage", "redis": "RedisStorage", "disk": "DiskStorage"}
    files = {"counters/__init__.py": "", "counters/base.py": base.format(extra=""),
             "counters/strategies.py": strategy.format(call="")}  # fmt: skip
    for short, cls in names.items():
        files[f"counters/{short}.py"] = storage.format(cls=cls, extra="", ret=1)
    commit(repo, "counters", files)
    files = {"counters/strategies.py": strategy.format(call=", amount=amount")}
    if base_takes_it:
        files["counters/base.py"] = base.format(extra=", amount: int = 1")
    for short, cls in names.items():
        if short != "disk":
            files[f"counters/{short}.py"] = storage.format(
                cls=cls, extra=", amount: int = 1", ret="amount"
            )
    commit(repo, "Hit by an amount", files)
    return repo


def fields_repo(path: Path) -> Path:
    """An old interface above the base (marshmallow 7fd334bf's shape): FieldABC declares
    ``_deserialize``; Field, below it, calls ``self._deserialize`` and starts to pass
    ``partial=``; Integer and String migrated, Email missed."""
    repo = new_repo(path)
    interface = """
        class FieldABC:
            def _deserialize(self, value):
                raise NotImplementedError
        """
    field = """
        from fields.abc import FieldABC


        class Field(FieldABC):
            def deserialize(self, value, partial=False):
                return self._deserialize(value{call})

            def _deserialize(self, value{params}):
                return value
        """
    custom = """
        from fields.field import Field


        class {cls}(Field):
            def _deserialize(self, value{params}):
                return {cls!r}
        """
    names = {"integer": "Integer", "string": "String", "email": "Email"}
    files = {"fields/__init__.py": "", "fields/abc.py": interface,
             "fields/field.py": field.format(call="", params="")}  # fmt: skip
    for short, cls in names.items():
        files[f"fields/{short}.py"] = custom.format(cls=cls, params="")
    commit(repo, "fields", files)
    params = ", *, partial=False"
    files = {"fields/field.py": field.format(call=", partial=partial", params=params)}
    for short, cls in names.items():
        if short != "email":
            files[f"fields/{short}.py"] = custom.format(cls=cls, params=params)
    commit(repo, "Field passes partial to _deserialize", files)
    return repo
