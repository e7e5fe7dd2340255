"""What a command may delete, replace, resume or complete: only what it wrote itself.

Every command that writes into a folder claims it first (`claim_folder`), and a command that writes one file
claims that file (`claim_file`). A claim:
- refuses an output equal to or inside one of the command's inputs, or an input inside the output;
- refuses, before writing anything, a folder that holds a file the command did not write, naming that file;
- takes the folder's lock (`.mlperf-bert.lock`, an flock the kernel drops when its holder dies), so that of two
  commands writing one folder the second is refused while the first works, and nothing it would touch is
  touched first;
- writes the folder's record (`.mlperf-bert-written.json`: each entry's name and the command that wrote it)
  before anything else, and adds each entry to it before the entry is created. The record is what a command
  may remove (`--overwrite`), keep (`--resume`) or replace; a file of someone else's is never among it.

Temporary files are named `.NAME.tmp<pid>` by the process that writes them (`temporary_path`); one is removed
only by that process, or under the lock when that process is provably gone (no such process on this host).
A folder a command makes inside its own is claimed in turn (`OwnedFolder.subfolder`), so that its record says
what it holds too. The manifest `data verify` writes into a dataset folder belongs to the folder's data:
every writer of the folder may replace or remove it with them.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import shutil
import socket
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

RECORD_FILE = ".mlperf-bert-written.json"
LOCK_FILE = ".mlperf-bert.lock"
VERIFY = "data verify"
SHARED_WRITERS = (VERIFY,)
_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.tmp(?P<pid>\d+)$")
_held: dict[str, int] = {}  # the folders this process holds the lock of, and how many claims hold it

Legacy = Callable[[Path], bool]  # whether a folder (or file) was written by the command before records existed


class OwnershipError(FileExistsError):
    """An output the command may not write: someone else's files, another command at work, an input."""


def temporary_path(path: Path) -> Path:
    """Where this process writes `path` before renaming it into place."""
    return path.with_name(f".{path.name}.tmp{os.getpid()}")


def write_text_atomically(path: Path, text: str) -> None:
    """`path` holds `text` whole, or what it held before: written to its temporary name, then renamed."""
    tmp = temporary_path(path)
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as e:  # a write's error names no file
        raise OSError(e.errno, e.strerror or str(e), str(path)) from None
    finally:
        tmp.unlink(missing_ok=True)


def temporary_of(name: str) -> tuple[str, int] | None:
    """(the name it becomes, the pid of its writer) for a temporary file's name, else None."""
    match = _TEMPORARY.match(name)
    return (match["name"], int(match["pid"])) if match else None


def process_gone(pid: int) -> bool:
    """Whether no process `pid` runs on this host (a pid this process cannot signal still counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def remove_stale_temporaries(folder: Path, names: Iterable[str]) -> None:
    """Removes the temporaries of `names` in `folder` whose writer is gone (a killed run's leftovers)."""
    wanted = set(names)
    for entry in folder.iterdir() if folder.is_dir() else ():
        found = temporary_of(entry.name)
        if found and found[0] in wanted and found[1] != os.getpid() and process_gone(found[1]):
            _delete(entry)


def refuse_overlap(output: Path, inputs: Iterable[str | os.PathLike]) -> None:
    """Raises OwnershipError when `output` is an input, lies inside one, or holds one."""
    out = Path(output).resolve()
    for given in inputs:
        source = Path(given).resolve()
        if out == source or source in out.parents:
            where = "is" if out == source else "lies inside"
            raise OwnershipError(f"{output}: {where} the input {given}; write the output elsewhere")
        if out in source.parents:
            raise OwnershipError(f"{given}: an input lies inside the output folder {output}; write the output "
                                 "elsewhere")


def make_folder(folder: Path) -> None:
    """mkdir -p, with one line naming the file that stands where a folder is needed."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = next((p for p in [folder, *folder.parents] if p.exists() and not p.is_dir()), folder)
        raise OwnershipError(f"{folder}: cannot be made a folder: {blocker} is a file; choose another path") from None


def _read_record(folder: Path) -> dict[str, str] | None:
    try:
        data = json.loads((folder / RECORD_FILE).read_text())
        files = data["files"]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        raise OwnershipError(f"{folder / RECORD_FILE}: damaged (not the record mlperf-bert writes); nothing is "
                             f"written in {folder}: move the folder away, or empty it yourself") from None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise OwnershipError(f"{folder / RECORD_FILE}: damaged (not the record mlperf-bert writes); nothing is "
                             f"written in {folder}: move the folder away, or empty it yourself")
    return files


def _write_record(folder: Path, files: dict[str, str]) -> None:
    write_text_atomically(folder / RECORD_FILE, json.dumps({"files": dict(sorted(files.items()))}, indent=1) + "\n")


def _is_bookkeeping(name: str) -> bool:
    found = temporary_of(name)
    return name in (RECORD_FILE, LOCK_FILE) or (found is not None and found[0] == RECORD_FILE)


def _delete(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _open_lock(path: Path, folder: Path) -> int:
    """The lock file, opened without following a link and without blocking: a link planted at its name (to a
    user's file) or a hard link to another file would have the holder line written into that file."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise OwnershipError(f"{path}: is a symbolic link, not the lock mlperf-bert writes; nothing is written "
                                 f"in {folder}: remove the link, or choose another folder") from None
        raise OwnershipError(f"{folder}: cannot write here ({e.strerror or e}); choose another folder") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
        os.close(fd)
        what = "a hard link to another file" if stat.S_ISREG(info.st_mode) else "not a regular file"
        raise OwnershipError(f"{path}: is {what}, not the lock mlperf-bert writes; nothing is written in {folder}: "
                             "remove it, or choose another folder")
    return fd


@contextmanager
def folder_lock(folder: Path, writer: str, wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """The folder's lock for the duration (re-entrant within this process). When another process holds it:
    OwnershipError naming the holder, or, given `wait`, wait(a line naming the holder) and then the lock once
    the holder ends."""
    key = str(folder.resolve())
    if key in _held:
        _held[key] += 1
        try:
            yield
        finally:
            _held[key] -= 1
        return
    path = folder / LOCK_FILE
    while True:
        fd = _open_lock(path, folder)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EACCES):
                os.close(fd)
                raise
            holder = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "another process"
            if wait is None:
                os.close(fd)
                raise OwnershipError(f"{folder}: {holder} is writing here; wait for it to end, or choose another "
                                     "folder") from None
            wait(f"{folder}: {holder} is writing here; waiting for it to end")
            fcntl.flock(fd, fcntl.LOCK_EX)  # the kernel releases it when its holder ends, however it ends
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # its last holder removed it between our open and our lock: lock the file there now
    os.ftruncate(fd, 0)
    os.write(fd, f"`mlperf-bert {writer}` (pid {os.getpid()} on {socket.gethostname()})\n".encode())
    _held[key] = 1
    try:
        yield
    finally:
        del _held[key]
        path.unlink(missing_ok=True)  # before the unlock: a process that opened it sees another file and retries
        os.close(fd)


class OwnedFolder:
    """A folder claimed by `writer` (see claim_folder): its record, and what may be done with its entries."""

    def __init__(self, path: Path, writer: str, legacy: Legacy | None = None):
        self.path, self.writer = path, writer
        recorded = _read_record(path) if path.is_dir() else None
        if recorded is None and legacy is not None and path.is_dir() and legacy(path):
            recorded = {e.name: writer for e in path.iterdir() if not _is_bookkeeping(e.name)}
        self.files: dict[str, str] = recorded or {}

    def _mine(self, name: str) -> bool:
        return self.files.get(name) in (self.writer, *SHARED_WRITERS)

    def foreign(self) -> Path | None:
        """The first entry that neither this writer (nor `data verify`) wrote, nor a temporary of one of its
        entries, nor the claim's own bookkeeping."""
        if not self.path.is_dir():
            return None
        for entry in sorted(self.path.iterdir()):
            name = entry.name
            found = temporary_of(name)
            if (_is_bookkeeping(name) and not entry.is_symlink()) or (found and self._mine(found[0])):
                continue
            if not self._mine(name) or entry.is_symlink():
                return entry
        return None

    def refuse_foreign(self, hint: str) -> None:
        entry = self.foreign()
        if entry is not None:
            other = self.files.get(entry.name)
            by = f", written by `mlperf-bert {other}`" if other and other != self.writer else ""
            raise OwnershipError(f"{self.path}: holds files that `mlperf-bert {self.writer}` did not write "
                                 f"({entry.name}{by}); nothing is written there: {hint}")

    def existing(self) -> list[str]:
        """The entries of this writer's that are there (not the bookkeeping), in name order."""
        return sorted(name for name in self.files if self._mine(name) and (self.path / name).exists())

    def record(self, *names: str) -> None:
        """Adds entries (names in this folder) to the record before they are written."""
        files = _read_record(self.path) or {}
        files.update({name: self.writer for name in names})
        self.files.update(files)
        _write_record(self.path, self.files)

    def settle_temporaries(self) -> None:
        """Removes this writer's temporaries (and the record's) whose writer is gone; refuses while one's writer
        still runs."""
        for entry in sorted(self.path.iterdir()):
            found = temporary_of(entry.name)
            if found is None or not (found[0] == RECORD_FILE or self._mine(found[0])):
                continue
            pid = found[1]
            if pid != os.getpid() and not process_gone(pid):
                raise OwnershipError(f"{entry}: being written by process {pid}, which still runs; wait for it to "
                                     "end")
            _delete(entry)

    def remove_all(self) -> None:
        """Removes every entry this writer's record holds (checked first, so that nothing is half removed)."""
        for name in self.existing():
            _check_removable(self.path / name, self.writer)
        for name in self.existing():
            _remove_owned(self.path / name, self.writer)
            del self.files[name]
        _write_record(self.path, self.files)

    @contextmanager
    def subfolder(self, name: str, mode: str = "resume") -> Iterator[OwnedFolder]:
        """A folder of this one's, recorded here and claimed in turn with `mode` (see claim_folder)."""
        self.record(name)
        with claim_folder(self.path / name, self.writer, mode=mode) as inner:
            yield inner


def _check_removable(path: Path, writer: str) -> None:
    """Raises OwnershipError if removing the entry `path` would remove a file that `writer` did not write, or
    a temporary that a running process still writes."""
    found = temporary_of(path.name)
    if found is not None and found[1] != os.getpid() and not process_gone(found[1]):
        raise OwnershipError(f"{path}: being written by process {found[1]}, which still runs; wait for it to end")
    if path.is_symlink() or not path.is_dir():
        return
    inner = OwnedFolder(path, writer)
    if _read_record(path) is not None:
        inner.refuse_foreign("move them away first")
    for entry in path.iterdir():
        if not _is_bookkeeping(entry.name):
            _check_removable(entry, writer)


def _remove_owned(path: Path, writer: str) -> None:
    if path.is_dir() and not path.is_symlink():
        with folder_lock(path, writer):
            for entry in path.iterdir():
                if entry.name != LOCK_FILE:
                    _delete(entry)
    _delete(path)


@contextmanager
def claim_folder(folder: str | os.PathLike, writer: str, inputs: Iterable[str | os.PathLike] = (), mode: str = "new",
                 again: str = "pass --overwrite to replace them",
                 foreign_hint: str = "choose another --out, or move those files away yourself",
                 legacy: Legacy | None = None, wait: Callable[[str], None] | None = None) -> Iterator[OwnedFolder]:
    """Claims `folder` for `writer` (a command, e.g. "data prepare") while the block runs. `mode`: "new"
    refuses a folder that holds entries of the writer's (saying `again`), "resume" keeps them, "overwrite"
    removes them first. A folder holding anything the writer did not write is refused (`foreign_hint` says
    what to do), whatever the mode. Another claim at work there is refused, or waited for with `wait` (see
    folder_lock)."""
    folder = Path(folder)
    if mode not in ("new", "resume", "overwrite"):
        raise ValueError(f"unknown mode {mode!r}")
    refuse_overlap(folder, inputs)
    if folder.exists() and not folder.is_dir():
        raise OwnershipError(f"{folder}: is a file, not a folder; choose another path")
    OwnedFolder(folder, writer, legacy).refuse_foreign(foreign_hint)  # before writing even the lock
    make_folder(folder)
    with folder_lock(folder, writer, wait):
        owned = OwnedFolder(folder, writer, legacy)
        owned.refuse_foreign(foreign_hint)  # again, now that no other claim can change it
        owned.settle_temporaries()
        mine = owned.existing()
        if mode == "new" and mine:
            more = ", ..." if len(mine) > 1 else ""
            raise OwnershipError(f"{folder}: already holds {len(mine)} file(s) that `mlperf-bert {writer}` wrote "
                                 f"({mine[0]}{more}); {again}")
        if mode == "overwrite":
            owned.remove_all()
        owned.record()  # the mark, before anything else is written
        yield owned


@contextmanager
def claim_file(path: str | os.PathLike, writer: str, inputs: Iterable[str | os.PathLike] = (), replace: bool = False,
               force: bool = False, again: str = "pass --overwrite to replace it",
               foreign_hint: str = "choose another path, or move it away yourself",
               legacy: Legacy | None = None) -> Iterator[Path]:
    """Claims the one file `path` for `writer` while the block runs (the block writes it, to
    `temporary_path(path)` and then renamed). An existing file is replaced only when the writer wrote it
    (recorded in its folder, or `legacy` says so) and `replace` is set, or when `force` is set."""
    path = Path(path)
    refuse_overlap(path, inputs)
    if path.is_dir():
        raise OwnershipError(f"{path}: is a folder; give the path of a file")
    make_folder(path.parent)
    with folder_lock(path.parent, writer):
        folder = OwnedFolder(path.parent, writer)
        if path.exists() or path.is_symlink():
            own = folder.files.get(path.name) == writer or (legacy is not None and legacy(path))
            if not own and not force:
                raise OwnershipError(f"{path}: already exists and `mlperf-bert {writer}` did not write it; "
                                     f"{foreign_hint}")
            if own and not replace and not force:
                raise OwnershipError(f"{path}: already exists; {again}")
        remove_stale_temporaries(path.parent, [path.name])
        folder.record(path.name)
        yield path
