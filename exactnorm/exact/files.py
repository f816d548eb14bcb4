"""Files: atomic writes and safe ``.npz`` reading (no pickles, sizes checked before loading).

Ground types: none of the functions here interpret numbers; they move bytes and NumPy arrays.
Every writer in the package goes through :func:`atomic_write_bytes`, so an interrupted run never
leaves a half-written certificate, table or export behind.
"""

from __future__ import annotations

import contextlib
import io
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

__all__ = ["atomic_write", "atomic_write_bytes", "read_npz_archive", "npz_header", "npz_array",
           "npz_strings", "npz_box_arrays", "npz_bytes", "ZIP_EPOCH", "require_file",
           "read_text_file", "GZIP_MAGIC"]

#: the first two bytes of every gzip stream
GZIP_MAGIC = b"\x1f\x8b"


def require_file(path: str | os.PathLike[str], what: str, *,
                 parameter: str | None = None) -> Path:
    """``path`` if it is a non-empty regular file, else a one-line :class:`InputError` that says
    what it is instead: missing, a folder, not a regular file, or empty.

    >>> import tempfile
    >>> try:
    ...     require_file(tempfile.gettempdir(), "target file")
    ... except InputError as exc:
    ...     print(str(exc).split(" is ")[1])
    a folder, not a target file
    """
    p = Path(path)
    a = "an" if what[:1].lower() in "aeio" or what.startswith("ONNX") else "a"
    if p.is_dir():
        raise InputError(f"{p} is a folder, not {a} {what}", parameter=parameter)
    if not p.exists():
        raise InputError(f"no such {what}: {p}", parameter=parameter)
    if not p.is_file():
        raise InputError(f"{p} is not a regular file ({a} {what} is read from a file)",
                         parameter=parameter)
    if p.stat().st_size == 0:
        raise InputError(f"{p} is empty (0 bytes), not {a} {what}", parameter=parameter)
    return p


def read_text_file(path: Path, what: str, max_bytes: int) -> bytes:
    """The bytes of a text file, gunzipped when it is gzip (by its magic bytes or a ``.gz``
    name), at most ``max_bytes`` of them; a truncated or corrupt gzip file is said to be one."""
    p = require_file(path, what)
    with open(p, "rb") as fh:
        head = fh.read(2)
        fh.seek(0)
        if head != GZIP_MAGIC and not p.name.endswith(".gz"):
            data = fh.read(max_bytes + 1)
            if len(data) > max_bytes:
                raise LimitExceededError(f"{p} is larger than {max_bytes} bytes")
            return data
        inflater = zlib.decompressobj(31)
        out = bytearray()
        try:
            while chunk := fh.read(1 << 16):
                out += inflater.decompress(chunk, max_bytes + 1 - len(out))
                if len(out) > max_bytes or inflater.unconsumed_tail:
                    raise LimitExceededError(f"{p} is larger than {max_bytes} bytes "
                                             f"uncompressed")
                if inflater.eof:
                    break
        except zlib.error as exc:
            raise InputError(f"{p} is a corrupt gzip file ({exc})") from None
        if not inflater.eof:
            raise InputError(f"{p} is a truncated gzip file (it ends before the end of its "
                             f"compressed stream)")
        return bytes(out)


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
    """One numeric member, its shape and size checked from the header before it is loaded.

    Parameters
    ----------
    data : numpy.lib.npyio.NpzFile
        The open archive.
    key : str
        Member name.
    max_width : int
        Largest admitted dimension (matrices) or length (vectors).
    matrix : bool
        Demand a 2-D array with at least one row and one column; otherwise a 1-D array with at
        least one entry.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    ShapeError
        Wrong number of dimensions or an empty dimension.
    LimitExceededError
        A dimension above ``max_width``.
    NumberFormatError
        A float type wider than float64.
    """
    shape, dtype = npz_header(data, key)
    # Zero-size and 0-d arrays are refused here, at the one place both target readers pass
    # through, instead of surfacing later as an IndexError on an empty row list.
    if matrix and (len(shape) != 2 or min(shape) < 1):
        raise ShapeError(f"{key} must be a 2-D array with at least one row and one column, "
                         f"got shape {shape}")
    if not matrix and (len(shape) != 1 or shape[0] < 1):
        raise ShapeError(f"{key} must be a 1-D array with at least one entry, got shape {shape}")
    if (matrix and max(shape) > max_width) or (not matrix and math.prod(shape) > max_width):
        raise LimitExceededError(f"array {key} has shape {shape}, above the width limit "
                                 f"{max_width} (raise max_width)", parameter="max_width")
    if np.issubdtype(dtype, np.floating) and dtype.itemsize > 8:
        # float(x) would round a long double; only IEEE single/double are converted exactly here
        raise NumberFormatError(f"array {key} has dtype {dtype}; save it as float64 or integers")
    return np.asarray(data[key])


def npz_strings(data: Any, key: str, count: int, what: str) -> list[str]:
    """A 1-D string member with exactly ``count`` entries (checked from the header first).

    Raises
    ------
    ShapeError
        Not a 1-D string array of length ``count``; ``what`` says what the entries are.
    """
    shape, dtype = npz_header(data, key)
    if dtype.kind not in "US" or tuple(shape) != (count,):
        raise ShapeError(f"{key} must be a 1-D array of {count} strings ({what}), "
                         f"got {dtype} of shape {tuple(shape)}")
    return [str(a) for a in np.asarray(data[key])]


def npz_box_arrays(data: Any, max_width: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The optional ``lower``/``upper`` members (both or neither), each a non-empty 1-D array.

    Raises
    ------
    InputError
        Only one of the two is present.
    """
    keys = set(data.files)
    if ("lower" in keys) != ("upper" in keys):
        raise InputError("the file has only one of lower/upper; give both or neither")
    if "lower" not in keys:
        return None
    return (npz_array(data, "lower", max_width, matrix=False),
            npz_array(data, "upper", max_width, matrix=False))


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


#: the earliest time a zip entry can carry; any fixed value makes archives byte-reproducible
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """An uncompressed ``.npz`` (what ``numpy.savez`` writes) with fixed metadata.

    ``numpy.savez`` stamps every member with the current local time and the host's "made by"
    system, so two exports of the same certificate differ. Here each member is written with
    :data:`ZIP_EPOCH`, Unix as creating system, fixed permissions and in the order given, so the
    bytes depend on the arrays only. ``numpy.load`` reads the result like any ``.npz``.

    Parameters
    ----------
    arrays : dict of str to numpy.ndarray
        Member names (without ``.npy``) and arrays; object arrays are refused.

    Returns
    -------
    bytes

    >>> import io
    >>> a = {"x": np.arange(3)}
    >>> npz_bytes(a) == npz_bytes(a)
    True
    >>> np.load(io.BytesIO(npz_bytes(a)))["x"].tolist()
    [0, 1, 2]
    """
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, array in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=ZIP_EPOCH)
            info.create_system = 3
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_STORED
            zf.writestr(info, member.getvalue())
    return buf.getvalue()


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

