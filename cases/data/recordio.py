"""RecordIO: many small records packed into one file (+ `.idx`) vs one file per sample
(note 003, mxnet recordio).

The real format (dmlc-core `recordio.h`, used by mxnet's `MXRecordIO`), per record part:

    uint32 magic = 0xced7230a | uint32 lrec = cflag << 29 | length | payload | zero pad to 4 bytes

`cflag` is 0 for a whole record. A payload that itself contains the magic word at a 4-byte aligned
position is split there (cflag 1 = first part, 2 = middle, 3 = last; the magic is dropped and the
reader puts it back), so a reader that resynchronises on the magic never lands inside a payload.
The `.idx` file is text, one ``key<TAB>byte offset`` line per record.

The notes say each record is 8 bytes, then its data padded to a multiple of 8. Their own offsets
(0, 5768, 12520, 19304 for 5760-, 6742- and 6773-byte records) fit both 8- and 4-byte alignment;
the two differ for other lengths (`check_alignment`). mxnet itself is not a dependency: the
suite's writer is held to the bytes mxnet 1.9.1 wrote (recorded), and the claims about mxnet's
classes are judged with mxnet only where it imports.

The timed question is the reason the format exists: reading N small records from one file with an
index (one open, N seeks) vs opening N files.
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
import weakref
from collections import namedtuple
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from cases.spec import (
    Case,
    Check,
    Claim,
    ClaimKind,
    Erratum,
    ErratumKind,
    Finding,
    Tol,
    Verdict,
    naive,
    optimized,
)
from harness.contract.rules import Faster
from notes import parse

MAGIC = 0xCED7230A
_MAGIC_BYTES = struct.pack("<I", MAGIC)
_LEN_MASK = (1 << 29) - 1
_HEAD = struct.Struct("<II")  # magic, lrec


class RecordIOError(ValueError):
    """A .rec/.idx file that does not follow the format; the message names the byte offset."""


def _encode_lrec(cflag: int, length: int) -> int:
    return (cflag << 29) | length


def _pad(length: int) -> int:
    return (-length) % 4


class RecordWriter:
    """Writes records (and, with `idx_path`, an index) in the dmlc RecordIO format."""

    def __init__(self, rec_path, idx_path=None):
        self._rec = open(rec_path, "wb")
        self._idx = open(idx_path, "w") if idx_path is not None else None

    def write(self, payload: bytes, key: int | None = None) -> int:
        """Append one record; returns its byte offset (what the `.idx` line records)."""
        if len(payload) >= 1 << 29:
            raise RecordIOError(f"record of {len(payload)} bytes: RecordIO holds records below 2**29 bytes")
        offset = self._rec.tell()
        if self._idx is not None:
            if key is None:
                raise ValueError("an indexed writer needs a key per record")
            self._idx.write(f"{key}\t{offset}\n")
        view = memoryview(payload)
        start = 0
        # Split at every 4-byte aligned occurrence of the magic inside the payload.
        i = payload.find(_MAGIC_BYTES)
        while i >= 0:
            if i % 4 == 0:
                self._rec.write(_HEAD.pack(MAGIC, _encode_lrec(1 if start == 0 else 2, i - start)))
                self._rec.write(view[start:i])
                start = i + 4
            i = payload.find(_MAGIC_BYTES, i + 1)
        self._rec.write(_HEAD.pack(MAGIC, _encode_lrec(3 if start else 0, len(payload) - start)))
        self._rec.write(view[start:])
        self._rec.write(b"\0" * _pad(len(payload)))
        return offset

    def close(self):
        self._rec.close()
        if self._idx is not None:
            self._idx.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class RecordReader:
    """Reads records back, validating every header: a corrupt or truncated file raises
    `RecordIOError` naming the offset, it never yields a garbage record."""

    def __init__(self, rec_path, idx_path=None):
        self.path = str(rec_path)
        self._f = open(rec_path, "rb")
        self._size = os.fstat(self._f.fileno()).st_size
        self.index: dict[int, int] = {}
        if idx_path is not None:
            self.index = read_index(idx_path, self._size)

    def _read_exact(self, n: int, what: str, at: int) -> bytes:
        data = self._f.read(n)
        if len(data) != n:
            raise RecordIOError(
                f"{self.path}: truncated {what} at byte offset {at}: need {n} bytes, file has {len(data)}"
            )
        return data

    def read(self) -> bytes | None:
        """The next record, or None at a clean end of file."""
        parts = []
        expect_more = False
        while True:
            at = self._f.tell()
            head = self._f.read(_HEAD.size)
            if not head and not expect_more:
                return None
            if len(head) != _HEAD.size:
                raise RecordIOError(
                    f"{self.path}: truncated record header at byte offset {at}: {len(head)} of 8 bytes"
                )
            magic, lrec = _HEAD.unpack(head)
            if magic != MAGIC:
                raise RecordIOError(
                    f"{self.path}: bad magic 0x{magic:08x} at byte offset {at} (expected 0x{MAGIC:08x})"
                )
            cflag, length = lrec >> 29, lrec & _LEN_MASK
            if cflag > 3 or (cflag in (0, 1)) == expect_more:
                raise RecordIOError(
                    f"{self.path}: continuation flag {cflag} at byte offset {at} does not follow "
                    f"{'a record start' if expect_more else 'a complete record'}"
                )
            if at + _HEAD.size + length + _pad(length) > self._size:
                raise RecordIOError(
                    f"{self.path}: record at byte offset {at} claims {length} bytes, past the end of the "
                    f"{self._size}-byte file (truncated or corrupt length)"
                )
            parts.append(self._read_exact(length, "payload", at + _HEAD.size))
            if cflag in (0, 3):
                self._f.seek(_pad(length), os.SEEK_CUR)
                return _MAGIC_BYTES.join(parts)
            expect_more = True  # parts 1 and 2 are 4-byte multiples: no padding between parts

    def __iter__(self):
        while (record := self.read()) is not None:
            yield record

    def read_idx(self, key: int) -> bytes:
        self._f.seek(self.index[key])
        record = self.read()
        if record is None:
            raise RecordIOError(
                f"{self.path}: index entry {key} points at the end of file ({self.index[key]})"
            )
        return record

    def close(self):
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_index(idx_path, rec_size: int) -> dict[int, int]:
    index = {}
    with open(idx_path) as f:
        for lineno, line in enumerate(f, 1):
            fields = line.split("\t")
            if len(fields) != 2:
                raise RecordIOError(f"{idx_path}:{lineno}: expected 'key<TAB>offset', got {line!r}")
            key, offset = int(fields[0]), int(fields[1])
            if not 0 <= offset < rec_size or offset % 4:
                raise RecordIOError(
                    f"{idx_path}:{lineno}: offset {offset} is not a 4-byte aligned offset in the file"
                )
            index[key] = offset
    return index


# ---- IRHeader: mxnet.recordio.pack / unpack ------------------------------------------------------

IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
_IR = struct.Struct("<IfQQ")  # mxnet's 'IfQQ' (native order; little-endian on every mxnet host): 24 bytes


def pack(header: IRHeader, s: bytes) -> bytes:
    """A scalar label goes in the header; an array label sets flag = its length, label = 0, and
    follows the header as float32."""
    label = np.asarray(header.label, dtype=np.float32)
    if label.ndim == 0:
        return _IR.pack(header.flag, float(label), header.id, header.id2) + s
    return _IR.pack(label.size, 0.0, header.id, header.id2) + label.tobytes() + s


def unpack(s: bytes) -> tuple[IRHeader, bytes]:
    if len(s) < _IR.size:
        raise RecordIOError(f"record of {len(s)} bytes is shorter than the {_IR.size}-byte IRHeader")
    header = IRHeader(*_IR.unpack_from(s))
    s = s[_IR.size :]
    if header.flag > 0:
        if len(s) < 4 * header.flag:
            raise RecordIOError(
                f"IRHeader announces {header.flag} float32 labels, record has {len(s)} bytes left"
            )
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag).copy())
        s = s[4 * header.flag :]
    return header, s


# ---- the timed comparison ------------------------------------------------------------------------


@dataclass(eq=False)
class RecordStore:
    """The same records on disk twice: `data.rec` + `data.idx`, and one file per record."""

    root: Path
    n: int
    order: list[int]  # the random read order, fixed by the seed

    @property
    def rec(self):
        return self.root / "data.rec"

    @property
    def idx(self):
        return self.root / "data.idx"

    def sample(self, key: int) -> Path:
        return self.root / "samples" / f"{key}.bin"


def _tempdir(owner) -> Path:
    root = Path(tempfile.mkdtemp(prefix="recordio-"))
    weakref.finalize(owner, shutil.rmtree, root, ignore_errors=True)
    return root


def make_records(size, dtype, device, seed):
    """`n` records of random bytes, lengths uniform in [bytes/2, 3·bytes/2) (never 4-aligned on
    purpose half the time, so the padding is exercised). Returns (store, lengths)."""
    rng = np.random.default_rng(seed)
    n, mean = size["n"], size["bytes"]
    lengths = rng.integers(mean // 2, mean + mean // 2, size=n)
    store = RecordStore(Path(), n, rng.permutation(n).tolist())
    store.root = _tempdir(store)
    (store.root / "samples").mkdir()
    with RecordWriter(store.rec, store.idx) as w:
        for key, length in enumerate(lengths):
            payload = rng.integers(0, 256, size=int(length), dtype=np.uint8).tobytes()
            w.write(payload, key)
            store.sample(key).write_bytes(payload)
    return store, torch.from_numpy(lengths)


def _in_key_order(records: dict[int, bytes], n: int) -> torch.Tensor:
    return torch.frombuffer(bytearray(b"".join(records[k] for k in range(n))), dtype=torch.uint8)


def _host_bytes(size, itemsize) -> int:
    """Host memory a variant's point holds at its peak: the payload (mean `bytes` per record) as
    the records' bytes, their join and the bytearray the tensor wraps, for the variant and again
    for the truth: 6 copies. The guard that skips a size that does not fit the host reads it."""
    return 6 * size["n"] * size["bytes"]


def one_file_per_sample(store, lengths):
    # N opens + N reads + N closes: three syscalls and a path lookup per record.
    records = {}
    for key in store.order:
        with open(store.sample(key), "rb") as f:
            records[key] = f.read()
    return _in_key_order(records, store.n)


def recordio_random(store, lengths):
    # One open; per record a seek and two reads (header, payload) of the same file.
    with RecordReader(store.rec, store.idx) as r:
        records = {key: r.read_idx(key) for key in store.order}
    return _in_key_order(records, store.n)


def recordio_sequential(store, lengths):
    with RecordReader(store.rec) as r:
        records = dict(enumerate(r))
    return _in_key_order(records, store.n)


def records_truth(store, lengths):
    """The truth: each sample file's bytes, written by a plain `write_bytes` (no RecordIO code),
    read in key order."""
    return _in_key_order({k: store.sample(k).read_bytes() for k in range(store.n)}, store.n)


# ---- checks --------------------------------------------------------------------------------------


# What mxnet 1.9.1 itself wrote (MXIndexedRecordIO.write_idx of records of these lengths, and
# recordio.pack of one header), recorded once from the real library: mxnet is not a dependency of
# the suite (its wheels need NumPy < 2), so the suite's writer is held to these bytes.
MXNET_LENGTHS = (5760, 6742, 6773, 1, 2, 3, 4, 5, 9)
MXNET_OFFSETS = (0, 5768, 12520, 19304, 19316, 19328, 19340, 19352, 19368)
MXNET_FILE_BYTES = 19388
MXNET_FIRST_HEAD = bytes.fromhex("0a23d7ce80160000")  # the 8 bytes before the 5760-byte record
MXNET_PACKED = bytes.fromhex("0000000000006040351cdcdf020000000000000000000000") + b"jpeg bytes"
MXNET_PACKED_HEADER = (0, 3.5, 12345678901, 0)  # IRHeader(flag, label, id, id2) that MXNET_PACKED holds


def _mxnet():
    """mxnet's recordio module where it imports, else None (the notes' own objects)."""
    try:
        import mxnet  # noqa: PLC0415  (optional: never a dependency)
    except Exception:  # an absent package, or an install broken by NumPy 2: either way not here
        return None
    return mxnet.recordio


def _written(lengths):
    """The suite's writer on records of `lengths`: (offsets, file size, records read back intact,
    the file's bytes)."""
    with tempfile.TemporaryDirectory() as d:
        rec = Path(d) / "t.rec"
        with RecordWriter(rec) as w:
            offsets = [w.write(bytes([7]) * n) for n in lengths]
        raw = rec.read_bytes()
        with RecordReader(rec) as r:
            back = list(r)
    headers_ok = all(_HEAD.unpack_from(raw, off) == (MAGIC, n) for off, n in zip(offsets, lengths))
    return offsets, len(raw), back == [bytes([7]) * n for n in lengths] and headers_ok, raw


def _held_to_mxnet(offsets, size, raw=None):
    # The suite's writer stands for mxnet's here: where it leaves mxnet's recorded layout, the
    # suite is broken (a red check), not the notes.
    assert (tuple(offsets), size) == (MXNET_OFFSETS, MXNET_FILE_BYTES), (
        f"the suite's writer gave offsets {offsets} ({size} B), "
        f"mxnet 1.9.1 {MXNET_OFFSETS} ({MXNET_FILE_BYTES} B)"
    )
    assert raw is None or raw[:8] == MXNET_FIRST_HEAD, (
        f"first header {raw[:8].hex()}, mxnet {MXNET_FIRST_HEAD.hex()}"
    )


def check_idx_offsets(device):
    """The notes' data.idx (offsets 0, 5768, 12520, 19304 of records of 5760, 6742, 6773 bytes)
    against the offsets the format gives those records."""
    offsets, size, intact, raw = _written(MXNET_LENGTHS)
    _held_to_mxnet(offsets, size, raw)
    return judge_layout(intact, offsets=offsets[:4])


NOTES_IDX_OFFSETS = [0, 5768, 12520, 19304]


def judge_layout(layout_ok: bool, *, offsets: list[int] | None = None) -> Finding:
    """The notes' .idx offsets against the offsets the format gives their three records (`offsets`:
    the first four; the writer is held to mxnet 1.9.1's recorded layout), the records read back
    intact (`layout_ok`)."""
    offsets_ok = offsets == NOTES_IDX_OFFSETS
    return Finding(
        Verdict.HOLDS if layout_ok and offsets_ok else Verdict.FAILS,
        ("records round-trip in the real layout" if layout_ok else "records do NOT round-trip")
        + "; offsets of 5760-, 6742-, 6773-byte records (as mxnet 1.9.1 writes them): "
        + f"{offsets if offsets is not None else 'not observed'} (the notes' .idx: {NOTES_IDX_OFFSETS})",
    )


def check_alignment(device):
    """The notes: each record is 8 bytes, then its data, padded to a multiple of 8. On-disk sizes of
    records of several lengths (offset to offset), and what the 8 bytes before each payload hold."""
    offsets, size, intact, raw = _written(MXNET_LENGTHS)
    _held_to_mxnet(offsets, size, raw)
    on_disk = [b - a for a, b in zip(offsets, [*offsets[1:], size])]
    rows = [(n, d, 8 + n + (-n) % 8) for n, d in zip(MXNET_LENGTHS, on_disk)]
    return judge_alignment(rows, intact)


def judge_alignment(rows: list[tuple[int, int, int]], head_is_magic_and_length: bool) -> Finding:
    """rows: (payload bytes, bytes on disk, the notes' 8 + payload padded to 8). Holds where every
    record takes what the notes say; fails where any does not (the format pads to 4)."""
    differ = [(n, d, g) for n, d, g in rows if d != g]
    return Finding(
        Verdict.FAILS if differ or not rows else Verdict.HOLDS,
        "bytes on disk per record (mxnet 1.9.1's layout) against the notes' 8 + data padded to a multiple of "
        "8: "
        + (
            ", ".join(f"{n} B takes {d}, not {g}" for n, d, g in differ[:4])
            + f" ({len(differ)} of {len(rows)} lengths differ): the data is padded to a multiple of 4; the "
            "notes' three records (5760, 6742, 6773 B) come out the same either way"
            if differ
            else f"all {len(rows)} lengths as the notes say"
        )
        + "; the 8 bytes before each payload: "
        + (
            "the magic 0xced7230a and a (3-bit flag, 29-bit length) word, as the notes' 8byte has it"
            if head_is_magic_and_length
            else "NOT magic + length"
        ),
    )


def check_length_field(device):
    """003's guess: each record is its byte count in 8 bytes, then its data. The 8 bytes before each
    record read as that count (a little-endian uint64), against the record's length."""
    offsets, size, _, raw = _written(MXNET_LENGTHS)
    _held_to_mxnet(offsets, size, raw)
    rows = [
        (n, struct.unpack_from("<Q", raw, off)[0], *_HEAD.unpack_from(raw, off))
        for off, n in zip(offsets, MXNET_LENGTHS)
    ]
    return judge_length_field(rows)


def judge_length_field(rows: list[tuple[int, int, int, int]]) -> Finding:
    """rows: (record bytes, the 8 bytes before it as a uint64, their first 4 as a uint32, their last
    4). Holds where the uint64 is the record's length, as the notes guess; fails where it is not."""
    off = [(n, u64, magic, word) for n, u64, magic, word in rows if u64 != n]
    if not rows or off:
        n, u64, magic, word = (off or [(0, 0, 0, 0)])[0]
        return Finding(
            Verdict.FAILS,
            f"the 8 bytes before a {n}-byte record read as a byte count give {u64:,} "
            f"({len(off)} of {len(rows)} records): they are the magic 0x{magic:08x} and a 4-byte word "
            f"holding a 3-bit continuation flag ({word >> 29}) and the 29-bit length ({word & _LEN_MASK}); "
            "a record holds < 2**29 bytes",
        )
    return Finding(Verdict.HOLDS, f"the 8 bytes before each of {len(rows)} records are its byte count")


# 003's MXRecordIO snippet as written (its first code block under "mx.recordio.MXRecordIO"), read
# from the note.
NOTES_MXRECORDIO = parse.snippet("003#15").source  # its printed output is in comments: inert


def check_notes_mxrecordio_snippet(device):
    """003's MXRecordIO snippet run as written where mxnet imports (the snippet check cannot run it:
    mxnet is not a dependency): it writes str records."""
    mx = _mxnet()
    if mx is None:
        return judge_notes_mxrecordio_snippet(None)
    import contextlib
    import io as _io

    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(_io.StringIO()):
        os.chdir(d)
        try:
            exec(NOTES_MXRECORDIO, {"mx": __import__("mxnet")})  # noqa: S102  (the notes' own code)
            raised = ""
        except Exception as exc:  # whatever the notes' code raises is the observation
            raised = f"{type(exc).__name__}: {exc}"
        finally:
            os.chdir(cwd)
    return judge_notes_mxrecordio_snippet(raised)


def judge_notes_mxrecordio_snippet(raised: str | None) -> Finding:
    """`raised`: what the notes' snippet raised under mxnet (empty: it ran; None: mxnet not
    importable, not run). A snippet that raises as pasted is an erratum (no verdict)."""
    if raised is None:
        return Finding(None, "003's MXRecordIO snippet not run: mxnet is not importable here")
    if not raised:
        return Finding(None, "003's MXRecordIO snippet ran as written under mxnet")
    return Finding(
        None,
        f"003's MXRecordIO snippet raised {raised[:120]}",
        (
            Erratum(
                ErratumKind.RAISES,
                "record.write('record_%d'%i)",
                f"under Python 3, mxnet's MXRecordIO.write takes bytes: the str record raises "
                f"{raised[:120]}; write(b'record_%d' % i) works, and write_idx(i, 'record_%d'%i) below "
                "fails alike",
                file="003",
            ),
        ),
    )


def _records(n):
    rng = np.random.default_rng(2)
    return [rng.integers(0, 256, size=int(k), dtype=np.uint8).tobytes() for k in rng.integers(1, 300, size=n)]


def check_sequential_read(device):
    """003: MXRecordIO(..., 'r').read() returns the records in the order written. With mxnet where
    it imports; the suite's reader of the same format otherwise (named, not the notes' object)."""
    records, mx = _records(7), _mxnet()
    with tempfile.TemporaryDirectory() as d:
        rec = str(Path(d) / "tmp.rec")
        mx_ok = None
        if mx is not None:
            w = mx.MXRecordIO(rec, "w")
            for r in records:
                w.write(r)
            w.close()
            reader = mx.MXRecordIO(rec, "r")
            mx_ok = [reader.read() for _ in records] == records and reader.read() is None
            reader.close()
        with RecordWriter(rec) as w:
            for r in records:
                w.write(r)
        with RecordReader(rec) as r:
            stand_in_ok = list(r) == records
    return judge_notes_reader("MXRecordIO.read() in order", mx_ok, stand_in_ok)


def check_indexed_read(device):
    """003: MXIndexedRecordIO reads any record by its index (read_idx), through the .idx map."""
    records, mx = _records(7), _mxnet()
    order = [3, 0, 6, 2, 5, 1, 4]
    with tempfile.TemporaryDirectory() as d:
        rec, idx = str(Path(d) / "tmp.rec"), str(Path(d) / "tmp.idx")
        mx_ok = None
        if mx is not None:
            w = mx.MXIndexedRecordIO(idx, rec, "w")
            for k, r in enumerate(records):
                w.write_idx(k, r)
            w.close()
            reader = mx.MXIndexedRecordIO(idx, rec, "r")
            mx_ok = [reader.read_idx(k) for k in order] == [records[k] for k in order]
            reader.close()
        with RecordWriter(rec, idx) as w:
            for k, r in enumerate(records):
                w.write(r, k)
        with RecordReader(rec, idx) as r:
            stand_in_ok = [r.read_idx(k) for k in order] == [records[k] for k in order]
    return judge_notes_reader("MXIndexedRecordIO.read_idx(k) by index", mx_ok, stand_in_ok)


def judge_notes_reader(what: str, mxnet_ok: bool | None, stand_in_ok: bool) -> Finding:
    """The notes' mxnet reader: holds or fails on what mxnet returned (`mxnet_ok`); None: mxnet is
    not importable, so the notes' object was not run: not measured, naming the stand-in and what
    it did (the suite's reader of the same format, its layout held to mxnet 1.9.1's bytes)."""
    stand_in = f"the suite's RecordReader (a stand-in) {'returns' if stand_in_ok else 'does NOT return'} them"
    if mxnet_ok is None:
        return Finding(
            Verdict.NOT_MEASURED, f"{what}: not measured, mxnet is not importable here; {stand_in}"
        )
    return Finding(
        Verdict.HOLDS if mxnet_ok else Verdict.FAILS,
        f"{what}: mxnet {'returns' if mxnet_ok else 'does NOT return'} the records written; " + stand_in,
    )


def check_embedded_magic(device):
    """A payload holding the magic at aligned positions is split into continuation parts and read
    back whole; at an unaligned position it is left alone."""
    payload = b"ab" + _MAGIC_BYTES + b"cd" + _MAGIC_BYTES + b"\1\2\3\4" + _MAGIC_BYTES + _MAGIC_BYTES + b"xyz"
    aligned = [i for i in range(0, len(payload) - 3, 4) if payload[i : i + 4] == _MAGIC_BYTES]
    assert aligned == [8, 16, 20], aligned
    with tempfile.TemporaryDirectory() as d:
        rec = Path(d) / "t.rec"
        with RecordWriter(rec) as w:
            w.write(payload)
            w.write(b"after")
        raw = rec.read_bytes()
        with RecordReader(rec) as r:
            back = list(r)
    flags, magics_ok = [], True
    at = 0
    while at < len(raw):
        magic, lrec = _HEAD.unpack_from(raw, at)
        magics_ok &= magic == MAGIC
        if magic != MAGIC:
            break
        flags.append(lrec >> 29)
        at += 8 + (lrec & _LEN_MASK) + _pad(lrec & _LEN_MASK)
    return judge_embedded_magic(back == [payload, b"after"], magics_ok, flags, aligned)


def judge_embedded_magic(intact: bool, magics_ok: bool, flags: list[int], aligned: list[int]) -> Finding:
    """Context (the catalogue's, not the notes'): a payload with the magic at 3 aligned offsets is
    stored as parts flagged 1, 2, 2, 3 (then the next record's 0), every part headed by the magic,
    and read back intact."""
    held = intact and magics_ok and flags == [1, 2, 2, 3, 0]
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        f"payload with the magic at aligned offsets {aligned} stored as parts with flags {flags[:-1]} "
        f"(then {flags[-1:]}), every part headed by the magic: {magics_ok}; read back "
        + ("intact" if intact else "CHANGED"),
    )


def _expect_error(path, idx=None, key=None, *, match: str):
    """(what happened, whether it was a RecordIOError naming `match`)."""
    try:
        with RecordReader(path, idx) as r:
            got = r.read_idx(key) if key is not None else list(r)
    except RecordIOError as e:
        return str(e), match in str(e)
    return f"read without error, returned {got!r:.80}", False


def check_corruption_is_reported(device):
    rng = np.random.default_rng(1)
    records = [rng.integers(0, 256, size=n, dtype=np.uint8).tobytes() for n in (37, 100, 5, 64)]
    messages = []
    with tempfile.TemporaryDirectory() as d:
        rec, idx = Path(d) / "t.rec", Path(d) / "t.idx"
        with RecordWriter(rec, idx) as w:
            offsets = [w.write(r, k) for k, r in enumerate(records)]
        good = rec.read_bytes()
        with RecordReader(rec, idx) as r:
            intact = [r.read_idx(k) for k in (3, 0, 2, 1)] == [records[k] for k in (3, 0, 2, 1)]

        bad = bytearray(good)
        bad[offsets[2]] ^= 0xFF
        rec.write_bytes(bad)
        messages.append(
            _expect_error(rec, match=f"bad magic 0x{MAGIC ^ 0xFF:08x} at byte offset {offsets[2]}")
        )

        bad = bytearray(good)  # length word claims more than the file holds
        struct.pack_into("<I", bad, offsets[3] + 4, 1000)
        rec.write_bytes(bad)
        messages.append(_expect_error(rec, match=f"at byte offset {offsets[3]} claims 1000 bytes"))

        rec.write_bytes(good[: offsets[3] + 8 + 10])  # cut inside the last payload
        messages.append(_expect_error(rec, match=f"at byte offset {offsets[3]} claims 64 bytes"))
        rec.write_bytes(good[: offsets[1] + 6])  # cut inside a header
        messages.append(_expect_error(rec, match=f"truncated record header at byte offset {offsets[1]}"))

        bad = bytearray(good)  # a middle part where a record should start
        struct.pack_into("<I", bad, offsets[1] + 4, _encode_lrec(2, 100))
        rec.write_bytes(bad)
        messages.append(_expect_error(rec, match=f"continuation flag 2 at byte offset {offsets[1]}"))

        rec.write_bytes(good)  # index pointing into the middle of a payload
        idx.write_text(f"0\t{offsets[0]}\n1\t{offsets[1] + 8}\n")
        messages.append(_expect_error(rec, idx, key=1, match=f"at byte offset {offsets[1] + 8}"))
    return judge_corruption(intact, messages)


def judge_corruption(intact: bool, outcomes: list[tuple[str, bool]]) -> Finding:
    """Context (the catalogue's reader): the intact file reads back by index, and each of the six
    corruptions raises a RecordIOError naming its offset (`outcomes`: message, named as expected)."""
    missed = [m for m, ok in outcomes if not ok]
    held = intact and bool(outcomes) and not missed
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        f"intact file read by index: {intact}; "
        + (
            "every corruption raised RecordIOError naming its offset: "
            + " | ".join(m.split(": ", 1)[-1] for m, _ in outcomes)
            if not missed
            else f"{len(missed)} of {len(outcomes)} corruptions NOT reported as expected: {missed}"
        ),
    )


def check_irheader_round_trip(device):
    """003: IRHeader is namedtuple('HEADER', ['flag', 'label', 'id', 'id2']); pack(header, s) -> s and
    unpack(s) -> header, s. mxnet's own where it imports; else the suite's pack/unpack (a stand-in),
    held to the bytes mxnet 1.9.1's pack wrote."""
    mx = _mxnet()
    mx_ok = None
    if mx is not None:
        h = mx.IRHeader(*MXNET_PACKED_HEADER)
        got_h, got_s = mx.unpack(mx.pack(h, b"jpeg bytes"))
        mx_ok = (
            list(mx.IRHeader._fields) == ["flag", "label", "id", "id2"]
            and type(h).__name__ == "HEADER"
            and tuple(got_h) == MXNET_PACKED_HEADER
            and got_s == b"jpeg bytes"
        )
    scalar = IRHeader(*MXNET_PACKED_HEADER)
    s = pack(scalar, b"jpeg bytes")
    as_mxnet = s == MXNET_PACKED
    scalar_ok = unpack(s) == (scalar, b"jpeg bytes")
    labels = np.array([1.0, -2.5, 7.25], dtype=np.float32)
    h, rest = unpack(pack(IRHeader(flag=0, label=labels, id=7, id2=9), b"payload"))
    array_ok = (
        h.flag == 3 and np.array_equal(h.label, labels) and (h.id, h.id2) == (7, 9) and rest == b"payload"
    )
    with tempfile.TemporaryDirectory() as d:  # through a .rec file as well
        rec = Path(d) / "t.rec"
        with RecordWriter(rec) as w:
            w.write(pack(scalar, b"x" * 13))
        with RecordReader(rec) as r:
            file_ok = unpack(r.read()) == (scalar, b"x" * 13)
    stand_in = judge_irheader(len(s) - 10, scalar_ok and as_mxnet, array_ok, file_ok, list(IRHeader._fields))
    return judge_notes_irheader(mx_ok, stand_in)


def judge_irheader(
    header_bytes: int, scalar_ok: bool, array_ok: bool, file_ok: bool, fields: list
) -> Finding:
    """The suite's IRHeader/pack/unpack (the stand-in for mxnet's): the notes' fields, mxnet's 24-byte
    header ('IfQQ'; `scalar_ok` includes equality with mxnet's recorded bytes), and a scalar label,
    an array label (flag = its length) and a header read back from a .rec file round-trip."""
    held = (
        fields == ["flag", "label", "id", "id2"] and header_bytes == 24 and scalar_ok and array_ok and file_ok
    )
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        f"IRHeader{tuple(fields)} packs as flag:uint32 label:float32 id:uint64 id2:uint64 in "
        f"{header_bytes} bytes (mxnet: 24); a scalar label as mxnet 1.9.1 packs it and back {scalar_ok}, "
        f"an array label (flag = its length, float32 after the header) {array_ok}, through a .rec file "
        f"{file_ok}",
    )


def judge_notes_irheader(mxnet_ok: bool | None, stand_in: Finding) -> Finding:
    """mxnet's own IRHeader/pack/unpack decide (`mxnet_ok`); None: mxnet not importable, not measured,
    the stand-in's finding named."""
    if mxnet_ok is None:
        return Finding(
            Verdict.NOT_MEASURED,
            "mxnet is not importable here, the notes' pack/unpack not run; the suite's stand-in: "
            + stand_in.evidence,
        )
    return Finding(
        Verdict.HOLDS if mxnet_ok else Verdict.FAILS,
        "mxnet's IRHeader fields, name and pack/unpack round trip: "
        + ("as the notes say" if mxnet_ok else "NOT as the notes say")
        + "; the suite's stand-in: "
        + stand_in.evidence,
    )


CASE = Case(
    id="data.recordio",
    tier=2,
    claim="Packing many small records into one RecordIO file (+ .idx for random access) reads faster "
    "than one file per sample; records are an 8-byte count + data padded to a multiple of 8 (003).",
    source="003 mxnet / recordio",
    make_inputs=make_records,
    variants={
        "one_file_per_sample": naive(one_file_per_sample, peak_bytes=_host_bytes),
        # The suite's reader of the format, not mxnet's: context for the read claims (decided by
        # mxnet where it imports), and the packed side of the timed pair.
        "recordio_random": optimized(recordio_random, peak_bytes=_host_bytes),
        "recordio_sequential": optimized(recordio_sequential, peak_bytes=_host_bytes),
    },
    oracle=records_truth,
    tolerance={torch.float32: Tol(rtol=0.0, atol=0.0)},  # bytes: exact
    sizes={
        "quick": [{"n": 256, "bytes": 2048}, {"n": 1024, "bytes": 2048}],
        "full": [{"n": n, "bytes": 4096} for n in (10_000, 50_000, 200_000)],
    },
    claims=(
        Claim(
            "faster",
            "mxnet 中推荐使用如下数据格式进行文件 IO，典型应用场景是原始数据为十万张图片以及相应的标签，"
            "mxnet 提供了相应的工具将所有的图片与标签压缩到一个后缀名为 `.rec` 的文件中",
            "003",
            ClaimKind.SPEED,
            reading="reading records by index from one .rec file (+ .idx) is faster than one file per sample",
            stand_in="the suite's Python reader of the RecordIO format, not mxnet's",
        ),
        Claim(
            "sequential_read",
            "record = mx.recordio.MXRecordIO('tmp.rec', 'r') … item = record.read()",
            "003",
            ClaimKind.CORRECTNESS,
            reading="MXRecordIO(..., 'r').read() returns the records in the order they were written",
        ),
        Claim(
            "indexed_random_read",
            "这个类的主要作用是支持随机读写，因此还需要一个映射表用于指示每条数据的起始位置",
            "003",
            ClaimKind.CORRECTNESS,
            reading="MXIndexedRecordIO reads any record by its index through the .idx offsets",
        ),
        Claim(
            "idx_offsets",
            "其中 `data.idx` 为一个文本文件，其内容大致为（分割符为制表符）： … 1 0 2 5768 3 12520 4 19304 … "
            "print(len(x)) # 依次为5760, 6742, 6773",
            "003",
            ClaimKind.BEHAVIOUR,
            reading="records of 5760, 6742 and 6773 bytes start at byte offsets 0, 5768, 12520 and the "
            "next at 19304, as the .idx lists them",
        ),
        Claim(
            "length_field",
            "`.rec` 文件的实际存储为二进制形式，（猜测）实际存储格式为： … "
            "<第一条数据的byte数><第一条数据的实际内容> … "
            "其中字节数目占用 8 个字节的空间，而每条数据的实际内容所占的字节数不定长。",
            "003",
            ClaimKind.BEHAVIOUR,
            reading="(the notes' guess) each record is stored as its byte count in 8 bytes, then its data",
        ),
        Claim(
            "alignment",
            "注意实际存储时，每行的实际数据的字节数会对齐到 8 的倍数，因此实际存储时的存储如下 … "
            "8byte 5760byte 8byte 6742byte 2byte(padding) 8byte 6773byte 3byte(padding)",
            "003",
            ClaimKind.BEHAVIOUR,
            reading="each record is stored as 8 bytes, then its data padded to a multiple of 8 bytes",
        ),
        Claim(
            "irheader",
            "pack(header, s) -> s unpack(s) -> header, s … "
            "IRHeader = namedtuple('HEADER', ['flag', 'label', 'id', 'id2'])",
            "003",
            ClaimKind.BEHAVIOUR,
            reading="mxnet's IRHeader is that namedtuple, and pack/unpack put it before the bytes and take "
            "it back",
        ),
    ),
    checks={
        "idx_offsets": Check(check_idx_offsets, devices=("cpu",), claim="idx_offsets"),
        "alignment": Check(check_alignment, devices=("cpu",), claim="alignment"),
        "length_field": Check(check_length_field, devices=("cpu",), claim="length_field"),
        "sequential_read": Check(check_sequential_read, devices=("cpu",), claim="sequential_read"),
        "indexed_read": Check(check_indexed_read, devices=("cpu",), claim="indexed_random_read"),
        # The notes' MXRecordIO snippet under mxnet, where it imports: errata only.
        "notes_mxrecordio_snippet": Check(check_notes_mxrecordio_snippet, devices=("cpu",)),
        # The real format's continuation parts and a reader that reports corruption: the catalogue's.
        "embedded_magic": Check(check_embedded_magic, devices=("cpu",)),
        "corruption_is_reported": Check(check_corruption_is_reported, devices=("cpu",)),
        "irheader_round_trip": Check(check_irheader_round_trip, devices=("cpu",), claim="irheader"),
    },
    dtypes={"cpu": (torch.float32,)},
    # The notes recommend the packed format for file IO (10⁵ images in one .rec): read by index, in
    # the shuffled order of an epoch, against one file per sample.
    verdict=Faster("recordio_random", "one_file_per_sample", claim="faster"),
    uncompilable={
        "one_file_per_sample": "file opens and reads: I/O, not a tensor program torch.compile could fuse"
    },
    metrics=lambda name, inputs, device: {"records": inputs[0].n, "payload_bytes": int(inputs[1].sum())},
    bytes_moved=lambda s, b: s["n"] * s["bytes"],
)
