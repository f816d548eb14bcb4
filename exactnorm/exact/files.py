"""Files: atomic writes and safe ``.npz`` reading (no pickles, sizes checked before loading).

Ground types: none of the functions here interpret numbers; they move bytes and NumPy arrays.
Every writer in the package goes through :func:`atomic_write_bytes`, so an interrupted run never
leaves a half-written certificate, table or export behind.
"""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from exactnorm.errors import (
    ExactnormError,
    InputError,
    LimitExceededError,
    NumberFormatError,
    ShapeError,
)

__all__ = ["atomic_write", "atomic_write_bytes", "read_npz_archive", "npz_header", "npz_array"]

T = TypeVar("T")


def npz_header(data: Any, key: str) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype of one ``.npz`` member read from its header, without loading the array.

    A compressed ``.npz`` of a few kilobytes can declare a 10^5 × 10^5 array; checking the header
    first turns that into a :class:`LimitExceededError` instead of an out-of-memory kill.
    """
    names = data.zip.namelist()
    member = f"{key}.npy" if f"{key}.npy" in names else key
    with data.zip.open(member) as fh:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
        else:
            shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
    return tuple(shape), dtype


def npz_array(data: Any, key: str, max_width: int, *, matrix: bool) -> np.ndarray:
    """One numeric member, its size checked against ``max_width`` before it is loaded."""
    shape, dtype = npz_header(data, key)
    if matrix and len(shape) != 2:
        raise ShapeError(f"{key} must be 2-D, got shape {shape}")
    if (matrix and max(shape) > max_width) or (not matrix and math.prod(shape) > max_width):
        raise LimitExceededError(f"array {key} has shape {shape}, above the width limit "
                                 f"{max_width} (raise max_width)", parameter="max_width")
    if dtype.kind == "f" and dtype.itemsize > 8:
        # float(x) would round a long double; only IEEE single/double are converted exactly here
        raise NumberFormatError(f"array {key} has dtype {dtype}; save it as float64 or integers")
    return np.asarray(data[key])


def read_npz_archive(path: Path, reader: Callable[[Any], T]) -> T:
    """Open an ``.npz`` safely (no pickles, zip checked first) and return ``reader(archive)``.

    Corrupt members, bad headers and truncated archives become one-line :class:`InputError`;
    the reader's own :class:`ExactnormError` passes through unchanged.
    """
    # numpy would try other formats (and suggest unpickling) for a file that is not a zip archive
    if not zipfile.is_zipfile(path):
        raise InputError(f"{path} is not an .npz archive (a zip of W1.npy, b1.npy, …)")
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise InputError(f"cannot read {path} as .npz: {exc}") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise InputError(f"{path} is a single .npy array, not an .npz archive of W1, b1, …")
    try:
        with data:
            return reader(data)
    except ExactnormError:
        raise
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as exc:
        raise InputError(f"cannot read {path} as .npz: {type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else ''}") from None


def atomic_write(path: str | os.PathLike[str], data: bytes | str) -> int:
    """Write ``data`` (text is UTF-8 encoded) atomically; return the number of bytes written.

    >>> import tempfile, os
    >>> atomic_write(os.path.join(tempfile.mkdtemp(), "a", "b.txt"), "γ")
    2
    """
    raw = data.encode() if isinstance(data, str) else data
    atomic_write_bytes(path, lambda fh: fh.write(raw))
    return len(raw)


def atomic_write_bytes(path: str | os.PathLike[str], produce: Callable[[Any], None]) -> None:
    """Write a file atomically: ``produce(fileobj)`` fills a temp file, then it is renamed.

    An interruption (Ctrl-C, crash) leaves either the old file or none, never a partial one.
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            produce(fh)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates 0600 files; give the result the permissions a plain open() would
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise

