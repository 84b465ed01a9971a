"""Container images as a target's test environment: archives unpacked safely, layer by layer,
and a real verification whose tests run on the image's root filesystem and its Python.

The image is built here, as ``docker save`` writes one: a layer holding this machine's Debian
Python 3.11 (its interpreter, the libraries it links, its standard library) with pytest copied
in, and a marker file only the image has. No container engine runs: the sandbox binds the
image's folders in place of the host's.
"""

from __future__ import annotations

import io
import json
import shutil
import sys
import tarfile
from pathlib import Path

import pytest

from bot.runner.environment import target_python
from bot.runner.images import (
    ImageProblem,
    apply_layer,
    image_file_name,
    image_python,
    image_root,
    unpack_image,
)
from bot.runner.verification import VerificationPlan, verify
from fixers.sandbox import Limits, sandbox_problem
from tests.bot.runner.conftest import OPS_FIXED, TinyRepo

DEBIAN_PYTHON = Path("/usr/bin/python3.11")
LIBS = ("libm.so.6", "libz.so.1", "libexpat.so.1", "libc.so.6")
MARKER = "etc/repairbot-test-image"
IN_IMAGE_TEST = (
    "from calc.ops import add\n\n\n"
    "def test_add():\n"
    "    assert add(2, 2) == 4\n"
    f"    assert open('/{MARKER}').read() == 'image'  # only the image has it\n"
)


def _layer(files: dict[str, bytes | str], links: dict[str, str] | None = None) -> bytes:
    """A layer tar: regular files (bytes) and symlinks (name -> target)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in files.items():
            payload = data.encode() if isinstance(data, str) else data
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(payload), 0o755
            tar.addfile(info, io.BytesIO(payload))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return out.getvalue()


def _docker_archive(path: Path, layers: list[bytes]) -> Path:
    names = [f"layer{i}/layer.tar" for i in range(len(layers))]
    manifest = [{"Config": "config.json", "RepoTags": ["test/py:1"], "Layers": names}]
    with tarfile.open(path, "w") as tar:
        for name, data in [("manifest.json", json.dumps(manifest).encode()),
                           ("config.json", b"{}"), *zip(names, layers, strict=True)]:  # fmt: skip
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _python_layer(path: Path) -> Path:
    """This machine's Debian Python as an image layer file (pytest and its deps copied in)."""
    with tarfile.open(path, "w") as tar:
        tar.add(DEBIAN_PYTHON, "usr/bin/python3")
        for lib in LIBS:
            tar.add(Path("/lib/x86_64-linux-gnu", lib).resolve(), f"usr/lib/x86_64-linux-gnu/{lib}")
        tar.add(Path("/lib64/ld-linux-x86-64.so.2").resolve(), "usr/lib64/ld-linux-x86-64.so.2")
        for name, target in (("lib", "usr/lib"), ("lib64", "usr/lib64"), ("bin", "usr/bin")):
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
        tar.add("/usr/lib/python3.11", "usr/lib/python3.11",
                filter=lambda i: None if "/test/" in f"/{i.name}/" or "__pycache__" in i.name else i)  # fmt: skip
        site = Path(pytest.__file__).parents[1]
        wanted = ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "pygments", "py.py")
        for found in [site / p for p in wanted] + [
            d for p in wanted for d in site.glob(f"{p}-*.dist-info")
        ]:
            tar.add(found, f"usr/lib/python3/dist-packages/{found.name}",
                    filter=lambda i: None if "__pycache__" in i.name else i)  # fmt: skip
        marker = b"image"
        info = tarfile.TarInfo(MARKER)
        info.size = len(marker)
        tar.addfile(info, io.BytesIO(marker))
    return path


@pytest.fixture(scope="module")
def images_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not DEBIAN_PYTHON.is_file():
        pytest.skip("no Debian python3.11 to build a test image from")  # the machine, not a GPU
    folder = tmp_path_factory.mktemp("images")
    layer = _python_layer(folder / "python-layer.tar").read_bytes()
    extra = _layer({"usr/share/doc/removed.txt": "gone in the next layer"})
    whiteout = _layer({"usr/share/doc/.wh.removed.txt": ""})
    _docker_archive(folder / f"{image_file_name('test/py:1')}.tar", [layer, extra, whiteout])
    (folder / "python-layer.tar").unlink()
    return folder


def test_an_image_archive_is_unpacked_once_with_its_whiteouts(
    images_dir: Path, tmp_path: Path
) -> None:
    rootfs = image_root(images_dir, "test/py:1", tmp_path / "cache")
    assert (rootfs / "usr/bin/python3").is_file() and (rootfs / MARKER).read_text() == "image"
    assert (rootfs / "usr/share/doc").is_dir()
    assert not (rootfs / "usr/share/doc/removed.txt").exists()  # the later layer's whiteout
    assert (rootfs / "lib").is_symlink()
    assert image_root(images_dir, "test/py:1", tmp_path / "cache") == rootfs  # reused
    assert image_python(rootfs, None) == "/usr/bin/python3"


@pytest.mark.skipif(sandbox_problem() is not None, reason=str(sandbox_problem()))
def test_a_target_verifies_inside_its_image(
    images_dir: Path, tiny_repo: TinyRepo, tmp_path: Path
) -> None:
    config = {"tests/test_ops.py": IN_IMAGE_TEST,
              ".repairbot.toml": '[verify]\nimage = "test/py:1"\n'}  # fmt: skip
    base = tiny_repo.commit(config, "the target's CI image")
    repo = TinyRepo(tiny_repo.path, base)
    head = repo.commit({"calc/ops.py": OPS_FIXED})
    plan = VerificationPlan(
        repo.path, base, head, ["calc/ops.py"], ["tests/test_ops.py::test_add"], "cpu"
    )
    outcome = verify(
        plan, run_dir=tmp_path / "run", limits=Limits(timeout_s=300), reruns=0,
        should_cancel=lambda: False, environments=tmp_path / "envs", images=images_dir,
    )  # fmt: skip
    assert outcome.verdict == "fixed", outcome.problems
    assert outcome.environment.startswith("image test/py:1, /usr/bin/python3 (Python 3.11")
    assert not Path("/", MARKER).exists()  # the test passed on the image's files, not the host's


def test_the_runner_only_offers_the_images_it_holds(images_dir: Path, tmp_path: Path) -> None:
    (tmp_path / ".repairbot.toml").write_text('[verify]\nimage = "other/image:2"\n')
    with pytest.raises(Exception, match="no image other/image:2 on this runner"):
        target_python(tmp_path, tmp_path / "cache", images_dir)
    with pytest.raises(Exception, match="REPAIRBOT_VERIFY_IMAGES_DIR is not set"):
        target_python(tmp_path, tmp_path / "cache", None)
    with pytest.raises(ImageProblem, match="is not an image name"):
        image_file_name("../../etc/passwd")


@pytest.mark.parametrize(
    ("member", "message"),
    [
        ("../escape.txt", "outside"),
        ("/abs/escape.txt", None),  # a leading slash is stripped: lands inside
        ("link/escape.txt", "outside"),
    ],
)
def test_a_layer_cannot_write_outside_the_image(
    tmp_path: Path, member: str, message: str | None
) -> None:
    rootfs = tmp_path / "rootfs"
    rootfs.mkdir()
    (rootfs / "link").symlink_to(tmp_path)  # a lower layer's link out of the image
    data = _layer({member: "x"})
    with tarfile.open(fileobj=io.BytesIO(data)) as layer:
        if message is None:
            apply_layer(layer, rootfs)
            assert (rootfs / "abs/escape.txt").is_file()
        else:
            with pytest.raises((ImageProblem, tarfile.TarError), match=message):
                apply_layer(layer, rootfs)
    assert not (tmp_path / "escape.txt").exists()


def test_a_file_replaces_a_lower_layers_symlink_instead_of_writing_through_it(
    tmp_path: Path,
) -> None:
    rootfs = tmp_path / "rootfs"
    rootfs.mkdir()
    (tmp_path / "victim.txt").write_text("host file")
    (rootfs / "config").symlink_to("../victim.txt")
    with tarfile.open(fileobj=io.BytesIO(_layer({"config": "image file"}))) as layer:
        apply_layer(layer, rootfs)
    assert (tmp_path / "victim.txt").read_text() == "host file"
    assert (rootfs / "config").read_text() == "image file" and not (rootfs / "config").is_symlink()


def test_an_archive_that_is_not_an_image_is_refused(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.tar"
    with tarfile.open(bogus, "w") as tar:
        tar.add(sys.executable, "python")
    with pytest.raises(ImageProblem, match=r"no manifest\.json or index\.json"):
        unpack_image(bogus, tmp_path / "cache")
    assert not list((tmp_path / "cache" / "images").glob("*.building-*"))
    shutil.rmtree(tmp_path / "cache")
