"""PyTorch's checkpoint format both ways: ``pg.load`` reads ``torch.save``'s zip archives safely,
``pg.save(..., format="pytorch")`` writes archives ``torch.load(weights_only=True)`` reads.

``tests/data/torch-checkpoint.pt`` was written by torch 2.13 (``tests/data/make_torch_checkpoint.py``
says how); its expected values are repeated here as formulas, so these tests need no torch. Where
torch is installed, files written here are also read back by torch itself.
"""
from __future__ import annotations

import io
import math
import os
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

import portagrad as pg
from portagrad.serialization import LoadError, WeightsOnlyError

TORCH_FILE = Path(__file__).parent / "data" / "torch-checkpoint.pt"
BASE = np.arange(24, dtype=np.float32).reshape(4, 6) / 4


def _np(t):
    t = t.detach().cpu()
    return t.float().numpy() if t.dtype is pg.bfloat16 else t.numpy()


def _check_checkpoint(ck, device):
    dev = pg.device(device)
    assert list(ck) == ["base", "row_view", "col_view", "t", "f64", "f16", "bf16", "i64", "i32",
                        "i16", "i8", "u8", "b", "zero_d", "empty", "param", "frozen", "grad",
                        "optim", "meta"]
    np.testing.assert_array_equal(_np(ck["base"]), BASE)
    np.testing.assert_array_equal(_np(ck["row_view"]), BASE[1])
    np.testing.assert_array_equal(_np(ck["col_view"]), BASE[:, 2])
    np.testing.assert_array_equal(_np(ck["t"]), BASE.T)
    assert ck["col_view"].stride() == (6,) and ck["t"].stride() == (1, 6)
    assert ck["t"].shape == (6, 4) and not ck["t"].is_contiguous()
    expected = {
        "f64": (pg.float64, [0.1, -2.5e300, math.inf]), "bf16": (pg.bfloat16, [1.5, -2.25, 3.0e38]),
        "i64": (pg.int64, [2 ** 62 + 1, -2 ** 63, 7]), "i32": (pg.int32, [-5, 2 ** 31 - 1]),
        "i16": (pg.int16, [-300, 12]), "i8": (pg.int8, [-128, 127]),
        "u8": (pg.uint8, [0, 200, 255]), "b": (pg.bool, [True, False, True]),
    }
    declined = _declined(device)
    for name, (dtype, values) in expected.items():
        t = ck[name]
        assert t.dtype is dtype and t.device == (pg.device("cpu") if dtype in declined else dev), name
        if dtype is pg.bfloat16:  # bfloat16 keeps 8 bits of mantissa
            values = [float(np.float32(v).astype(pg.bfloat16.numpy)) for v in values]
        assert t.cpu().tolist() == values, name
    assert ck["f16"].dtype is pg.float16 and _np(ck["f16"]).tolist() == [0.5, -1.25, 65504.0]
    assert ck["zero_d"].shape == () and ck["zero_d"].item() == 3.5
    assert ck["empty"].shape == (0, 3)
    assert isinstance(ck["param"], pg.nn.Parameter) and ck["param"].requires_grad
    assert isinstance(ck["frozen"], pg.nn.Parameter) and not ck["frozen"].requires_grad
    assert ck["grad"].requires_grad and ck["grad"].is_leaf
    assert ck["param"].cpu().tolist() == [1.0, 2.0] and ck["frozen"].cpu().tolist() == [3.0]
    state = ck["optim"]["state"][0]
    assert state["step"].item() == 3.0 and state["exp_avg"].cpu().tolist() == [0.25, 0.5]
    assert ck["optim"]["param_groups"] == [{"lr": 0.001, "betas": (0.9, 0.999), "params": [0]}]
    meta = ck["meta"]
    assert meta["dtype"] is pg.float16 and meta["device"] == pg.device("cpu")
    assert isinstance(meta["size"], pg.Size) and meta["size"] == (2, 3)
    assert (meta["epoch"], meta["name"], meta["none"]) == (7, "run", None)
    # views of one storage share it, as in PyTorch
    with pg.no_grad():
        ck["base"][1, 0] = 100.0
    assert ck["row_view"][0].item() == 100.0 and ck["t"][0, 1].item() == 100.0


def _declined(device):
    """The 16-bit float dtypes ``device`` cannot store (array_api_strict stores neither float16
    nor bfloat16)."""
    out = set()
    for dt in (pg.float16, pg.bfloat16):
        try:
            pg.zeros(1, dtype=dt, device=device)
        except pg.errors.DTypeError:
            out.add(dt)
    return out


def _load_on(device, f):
    """``f`` loaded onto ``device`` by ``map_location`` (storages of a dtype the device declines
    stay on the host: everything else is the test)."""
    if device == "cpu":
        return pg.load(f)
    declined = _declined(device)
    if not declined:
        return pg.load(f, map_location=device)
    return pg.load(f, map_location=lambda t, saved: t if t.dtype in declined else t.to(device))


def test_load_a_torch_checkpoint(device):
    _check_checkpoint(_load_on(device, TORCH_FILE), device)


def test_a_dtype_the_device_declines_raises_the_devices_error(device):
    if not _declined(device):
        assert pg.load(TORCH_FILE, map_location=device)["f16"].device == pg.device(device)
    else:
        with pytest.raises(pg.errors.DTypeError, match="float16|bfloat16"):
            pg.load(TORCH_FILE, map_location=device)


def test_load_map_location_forms(tmp_path):
    as_dict = pg.load(TORCH_FILE, map_location={"cpu": "cpu"})
    np.testing.assert_array_equal(_np(as_dict["base"]), BASE)
    seen = []

    def fn(t, location):
        seen.append(location)
        return None

    pg.load(TORCH_FILE, map_location=fn)
    assert seen and set(seen) == {"cpu"}
    with pg.serialization.safe_globals([]):
        assert pg.load(io.BytesIO(TORCH_FILE.read_bytes()))["i8"].tolist() == [-128, 127]


def test_round_trip_in_pytorch_format(tmp_path, device):
    src = _load_on(device, TORCH_FILE)
    path = tmp_path / "ours.pt"
    pg.save(src, path, format="pytorch")
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        assert "archive/data.pkl" in names and "archive/byteorder" in names
        assert all(i.compress_type == zipfile.ZIP_STORED for i in zf.infolist())
        for info in zf.infolist():  # storages start aligned, as torch writes them (for mmap)
            if info.filename.startswith("archive/data/"):
                with zf.open(info) as f:
                    start = f._fileobj.tell()  # type: ignore[attr-defined]
                assert start % 64 == 0, info.filename
    _check_checkpoint(pg.load(path), "cpu")
    _check_checkpoint(_load_on(device, path), device)


def test_plain_tensors_and_module_state_round_trip(tmp_path):
    m = pg.nn.Sequential(pg.nn.Conv2d(1, 2, 3), pg.nn.BatchNorm2d(2), pg.nn.Linear(2, 2))
    path = tmp_path / "m.pth"
    pg.save(m.state_dict(), path, format="pytorch")
    m2 = pg.nn.Sequential(pg.nn.Conv2d(1, 2, 3), pg.nn.BatchNorm2d(2), pg.nn.Linear(2, 2))
    m2.load_state_dict(pg.load(path))
    for (k, a), (k2, b) in zip(m.state_dict().items(), m2.state_dict().items()):
        assert k == k2 and a.dtype is b.dtype and np.array_equal(_np(a), _np(b)), k


def test_save_format_argument(tmp_path):
    with pytest.raises(ValueError, match="format must be one of portagrad, pytorch"):
        pg.save({"a": pg.ones(1)}, tmp_path / "x", format="onnx")
    pg.save({"a": pg.ones(1)}, tmp_path / "native.pt")  # outside compat: the native format
    assert not zipfile.is_zipfile(tmp_path / "native.pt")
    with pytest.raises(TypeError, match="PyTorch has no 'opencl' devices"):
        pg.save({"d": pg.device("opencl:0")}, tmp_path / "d.pt", format="pytorch")


# ----------------------------------------------------------------------------- hostile archives
def _archive(records: dict[str, bytes], compress: int = zipfile.ZIP_STORED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compress) as zf:
        for name, data in records.items():
            zf.writestr(name, data)
    return out.getvalue()


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > evil-ran",))


def _storage_pickle(key="0", numel=2, offset=0, size=(2,), stride=(1,), storage="FloatStorage"):
    """data.pkl of one tensor, written with the PyTorch-format writer's own opcodes."""
    return (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\n"
            + storage.encode() + b"\nX" + len(key).to_bytes(4, "little") + key.encode()
            + b"X\x03\x00\x00\x00cpuK" + bytes([numel]) + b"tQK" + bytes([offset])
            + b"(" + b"".join(b"K" + bytes([n]) for n in size) + b"t("
            + b"".join(b"K" + bytes([n]) for n in stride) + b"t\x89ccollections\nOrderedDict\n"
            + b")RtR.")


def test_the_hand_written_pickle_is_a_valid_tensor():
    good = _archive({"a/data.pkl": _storage_pickle(), "a/data/0": np.ones(2, np.float32).tobytes()})
    assert pg.load(io.BytesIO(good)).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("records, message", [
    ({"a/data.pkl": pickle.dumps(_Evil(), protocol=2)}, "Unsupported global: GLOBAL posix.system"),
    ({"a/data.pkl": b"\x80\x02cbuiltins\neval\nX\x01\x00\x00\x001\x85R."}, "builtins.eval"),
], ids=["reduce_os_system", "eval"])
def test_hostile_pickle_is_refused_and_runs_nothing(tmp_path, monkeypatch, records, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(WeightsOnlyError, match=message.replace("posix", "(posix|os)")):
        pg.load(io.BytesIO(_archive(records)))
    assert not (tmp_path / "evil-ran").exists()


@pytest.mark.parametrize("records, message", [
    ({"a/data.pkl": _storage_pickle()}, "no record for storage '0'"),
    ({"a/data.pkl": _storage_pickle(), "a/data/0": b"\0" * 4}, "has a record of 4 bytes"),
    ({"a/data.pkl": _storage_pickle(size=(3,)), "a/data/0": b"\0" * 8}, "reaches past its storage"),
    ({"a/data.pkl": _storage_pickle(offset=2), "a/data/0": b"\0" * 8}, "reaches past its storage"),
    ({"a/data.pkl": _storage_pickle(size=(2, 1)), "a/data/0": b"\0" * 8}, "has strides"),
    ({"a/data.pkl": _storage_pickle(key="../../etc/passwd"), "a/data/0": b"\0" * 8},
     r"no record for storage '\.\./\.\./etc/passwd'"),
    ({"a/data.pkl": _storage_pickle(storage="ComplexHalfStorage"), "a/data/0": b"\0" * 16},
     "torch.ComplexHalfStorage, a dtype portagrad does not have"),
    ({"a/data.pkl": b"\x80\x02(X\x01"}, "cannot be unpickled"),
    ({"x.txt": b"hello"}, "not a PyTorch checkpoint"),
    ({"a/data.pkl": _storage_pickle(), "b/data.pkl": _storage_pickle()}, "not a PyTorch checkpoint"),
], ids=["missing_record", "short_record", "view_too_long", "offset_too_far", "rank_mismatch",
        "path_trick", "complex", "truncated_pickle", "foreign_zip", "two_folders"])
def test_malformed_archive_raises_load_error(records, message):
    with pytest.raises(LoadError, match=message):
        pg.load(io.BytesIO(_archive(records)))


def test_complex_storages_load():
    data = _archive({"a/data.pkl": _storage_pickle(storage="ComplexFloatStorage"),
                     "a/data/0": np.array([1 + 2j, -3j], np.complex64).tobytes()})
    t = pg.load(io.BytesIO(data))
    assert t.dtype is pg.complex64 and t.tolist() == [1 + 2j, -3j]


def test_compressed_records_are_refused():
    bomb = _archive({"a/data.pkl": _storage_pickle(), "a/data/0": b"\0" * 8},
                    zipfile.ZIP_DEFLATED)
    with pytest.raises(LoadError, match="is compressed; PyTorch writes every record uncompressed"):
        pg.load(io.BytesIO(bomb))


def test_truncated_archive():
    data = TORCH_FILE.read_bytes()
    for cut in (10, len(data) // 2, len(data) - 30):
        with pytest.raises(LoadError):
            pg.load(io.BytesIO(data[:cut]))


def test_whole_pickled_torch_module_is_refused():
    records = {"a/data.pkl": b"\x80\x02ctorch.nn.modules.linear\nLinear\n)\x81."}
    with pytest.raises(WeightsOnlyError, match="torch.nn.modules.linear.Linear"):
        pg.load(io.BytesIO(_archive(records)))
    with pytest.raises(LoadError, match="save its state_dict"):
        pg.load(io.BytesIO(_archive(records)), weights_only=False)


# ----------------------------------------------------------------------------- with torch itself
def test_torch_reads_what_we_write(tmp_path):
    torch = pytest.importorskip("torch")
    import sys

    sys.path.insert(0, str(TORCH_FILE.parent))
    try:
        from make_torch_checkpoint import checkpoint
    finally:
        sys.path.pop(0)
    path = tmp_path / "ours.pt"
    pg.save(pg.load(TORCH_FILE), path, format="pytorch")
    for mmap in (False, True):
        back = torch.load(path, weights_only=True, mmap=mmap)
        want = checkpoint()
        assert list(back) == list(want)
        for k, v in want.items():
            if isinstance(v, torch.Tensor):
                b = back[k]
                assert type(b) is type(v) and b.dtype == v.dtype and b.stride() == v.stride(), k
                assert b.requires_grad == v.requires_grad and torch.equal(b.detach(), v.detach()), k
            elif k == "optim":
                assert torch.equal(back[k]["state"][0]["exp_avg"], v["state"][0]["exp_avg"])
                assert back[k]["param_groups"] == v["param_groups"]
            else:
                assert back[k] == v, k
        back["base"][1, 0] = -1.0
        assert back["row_view"][0].item() == -1.0  # views still share one storage


def test_torch_module_state_dict_loads_into_our_module(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2), torch.nn.Flatten(),
                             torch.nn.Linear(2 * 4 * 4, 3))
    tm(torch.randn(4, 1, 6, 6))  # running statistics and num_batches_tracked move
    tm.eval()
    torch.save(tm.state_dict(), tmp_path / "m.pt")
    m = pg.nn.Sequential(pg.nn.Conv2d(1, 2, 3), pg.nn.BatchNorm2d(2), pg.nn.Flatten(),
                         pg.nn.Linear(2 * 4 * 4, 3))
    m.load_state_dict(pg.load(tmp_path / "m.pt"))
    m.eval()
    x = np.random.default_rng(0).standard_normal((2, 1, 6, 6)).astype(np.float32)
    np.testing.assert_allclose(m(pg.tensor(x)).detach().numpy(),
                               tm(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_unsafe_globals_listed_for_a_torch_archive():
    assert pg.serialization.get_unsafe_globals_in_checkpoint(TORCH_FILE) == []
    records = {"a/data.pkl": b"\x80\x02ctorch.nn.modules.linear\nLinear\n)\x81."}
    assert pg.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(_archive(records))) == [
        "torch.nn.modules.linear.Linear"]


def test_compat_torch_save_writes_pytorch_format_for_pt_paths(tmp_path):
    from portagrad import compat

    compat.install()
    try:
        import torch as alias

        sd = {"w": alias.arange(3.0)}
        alias.save(sd, tmp_path / "model.pt")
        alias.save(sd, str(tmp_path / "model.PTH"))
        alias.save(sd, tmp_path / "model.safetensors")
    finally:
        compat.uninstall()
    assert zipfile.is_zipfile(tmp_path / "model.pt") and zipfile.is_zipfile(tmp_path / "model.PTH")
    assert not zipfile.is_zipfile(tmp_path / "model.safetensors")
    for name in ("model.pt", "model.PTH", "model.safetensors"):
        assert pg.load(tmp_path / name)["w"].tolist() == [0.0, 1.0, 2.0]
