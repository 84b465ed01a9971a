"""A container image as a target's test environment (``[verify] image = "name"``): its root
filesystem becomes the sandbox's system view, and its Python runs the tests.

No container engine and no registry: the operator puts the images a runner may use in
``REPAIRBOT_VERIFY_IMAGES_DIR``, each as ``docker save`` / ``skopeo copy … docker-archive:`` or
``oci-archive:`` output (``<name>.tar``, the name's ``/`` and ``:`` written as ``_``), or as an
unpacked root filesystem folder of that name. A repository can only pick among them. An archive
is unpacked once into the environments cache (keyed by its content hash), layer by layer with
whiteouts applied; members that would land outside the folder, device nodes, and setuid bits
are refused or dropped (``tarfile``'s ``tar`` filter), so an image cannot write the host.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tarfile
from pathlib import Path, PurePosixPath
from typing import IO

IMAGE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@-]{0,199}$")
PYTHONS = ("/usr/local/bin/python3", "/opt/conda/bin/python", "/usr/bin/python3")


class ImageProblem(Exception):
    """The image cannot be used; the message says why."""


def image_file_name(name: str) -> str:
    """The file or folder name an image is stored under (``ghcr.io/org/ci:12`` ->
    ``ghcr.io_org_ci_12``)."""
    if not IMAGE_NAME.fullmatch(name) or ".." in name:
        raise ImageProblem(f"[verify] image {name[:80]!r} is not an image name")
    return re.sub(r"[/:@]", "_", name)


def _layers(archive: tarfile.TarFile) -> list[str]:
    """The layer members of a docker-archive (manifest.json) or an OCI archive (index.json),
    lowest first."""
    names = set(archive.getnames())
    if "manifest.json" in names:
        manifest = json.load(_member(archive, "manifest.json"))
        return [str(layer) for layer in manifest[0]["Layers"]]
    if "index.json" in names:
        index = json.load(_member(archive, "index.json"))
        digest = index["manifests"][0]["digest"]
        manifest = json.load(_member(archive, _blob(digest)))
        return [_blob(layer["digest"]) for layer in manifest["layers"]]
    raise ImageProblem("not a docker-archive or OCI archive: no manifest.json or index.json")


def _blob(digest: str) -> str:
    algorithm, _, value = str(digest).partition(":")
    if not re.fullmatch(r"[a-z0-9]+", algorithm) or not re.fullmatch(r"[a-f0-9]+", value):
        raise ImageProblem(f"bad digest {str(digest)[:80]!r}")
    return f"blobs/{algorithm}/{value}"


def _member(archive: tarfile.TarFile, name: str) -> IO[bytes]:
    stream = archive.extractfile(name)
    if stream is None:
        raise ImageProblem(f"{name} is not a file in the archive")
    return stream


def _inside(root: Path, relative: str) -> Path:
    """``root/relative`` with no symlink on the way leading out of ``root``."""
    path = root / relative
    resolved = path.parent.resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise ImageProblem(f"layer path {relative[:120]!r} leads outside the image")
    return resolved / path.name


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _refuse_special(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
    """``tarfile``'s ``tar`` filter (no absolute paths, nothing outside, no setuid), and no
    device nodes or FIFOs (nothing a sandbox needs from an image)."""
    if member.isdev():
        return None
    return tarfile.tar_filter(member, path)


def apply_layer(layer: tarfile.TarFile, rootfs: Path) -> None:
    """Unpack one layer over ``rootfs``: whiteouts delete what lower layers put there, an
    entry replaces whatever was at its path (a file never writes through a lower symlink)."""
    for member in layer:
        relative = str(PurePosixPath("/", member.name).relative_to("/"))
        if relative in ("", "."):
            continue
        path = _inside(rootfs, relative)
        base = path.name
        if base == ".wh..wh..opq":
            for child in path.parent.iterdir() if path.parent.is_dir() else []:
                _remove(child)
            continue
        if base.startswith(".wh."):
            _remove(path.with_name(base.removeprefix(".wh.")))
            continue
        if not (member.isdir() and path.is_dir() and not path.is_symlink()):
            _remove(path)
        layer.extract(member, rootfs, filter=_refuse_special)


def unpack_image(archive_path: Path, cache: Path) -> Path:
    """The root filesystem of the image archive at ``archive_path``, unpacked once into
    ``cache`` (keyed by the archive's hash)."""
    digest = hashlib.sha256()
    with archive_path.open("rb") as data:
        for block in iter(lambda: data.read(1 << 20), b""):
            digest.update(block)
    target = cache / "images" / digest.hexdigest()[:24]
    if (target / ".complete").is_file():
        return target / "rootfs"
    building = target.with_name(f"{target.name}.building-{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    (building / "rootfs").mkdir(parents=True)
    try:
        with tarfile.open(archive_path) as archive:
            for name in _layers(archive):
                with tarfile.open(fileobj=_member(archive, name), mode="r|*") as layer:
                    apply_layer(layer, building / "rootfs")
        (building / ".complete").write_text(archive_path.name + "\n")
        with contextlib.suppress(OSError):  # another runner finished it first: use that one
            building.rename(target)
    except (tarfile.TarError, KeyError, IndexError, ValueError, OSError) as exc:
        raise ImageProblem(f"image archive {archive_path.name} cannot be unpacked: {exc}") from exc
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return target / "rootfs"


def image_root(images_dir: Path | None, name: str, cache: Path | None) -> Path:
    """The root filesystem for ``[verify] image = name`` (an unpacked folder as it is, an
    archive unpacked into ``cache``)."""
    if images_dir is None:
        raise ImageProblem("this runner has no images (REPAIRBOT_VERIFY_IMAGES_DIR is not set)")
    stored = image_file_name(name)
    folder, archive = images_dir / stored, images_dir / f"{stored}.tar"
    if folder.is_dir() and (folder / "usr").is_dir():
        return folder
    if not archive.is_file():
        raise ImageProblem(f"no image {name} on this runner (looked for {folder} and {archive})")
    if cache is None:
        raise ImageProblem("no cache folder to unpack images into on this runner")
    return unpack_image(archive, cache)


def image_python(rootfs: Path, configured: str | None) -> str:
    """The image's interpreter, as a path inside the image: ``configured``, else the first of
    ``PYTHONS`` the image has."""
    candidates = [configured] if configured else list(PYTHONS)
    for python in candidates:
        if not python.startswith("/"):
            raise ImageProblem("[verify] python must be an absolute path inside the image")
        if (rootfs / python.lstrip("/")).exists():
            return python
    raise ImageProblem(f"the image has no {' or '.join(candidates)}")
