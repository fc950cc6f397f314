"""PyTorch checkpoint parity: what ``torch.save`` writes and ``torch.load(weights_only=True)``
accepts, ``pg.load`` reads (or refuses with ``LoadError``), and what ``pg.save`` writes torch reads.

The ``data.pkl`` fixtures below are the exact bytes torch 2.13's ``torch.save`` wrote (checked
against torch by ``test_fixtures_are_what_torch_writes`` where torch is installed); the archives
around them are built here, so the tests need no torch.
"""
from __future__ import annotations

import io
import struct
import zipfile

import numpy as np
import pytest

import portagrad as pg
from portagrad.serialization import LoadError, WeightsOnlyError

# torch.save(torch.tensor([1+2j, -3j], requires_grad=True))
CGRAD = (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\nq\x00((X\x07\x00\x00\x00storageq\x01ctorch"
         b"\nComplexFloatStorage\nq\x02X\x01\x00\x00\x000q\x03X\x03\x00\x00\x00cpuq\x04K\x02tq"
         b"\x05QK\x00K\x02\x85q\x06K\x01\x85q\x07\x88ccollections\nOrderedDict\nq\x08)Rq\ttq\nRq"
         b"\x0b.")
# torch.save(torch.tensor([1, 65535], dtype=torch.uint16)): an UntypedStorage of 4 bytes
U16 = (b"\x80\x02ctorch._utils\n_rebuild_tensor_v3\nq\x00((X\x07\x00\x00\x00storageq\x01ctorch."
       b"storage\nUntypedStorage\nq\x02X\x01\x00\x00\x000q\x03X\x03\x00\x00\x00cpuq\x04K\x04tq"
       b"\x05QK\x00K\x02\x85q\x06K\x01\x85q\x07\x89ccollections\nOrderedDict\nq\x08)Rq\tctorch\n"
       b"uint16\nq\ntq\x0bRq\x0c.")
# torch.save of VALUES_TORCH (in make_values) below
VALUES = (b"\x80\x02}q\x00(X\x05\x00\x00\x00bytesq\x01c_codecs\nencode\nq\x02X\x05\x00\x00\x00\x00"
          b"\xc3\xbfabq\x03X\x06\x00\x00\x00latin1q\x04\x86q\x05Rq\x06X\t\x00\x00\x00bytearrayq"
          b"\x07c__builtin__\nbytearray\nq\x08h\x02X\x02\x00\x00\x00xyq\th\x04\x86q\nRq\x0b\x85q"
          b"\x0cRq\rX\x06\x00\x00\x00uint16q\x0ectorch\nuint16\nq\x0fX\x06\x00\x00\x00float8q\x10"
          b"ctorch\nfloat8_e4m3fn\nq\x11X\x05\x00\x00\x00chalfq\x12ctorch\ncomplex32\nq\x13X\x07"
          b"\x00\x00\x00stridedq\x14ctorch.serialization\n_get_layout\nq\x15X\r\x00\x00\x00torch."
          b"stridedq\x16\x85q\x17Rq\x18X\x06\x00\x00\x00deviceq\x19ctorch\ndevice\nq\x1aX\x04\x00"
          b"\x00\x00cudaq\x1bK\x01\x86q\x1cRq\x1dX\x04\x00\x00\x00sizeq\x1ectorch\nSize\nq\x1fK"
          b"\x02K\x03\x86q \x85q!Rq\"u.")


def make_values(m):
    """The object behind ``VALUES``, built from module ``m`` (torch, or portagrad)."""
    return {"bytes": b"\x00\xffab", "bytearray": bytearray(b"xy"), "uint16": m.uint16,
            "float8": m.float8_e4m3fn, "chalf": m.complex32, "strided": m.strided,
            "device": m.device("cuda", 1), "size": m.Size([2, 3])}


def _archive(records: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        for name, data in records.items():
            zf.writestr(name, data)
    return out.getvalue()


def _torch_data_pickle(obj) -> bytes:
    torch = pytest.importorskip("torch")
    buf = io.BytesIO()
    torch.save(obj, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        return zf.read(next(n for n in zf.namelist() if n.endswith("/data.pkl")))


def test_fixtures_are_what_torch_writes():
    torch = pytest.importorskip("torch")
    assert _torch_data_pickle(torch.tensor([1 + 2j, -3j], requires_grad=True)) == CGRAD
    assert _torch_data_pickle(torch.tensor([1, 65535], dtype=torch.uint16)) == U16
    assert _torch_data_pickle(make_values(torch)) == VALUES


# ------------------------------------------------------------- 1. complex tensors requiring grad
def test_complex_tensor_keeps_requires_grad():
    data = np.array([1 + 2j, -3j], np.complex64).tobytes()
    t = pg.load(io.BytesIO(_archive({"a/data.pkl": CGRAD, "a/data/0": data})))
    assert t.dtype is pg.complex64 and t.requires_grad and t.is_leaf
    assert t.detach().tolist() == [1 + 2j, -3j]


def test_complex_requires_grad_round_trips_in_pytorch_format():
    buf = io.BytesIO()
    pg.save(pg.tensor([1 + 2j], requires_grad=True), buf, format="pytorch")
    assert pg.load(io.BytesIO(buf.getvalue())).requires_grad


# ------------------------------------------------ 2. dtypes torch writes through UntypedStorage
@pytest.mark.parametrize("name", ["uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2",
                                  "float8_e4m3fnuz", "float8_e5m2fnuz", "complex32"])
def test_untyped_storage_of_a_dtype_without_tensors_names_it(name):
    # portagrad names these dtypes but has no tensors of them: a LoadError saying so, not a
    # refusal of the UntypedStorage global
    pkl = U16.replace(b"ctorch\nuint16\n", f"ctorch\n{name}\n".encode())
    with pytest.raises(LoadError, match=f"dtype torch.{name}; portagrad names that dtype but "
                                        f"has no {name} tensors"):
        pg.load(io.BytesIO(_archive({"a/data.pkl": pkl, "a/data/0": b"\0" * 4})))


def test_untyped_storage_viewed_as_a_dtype_portagrad_has():
    # _rebuild_tensor_v3 over an UntypedStorage (numel counts bytes), as torch writes for its
    # newer dtypes, read here with float32 (which torch.load reads the same way)
    pkl = U16.replace(b"ctorch\nuint16\n", b"ctorch\nfloat32\n").replace(b"K\x04t", b"K\x08t")
    records = {"a/data.pkl": pkl, "a/data/0": np.array([1.5, -2.0], np.float32).tobytes()}
    t = pg.load(io.BytesIO(_archive(records)))
    assert t.dtype is pg.float32 and t.tolist() == [1.5, -2.0]
    with pytest.raises(LoadError, match="reaches past its storage"):
        bad = {"a/data.pkl": pkl.replace(b"K\x08t", b"K\x04t"), "a/data/0": b"\0" * 4}
        pg.load(io.BytesIO(_archive(bad)))


def test_untyped_storage_view_matches_torch():
    torch = pytest.importorskip("torch")
    pkl = U16.replace(b"ctorch\nuint16\n", b"ctorch\nfloat32\n").replace(b"K\x04t", b"K\x08t")
    data = _archive({"a/data.pkl": pkl, "a/data/0": np.array([1.5, -2.0], np.float32).tobytes(),
                     "a/version": b"3\n", "a/byteorder": b"little"})  # torch requires them
    assert torch.load(io.BytesIO(data), weights_only=True).tolist() == \
        pg.load(io.BytesIO(data)).tolist()


# --------------------------------------------------- 3. plain values weights_only=True accepts
def test_weights_only_values_torch_allows():
    got = pg.load(io.BytesIO(_archive({"a/data.pkl": VALUES})))
    assert got == make_values(pg)
    assert got["uint16"] is pg.uint16 and got["strided"] is pg.strided
    assert type(got["bytearray"]) is bytearray and isinstance(got["size"], pg.Size)
    assert pg.serialization.get_unsafe_globals_in_checkpoint(
        io.BytesIO(_archive({"a/data.pkl": VALUES}))) == []


@pytest.mark.parametrize("fmt", ["portagrad", "pytorch"])
def test_weights_only_values_round_trip(fmt):
    buf = io.BytesIO()
    pg.save(make_values(pg), buf, format=fmt)
    assert pg.load(io.BytesIO(buf.getvalue())) == make_values(pg)


def test_dtype_without_tensors_round_trips_in_native_format():
    # the tree form names only dtypes of tensors; such a value takes the pickle form
    buf = io.BytesIO()
    pg.save({"d": pg.uint16, "c": pg.complex32, "f": pg.float32}, buf)
    assert pg.load(io.BytesIO(buf.getvalue())) == {"d": pg.uint16, "c": pg.complex32,
                                                   "f": pg.float32}


def test_torch_reads_the_values_we_write():
    torch = pytest.importorskip("torch")
    buf = io.BytesIO()
    pg.save(make_values(pg), buf, format="pytorch")
    assert torch.load(io.BytesIO(buf.getvalue()), weights_only=True) == make_values(torch)


def test_codecs_encode_only_in_the_form_pickle_writes_bytes():
    # another codec (rot13 here) or a bytes argument is refused before any codec runs
    for args in (b"X\x01\x00\x00\x00xX\x05\x00\x00\x00rot13", b"C\x01xX\x06\x00\x00\x00latin1"):
        evil = b"\x80\x02c_codecs\nencode\n" + args + b"\x86R."
        with pytest.raises(WeightsOnlyError, match="allowed only as encode"):
            pg.load(io.BytesIO(_archive({"a/data.pkl": evil})))


def test_unknown_layout_is_a_load_error():
    pkl = VALUES.replace(b"\r\x00\x00\x00torch.strided", b"\x10\x00\x00\x00torch.sparse_csr")
    with pytest.raises(LoadError, match="layout 'torch.sparse_csr'"):
        pg.load(io.BytesIO(_archive({"a/data.pkl": pkl})))


# ------------------------------------------------------------------ 4. a record failing its CRC
@pytest.mark.parametrize("record", ["archive/data/0", "archive/data.pkl"])
def test_bad_crc_is_a_load_error_naming_the_record(record):
    buf = io.BytesIO()
    pg.save({"w": pg.arange(4.0)}, buf, format="pytorch")
    data = bytearray(buf.getvalue())
    info = zipfile.ZipFile(io.BytesIO(bytes(data))).getinfo(record)
    name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26:
                                                    info.header_offset + 30])
    data[info.header_offset + 30 + name_len + extra_len + 2] ^= 0xFF  # inside the record's data
    with pytest.raises(LoadError, match=f"record '{record}' cannot be read"):
        pg.load(io.BytesIO(bytes(data)))


# -------------------------------------------------------- 5. views of one storage as two dtypes
def test_views_as_two_dtypes_are_refused_in_pytorch_format():
    x = pg.zeros(4)
    with pytest.raises(RuntimeError, match="Cannot save multiple tensors or storages that view "
                                           "the same data as different types"):
        pg.save({"x": x, "y": x.view(pg.int32)}, io.BytesIO(), format="pytorch")
    # views of one dtype still share their storage; an empty storage is not checked (as torch)
    buf = io.BytesIO()
    pg.save({"x": x, "row": x[1:]}, buf, format="pytorch")
    back = pg.load(io.BytesIO(buf.getvalue()))
    back["x"][1] = 5.0
    assert back["row"][0].item() == 5.0
    e = pg.zeros(0)
    pg.save({"e": e, "v": e.view(pg.int32)}, io.BytesIO(), format="pytorch")


def test_torch_refuses_views_as_two_dtypes_too():
    torch = pytest.importorskip("torch")
    x = torch.zeros(4)
    with pytest.raises(RuntimeError, match="view the same data as different types"):
        torch.save({"x": x, "y": x.view(torch.int32)}, io.BytesIO())
    e = torch.zeros(0)
    torch.save({"e": e, "v": e.view(torch.int32)}, io.BytesIO())


def test_native_format_stores_views_as_separate_tensors():
    x = pg.arange(4.0)
    buf = io.BytesIO()
    pg.save({"x": x, "y": x.view(pg.int32)}, buf)
    back = pg.load(io.BytesIO(buf.getvalue()))
    assert back["x"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert back["y"].tolist() == x.view(pg.int32).tolist()
    back["x"][0] = 7.0  # documented: no longer one storage
    assert back["y"][0].item() == 0
