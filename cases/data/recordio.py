"""RecordIO: many small records packed into one file (+ `.idx`) vs one file per sample
(note 003, mxnet recordio).

The real format (dmlc-core `recordio.h`, used by mxnet's `MXRecordIO`), per record part:

    uint32 magic = 0xced7230a | uint32 lrec = cflag << 29 | length | payload | zero pad to 4 bytes

`cflag` is 0 for a whole record. A payload that itself contains the magic word at a 4-byte aligned
position is split there (cflag 1 = first part, 2 = middle, 3 = last; the magic is dropped and the
reader puts it back), so a reader that resynchronises on the magic never lands inside a payload.
The `.idx` file is text, one ``key<TAB>byte offset`` line per record.

The notes guess "an 8-byte length, payload aligned to 8 bytes". Their own offsets (0, 5768, 12520,
19304 for 5760-, 6742- and 6773-byte records) fit both 8- and 4-byte alignment; the two differ
for other lengths, and the 8 bytes before each payload are magic + length word, not a length
(`check_notes_layout_guess`).

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


def check_layout_and_notes_guess(device):
    """Byte offsets of the real format against the notes' guess (8-byte length, 8-byte alignment)."""
    with tempfile.TemporaryDirectory() as d:
        rec = Path(d) / "t.rec"
        lengths = [5760, 6742, 6773, 1, 2, 3, 4, 5, 9]
        with RecordWriter(rec) as w:
            offsets = [w.write(bytes([7]) * n) for n in lengths]
        raw = rec.read_bytes()
        with RecordReader(rec) as r:
            back = list(r)
    headers_ok = all(_HEAD.unpack_from(raw, off) == (MAGIC, n) for off, n in zip(offsets, lengths))
    real = [b - a for a, b in zip(offsets, offsets[1:] + [len(raw)])]
    guess = [8 + n + (-n) % 8 for n in lengths]  # the notes: 8-byte length, payload padded to 8
    layout_ok = (
        back == [bytes([7]) * n for n in lengths]
        and headers_ok
        and real == [8 + n + (-n) % 4 for n in lengths]
    )
    differ = [(n, r, g) for n, r, g in zip(lengths, real, guess) if r != g]
    return judge_layout(layout_ok, differ, offsets=offsets[:4])


NOTES_IDX_OFFSETS = [0, 5768, 12520, 19304]


def judge_layout(
    layout_ok: bool, differ: list[tuple[int, int, int]], *, offsets: list[int] | None = None
) -> Finding:
    """The technique: records round-trip through the real RecordIO layout (magic, a 3-bit flag and
    29-bit length word, payload padded to 4 bytes), reproducing the notes' .idx offsets (`offsets`:
    the first four the writer gave; None: not observed). The notes' guess of an 8-byte length with
    8-byte alignment is an erratum where it gives other sizes."""
    offsets_ok = offsets is None or offsets == NOTES_IDX_OFFSETS
    errata = ()
    if differ:
        errata = (
            Erratum(
                ErratumKind.WRONG_SHAPE_OR_FORMULA,
                "8-byte length, payload padded to 8 bytes",
                "the format is a 4-byte magic and a 4-byte (3-bit flag, 29-bit length) word, padded to 4: "
                + ", ".join(f"{n} B is {r} bytes on disk, not {g}" for n, r, g in differ[:4])
                + "; a record holds < 2**29 bytes, not 2**64",
            ),
        )
    return Finding(
        Verdict.HOLDS if layout_ok and offsets_ok else Verdict.FAILS,
        (
            "records round-trip in the real layout"
            if layout_ok
            else "records do NOT round-trip as 8 + pad4(length)"
        )
        + "; offsets of 5760-, 6742-, 6773-byte records: "
        + f"{offsets if offsets is not None else 'not observed'} "
        f"(the notes' .idx: {NOTES_IDX_OFFSETS})",
        errata,
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
    scalar = IRHeader(flag=0, label=3.5, id=12345678901, id2=0)
    s = pack(scalar, b"jpeg bytes")
    header_bytes = len(s) - 10
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
    return judge_irheader(header_bytes, scalar_ok, array_ok, file_ok, list(IRHeader._fields))


def judge_irheader(
    header_bytes: int, scalar_ok: bool, array_ok: bool, file_ok: bool, fields: list
) -> Finding:
    """The notes: IRHeader is the namedtuple (flag, label, id, id2), label a float or a float array,
    and pack/unpack put it before the bytes. Holds when the fields are the notes', the header packs
    to mxnet's 24 bytes ('IfQQ'), and a scalar label, an array label (flag = its length) and a
    header read back from a .rec file all round-trip."""
    held = (
        fields == ["flag", "label", "id", "id2"] and header_bytes == 24 and scalar_ok and array_ok and file_ok
    )
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        f"IRHeader{tuple(fields)} packs as flag:uint32 label:float32 id:uint64 id2:uint64 in "
        f"{header_bytes} bytes (mxnet: 24); round trip of a scalar label {scalar_ok}, of an array label "
        f"(flag = its length, float32 after the header) {array_ok}, through a .rec file {file_ok}",
    )


CASE = Case(
    id="data.recordio",
    tier=2,
    claim="Packing many small records into one RecordIO file (+ .idx for random access) reads faster "
    "than one file per sample; the notes guess an 8-byte length and 8-byte alignment.",
    source="003 mxnet / recordio",
    make_inputs=make_records,
    variants={
        "one_file_per_sample": naive(one_file_per_sample, peak_bytes=_host_bytes),
        "recordio_random": optimized(recordio_random, peak_bytes=_host_bytes, claim="indexed_random_read"),
        "recordio_sequential": optimized(
            recordio_sequential, peak_bytes=_host_bytes, claim="sequential_read"
        ),
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
        ),
        Claim(
            "sequential_read",
            "record = mx.recordio.MXRecordIO('tmp.rec', 'r'); item = record.read() [records in order]",
            "003",
            ClaimKind.CORRECTNESS,
        ),
        Claim(
            "indexed_random_read",
            "MXIndexedRecordIO: 这个类的主要作用是支持随机读写，"
            "因此还需要一个映射表用于指示每条数据的起始位置",
            "003",
            ClaimKind.CORRECTNESS,
        ),
        Claim(
            "idx_offsets",
            "data.idx: 1 0 / 2 5768 / 3 12520 / 4 19304 [records of 5760, 6742, 6773 bytes]",
            "003",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "irheader",
            "IRHeader = namedtuple('HEADER', ['flag', 'label', 'id', 'id2']); pack(header, s) -> s; "
            "unpack(s) -> header, s",
            "003",
            ClaimKind.BEHAVIOUR,
        ),
    ),
    checks={
        "layout_vs_notes_guess": Check(check_layout_and_notes_guess, devices=("cpu",), claim="idx_offsets"),
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
