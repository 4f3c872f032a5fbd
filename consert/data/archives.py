"""What an archive may write, checked before it writes anything: every member a plain file or folder whose name,
joined to its target folder, stays inside it (no absolute name, no ``..``, no link or device), their total size
within a bound and within the free space. Zip and tar alike; the downloads unpack through here only
(:mod:`consert.data.download`), so a hostile or broken archive stops in one line naming it and the member."""

from __future__ import annotations

import shutil
import stat
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath


class UnsafeArchive(ValueError):
    """An archive that would write outside its folder, something other than files and folders, or more than its
    bound or the free space; the message names the archive and the member, in one line."""


@dataclass(frozen=True)
class Member:
    """One archive member: its name as the archive gives it, its (declared, uncompressed) size, and its kind."""

    name: str
    size: int
    kind: str  # "file", "folder", or what it is else ("link", "device", ...)


def _zip_kind(info: zipfile.ZipInfo) -> str:
    kind = stat.S_IFMT(info.external_attr >> 16)  # the Unix file type, where the archive was made on Unix
    if kind == stat.S_IFLNK:
        return "link"
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):  # a character or block device, a pipe, a socket
        return "device"
    return "folder" if info.is_dir() else "file"


def _tar_kind(info: tarfile.TarInfo) -> str:
    if info.isfile():
        return "file"
    if info.isdir():
        return "folder"
    return "link" if info.issym() or info.islnk() else "device"


def members(archive: Path) -> list[Member]:
    """The members of a zip or tar archive (``.zip``, ``.tar.gz``, ``.tgz``, ``.tar``)."""
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as opened:
            return [Member(info.filename, info.file_size, _zip_kind(info)) for info in opened.infolist()]
    with tarfile.open(archive) as opened:
        return [Member(info.name, info.size, _tar_kind(info)) for info in opened.getmembers()]


def name_fault(name: str) -> str:
    """Why a member's name may not be joined to a folder ("" when it may): absolute, a drive, or a ``..``."""
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or (name[1:2] == ":" and name[:1].isalpha()):
        return "an absolute name"
    if ".." in path.parts:
        return "a name that climbs out with .."
    return ""


def inside(folder: Path, relative: str) -> Path:
    """``folder / relative``, refused (:class:`UnsafeArchive`) unless it resolves to a path inside ``folder``."""
    root = folder.resolve()
    target = (root / relative.lstrip("/")).resolve()
    if relative.startswith("/") or name_fault(relative) or not target.is_relative_to(root) or target == root:
        raise UnsafeArchive(f"{relative!r} does not lie inside {folder}")  # (a link in the way resolves elsewhere)
    return root / relative


def checked_members(archive: Path, wanted: list[Member] | None = None, bound: int | None = None) -> list[Member]:
    """The members of ``archive`` once each is a plain file or folder with a safe name, and the files' total size
    (of ``wanted``, the members to be written, default all) within ``bound``; else one :class:`UnsafeArchive` line
    naming the archive and the first member at fault."""
    listed = members(archive)
    for member in listed:
        if member.kind not in ("file", "folder"):
            raise UnsafeArchive(f"{archive.name}: member {member.name!r} is a {member.kind}; only files and folders")
        if fault := name_fault(member.name):
            raise UnsafeArchive(
                f"{archive.name}: member {member.name!r} has {fault}: it would write outside its folder"
            )
    total = sum(member.size for member in (listed if wanted is None else wanted) if member.kind == "file")
    if bound is not None and total > bound:
        raise UnsafeArchive(f"{archive.name}: its files hold {total:,} bytes unpacked, above its bound of {bound:,}")
    return listed


class NoSpace(OSError):
    """Too little free space for what is about to be written; the message names the folder (not retried)."""


def check_free_space(folder: Path, needed: int, what: str) -> None:
    """Refuse, in one :class:`NoSpace` line naming ``folder``, to write ``needed`` bytes there with less free."""
    probe = folder
    while not probe.exists():
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if needed > free:
        raise NoSpace(f"{folder}: {free:,} bytes free, {needed:,} needed for {what}; free some space and run again")
