"""Reading certificate files and the command line of the standard-library checker.

``python -m exactnorm.checker CERT [--pure] [--max-bytes N] [--max-digits N] [--max-work N]``
prints one line; exit 0 valid, 1 invalid, 2 unreadable input or usage, 141 stdout closed. The
package is always the pure (standard-library) arithmetic here; ``exactnorm check`` chooses.
"""

from __future__ import annotations

import os
import stat
import sys
import zlib
from collections.abc import Callable
from typing import Any

from . import vocabulary as limits
from .arithmetic import PureArithmetic
from .impossibility import check_impossibility
from .numbers import (
    CertificateError,
    ReadError,
    Verdict,
    check_max_digits,
    parse_certificate_text,
    paused_collector,
    show,
)
from .protocol import AnyArithmetic
from .transformer import check_transformer
from .vocabulary import IMPOSSIBILITY_FORMAT, TRANSFORMER_FORMAT
from .walk import run_rules, verdict_of

__all__ = ["check_with", "read_file_bytes", "check_file_with", "check_text_with",
           "print_or_broken_pipe", "main"]

_CHUNK = 1 << 20


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _read_limited(chunks: Any, max_bytes: int, path: str) -> bytearray:
    """The chunks joined, refused as soon as they exceed max_bytes: memory follows what is
    there, never the limit."""
    buf = bytearray()
    for chunk in chunks:
        buf += chunk
        if len(buf) > max_bytes:
            raise ReadError("limit", f"certificate {path} exceeds {max_bytes} bytes "
                                     f"(uncompressed; raise the limit with --max-bytes)")
    return buf


def _plain_chunks(fh: Any) -> Any:
    while chunk := fh.read(_CHUNK):
        yield chunk


def _inflated_chunks(fh: Any) -> Any:
    """The uncompressed bytes of a gzip file (one or more members), at most 1 MiB at a time:
    zlib checks each member's CRC-32 and length; a truncated stream is an EOFError."""
    inflater = zlib.decompressobj(31)
    pending = b""
    while True:
        data = pending or fh.read(1 << 16)
        pending = b""
        if not data:
            if not inflater.eof:
                raise EOFError("compressed file ended before the end-of-stream marker")
            return
        if inflater.eof:  # the next member, or the zero padding some writers append
            if not data.strip(b"\0"):
                continue
            inflater = zlib.decompressobj(31)
        while data and not inflater.eof:
            out = inflater.decompress(data, _CHUNK)
            if out:
                yield out
            data = inflater.unconsumed_tail
        pending = inflater.unused_data if inflater.eof else b""


def _gzip_trailer_size(fh: Any) -> int:
    """The last member's ISIZE field: its uncompressed size mod 2^32, a lower bound of the
    total size of a valid file (a file whose trailer lies is corrupt and refused anyway)."""
    end = fh.seek(0, os.SEEK_END)
    if end < 18:
        fh.seek(0)
        return 0
    fh.seek(end - 4)
    size = int.from_bytes(fh.read(4), "little")
    fh.seek(0)
    return size


def read_file_bytes(path: str | os.PathLike[str],
                    max_bytes: int = limits.DEFAULT_MAX_BYTES) -> bytearray:
    """The bytes of a regular ``.json`` or ``.json.gz`` file, gunzipped, at most ``max_bytes``.

    The file is opened without blocking and checked to be a regular file before any byte is read
    (a FIFO, a device or a directory is refused by name). A ``.gz`` file whose gzip trailer
    already announces more than ``max_bytes`` is refused at once; otherwise it is inflated twice
    in chunks: first counting and discarding (so a gzip bomb is refused with O(1 MiB) of memory
    and the time to inflate max_bytes), then keeping. Raises :class:`ReadError`.
    """
    name = os.fspath(path)
    if not 0 <= max_bytes <= limits.MAX_BYTES_CAP:
        raise ReadError("input", f"the size limit must be between 0 and "
                                 f"{limits.MAX_BYTES_CAP} bytes, got {max_bytes}")
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise ReadError("input", f"no such certificate file: {name}") from None
    except OSError as exc:
        raise ReadError("input", f"cannot open certificate {name}: {exc.strerror}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise ReadError("input", f"certificate {name} is {_file_kind(mode)}, not a regular file")
    with os.fdopen(fd, "rb") as raw:
        try:
            if not name.endswith(".gz"):
                return _read_limited(_plain_chunks(raw), max_bytes, name)
            claimed = _gzip_trailer_size(raw)
            compressed = os.fstat(raw.fileno()).st_size
            # deflate expands at most 1032:1; a trailer claiming more lies (a truncated or
            # corrupt file), and the inflation below finds out which
            if max_bytes < claimed <= 1032 * compressed + 1024:
                raise ReadError("limit", f"certificate {name} is refused: its gzip trailer "
                                         f"announces {claimed} uncompressed bytes, above the "
                                         f"limit {max_bytes} (raise it with --max-bytes)")
            size = 0
            for chunk in _inflated_chunks(raw):
                size += len(chunk)
                if size > max_bytes:
                    raise ReadError("limit", f"certificate {name} exceeds {max_bytes} bytes "
                                             f"uncompressed (raise the limit with --max-bytes)")
            raw.seek(0)
            return _read_limited(_inflated_chunks(raw), max_bytes, name)
        except (EOFError, zlib.error) as exc:
            raise ReadError("corrupt", f"certificate {name} is not a valid gzip file: "
                                       f"{exc}") from None
        except OSError as exc:
            raise ReadError("input", f"cannot read certificate {name}: {exc.strerror}") from None




def check_with(ar: AnyArithmetic, doc: object, *, max_digits: int = limits.DEFAULT_MAX_DIGITS,
               progress: Callable[[int, int], None] | None = None,
               max_work: int | None = limits.DEFAULT_MAX_WORK) -> Verdict:
    """Check a parsed document with arithmetic ``ar``, told apart by its ``format``: a certificate
    by the walk (:func:`.walk.run_rules`), an impossibility document by its rules
    (:func:`.impossibility.check_impossibility`, §9), a transformer document slot by slot
    (:func:`.transformer.check_transformer`, §11); never raises for bad content."""
    if isinstance(doc, dict) and doc.get("format") == IMPOSSIBILITY_FORMAT:
        return check_impossibility(ar, doc, max_digits=max_digits, progress=progress,
                                   max_work=max_work)
    if isinstance(doc, dict) and doc.get("format") == TRANSFORMER_FORMAT:
        return check_transformer(ar, doc, run_rules, max_digits=max_digits, progress=progress,
                                 max_work=max_work)
    with paused_collector():  # no cycle is made: reference counting frees what the walk drops
        return verdict_of(lambda: run_rules(ar, doc, max_digits, progress, max_work))


def check_text_with(ar: AnyArithmetic, text: str | bytes | bytearray, *,
                    max_digits: int = limits.DEFAULT_MAX_DIGITS,
                    max_work: int | None = limits.DEFAULT_MAX_WORK) -> Verdict:
    """Parse strictly, then check with arithmetic ``ar``; never raises for bad content."""
    with paused_collector():  # from the parse to the verdict (numbers.paused_collector)
        try:
            doc = parse_certificate_text(text, max_digits=max_digits)
        except CertificateError as exc:
            return Verdict(False, exc.rule, str(exc))
        return check_with(ar, doc, max_digits=max_digits, max_work=max_work)


def check_file_with(ar: AnyArithmetic, path: str, *, max_digits: int = limits.DEFAULT_MAX_DIGITS,
                    max_bytes: int = limits.DEFAULT_MAX_BYTES,
                    progress: Callable[[int, int], None] | None = None,
                    max_work: int | None = limits.DEFAULT_MAX_WORK) -> Verdict:
    """Check a ``.json`` or ``.json.gz`` certificate file with arithmetic ``ar``; a file that
    cannot be read is a failed verdict with rule ``format``."""
    with paused_collector():  # from the parse to the verdict (numbers.paused_collector)
        try:
            text = read_file_bytes(path, max_bytes)
            doc = parse_certificate_text(text, max_digits=max_digits)
        except ReadError as exc:
            return Verdict(False, "format", str(exc))
        except CertificateError as exc:
            return Verdict(False, exc.rule, str(exc))
        del text  # the document is parsed: the bytes need not stay in memory during the check
        return check_with(ar, doc, max_digits=max_digits, progress=progress, max_work=max_work)


def print_or_broken_pipe(line: str) -> bool:
    """Print one line to stdout; False if stdout is closed (the reader went away)."""
    try:
        print(line, flush=True)
        return True
    except BrokenPipeError:
        # Python would report the pipe again when it flushes stdout at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return False


def _option(args: list[str], name: str, cap: int) -> int | str | None:
    """Remove ``name N`` from ``args``; the number, None if absent, or an error message."""
    if name not in args:
        return None
    k = args.index(name)
    value = args[k + 1] if k + 1 < len(args) else ""
    del args[k:k + 2]
    if not value.isdigit() or len(value) > 20 or not 1 <= int(value) <= cap:
        return f"error: {name} needs a whole number from 1 to {cap}, got {show(value)}"
    return int(value)


def main(argv: list[str] | None = None) -> int:
    """``python -m exactnorm.checker CERT [--pure] [--max-bytes N] [--max-digits N]
    [--max-work N]``: one line; exit 0 valid, 1 invalid, 2 unreadable file or usage, 141 when
    stdout is closed before the verdict is out. ``--pure`` is accepted for symmetry with
    ``exactnorm check``: this entry point is always the standard-library arithmetic."""
    args = [a for a in (sys.argv[1:] if argv is None else argv) if a != "--pure"]
    given: dict[str, int | None] = {}
    for name, cap in (("--max-bytes", limits.MAX_BYTES_CAP),
                      ("--max-digits", limits.MAX_DIGITS_CAP),
                      ("--max-work", limits.MAX_WORK_CAP)):
        got = _option(args, name, cap)
        if isinstance(got, str):
            print(got, file=sys.stderr)
            return 2
        given[name] = got
    if len(args) != 1:
        print("usage: python -m exactnorm.checker CERT [--pure] [--max-bytes N] "
              "[--max-digits N] [--max-work N]", file=sys.stderr)
        return 2
    max_bytes = given["--max-bytes"] or limits.DEFAULT_MAX_BYTES
    max_digits = check_max_digits(given["--max-digits"] or limits.DEFAULT_MAX_DIGITS)
    max_work = given["--max-work"]
    try:
        text = read_file_bytes(args[0], int(max_bytes))
    except ReadError as exc:
        if exc.reason != "corrupt":
            print(f"error: {exc}", file=sys.stderr)
            return 2
        v = Verdict(False, "format", str(exc))
    else:
        try:
            v = check_text_with(PureArithmetic(), text, max_digits=int(max_digits),
                                max_work=max_work)
        except MemoryError:
            print("error: the check ran out of memory (a limit of this checker should have "
                  "refused the certificate first: please report it)", file=sys.stderr)
            return 3
        except Exception as exc:  # a bug of this checker, never a verdict: one line, exit 3
            print(f"internal error: {type(exc).__name__}: {str(exc)[:200]} (please report it)",
                  file=sys.stderr)
            return 3
    claim = (v.facts or {}).get("claim") if v.ok else None  # an impossibility document (§9)
    line = (f"{claim + ' ' if claim else ''}VALID: " if v.ok else f"INVALID [{v.rule}]: ") \
        + v.message
    if not print_or_broken_pipe(line):
        return limits.EXIT_BROKEN_PIPE
    return 0 if v.ok else 1
