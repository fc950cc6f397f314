"""pg.save / pg.load: round trips, map_location, and a corrupted/hostile-file suite (every bad file
raises pg.serialization.LoadError naming the problem; nothing crashes, hangs or runs code)."""
from __future__ import annotations

import io
import json
import math
import os
import pathlib
import pickle
import selectors
import signal
import struct
import subprocess
import sys
import time
from collections import OrderedDict

import numpy as np
import pytest

import portagrad as pg
from portagrad.serialization import DeviceUnavailableError, LoadError, WeightsOnlyError


def _roundtrip(obj, **kw):
    buf = io.BytesIO()
    pg.save(obj, buf)
    return pg.load(io.BytesIO(buf.getvalue()), **kw)


def _bytes(obj):
    buf = io.BytesIO()
    pg.save(obj, buf)
    return buf.getvalue()


def test_tensors_keep_values_dtype_shape_requires_grad(device):
    objs = {
        "f32": pg.randn(3, 4, device=device),
        "f64": pg.tensor([[1.5, -2.0]], dtype=pg.float64, device=device),
        "i64": pg.arange(6, device=device).view(2, 3),
        "i32": pg.tensor([1, -2], dtype=pg.int32, device=device),
        "b": pg.tensor([True, False], device=device),
        "scalar": pg.tensor(3.5, device=device),
        "empty": pg.zeros(0, 3, device=device),
        "rg": pg.ones(2, device=device, requires_grad=True),
        "strided": pg.arange(12.0, device=device).view(3, 4).t(),
    }
    out = _roundtrip(objs)
    assert list(out) == list(objs)
    for k, t in objs.items():
        o = out[k]
        assert o.dtype == t.dtype and o.shape == t.shape and o.device == t.device, k
        assert o.requires_grad == t.requires_grad
        np.testing.assert_array_equal(o.detach().numpy(force=True), t.detach().numpy(force=True))


def test_nested_checkpoint_with_plain_values():
    w = pg.randn(2, 2)
    ck = {"epoch": 7, "loss": 0.125, "name": "run-1", "best": None, "done": False,
          "nan": math.nan, "inf": -math.inf, "big": 2 ** 70, "tuple": (1, "a", (2.5,)),
          "list": [1, [2, [3]]], "int_keys": {0: "a", 5: w}, "odict": OrderedDict(b=1, a=2),
          "dollar": {"$t": "not a tensor"}, "size": pg.Size([2, 3]), "dtype": pg.int32,
          "device": pg.device("cpu"), "np": np.float32(1.5)}
    out = _roundtrip(ck)
    assert out["epoch"] == 7 and type(out["epoch"]) is int
    assert out["loss"] == 0.125 and out["name"] == "run-1" and out["best"] is None
    assert out["done"] is False and math.isnan(out["nan"]) and out["inf"] == -math.inf
    assert out["big"] == 2 ** 70 and out["tuple"] == (1, "a", (2.5,))
    assert out["list"] == [1, [2, [3]]] and out["int_keys"][0] == "a"
    assert pg.equal(out["int_keys"][5], w)
    assert type(out["odict"]) is OrderedDict and list(out["odict"]) == ["b", "a"]
    assert out["dollar"] == {"$t": "not a tensor"}
    assert out["size"] == pg.Size([2, 3]) and isinstance(out["size"], pg.Size)
    assert out["dtype"] is pg.int32 and out["device"] == pg.device("cpu")
    assert out["np"] == 1.5


def test_shared_tensors_stored_once_and_loaded_as_one():
    w = pg.randn(100, 100)
    data = _bytes({"a": w, "b": w, "c": w.detach()})
    assert len(data) < 100 * 100 * 4 * 1.5
    out = pg.load(io.BytesIO(data))
    assert out["a"] is out["b"] and pg.equal(out["c"], w)


def test_file_is_plain_safetensors_with_readable_names(tmp_path):
    import safetensors.numpy as stnp

    path = tmp_path / "ck.safetensors"
    pg.save({"model": {"fc.weight": pg.ones(2, 2)}, "step": 3}, path)
    arrays = stnp.load_file(str(path))
    assert list(arrays) == ["model.fc.weight"]
    # and a safetensors file from another tool loads as a dict of tensors
    stnp.save_file({"x": np.arange(3, dtype=np.int64)}, str(tmp_path / "other.safetensors"))
    other = pg.load(str(tmp_path / "other.safetensors"))
    assert other["x"].tolist() == [0, 1, 2] and other["x"].dtype == pg.int64


def test_path_and_file_objects(tmp_path):
    p = tmp_path / "t.pt"
    pg.save([pg.ones(2)], str(p))
    assert pg.load(p)[0].tolist() == [1.0, 1.0]
    with open(p, "wb") as fh:
        pg.save({"x": 1}, fh)
    with open(p, "rb") as fh:
        assert pg.load(fh) == {"x": 1}


def test_map_location(device, opencl_devices):
    src = {"w": pg.ones(2, device="opencl:0"), "c": pg.zeros(1)}
    data = _bytes(src)
    out = pg.load(io.BytesIO(data))
    assert out["w"].device == pg.device("opencl:0") and out["c"].device == pg.device("cpu")
    out = pg.load(io.BytesIO(data), map_location="cpu")
    assert out["w"].device == pg.device("cpu")
    out = pg.load(io.BytesIO(data), map_location=pg.device(device))
    assert out["w"].device == pg.device(device) and out["c"].device == pg.device(device)
    out = pg.load(io.BytesIO(data), map_location={"opencl:0": "cpu"})
    assert out["w"].device == pg.device("cpu")
    seen = []

    def fn(t, loc):
        seen.append((loc, t.device.type))
        return t.to(device) if loc == "cpu" else None

    out = pg.load(io.BytesIO(data), map_location=fn)
    assert out["c"].device == pg.device(device) and out["w"].device == pg.device("opencl:0")
    assert sorted(seen) == [("cpu", "cpu"), ("opencl:0", "cpu")]
    if len(opencl_devices) > 1:
        out = pg.load(io.BytesIO(data), map_location={"opencl:0": "opencl:1"})
        assert out["w"].device == pg.device("opencl:1")


def _rewrite_structure(data, old, new):
    hlen = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + hlen])
    meta = header["__metadata__"]
    meta["portagrad.structure"] = meta["portagrad.structure"].replace(old, new)
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data[8 + hlen:]


def test_missing_device_suggests_map_location():
    data = _rewrite_structure(_bytes({"w": pg.ones(2)}), '"dev":"cpu"', '"dev":"nodev:0"')
    with pytest.raises(DeviceUnavailableError, match="map_location='cpu'") as info:
        pg.load(io.BytesIO(data))
    msg = str(info.value)
    assert "'w'" in msg and "'nodev:0'" in msg and "no backend for device type 'nodev'" in msg
    assert isinstance(info.value, RuntimeError)
    assert pg.load(io.BytesIO(data), map_location="cpu")["w"].tolist() == [1.0, 1.0]
    assert pg.load(io.BytesIO(data), map_location={"nodev:0": "cpu"})["w"].tolist() == [1.0, 1.0]
    with pytest.raises(DeviceUnavailableError, match="nodev"):
        pg.load(io.BytesIO(data), map_location={"other:0": "cpu"})


def test_missing_device_index_is_named():
    data = _rewrite_structure(_bytes({"w": pg.ones(2)}), '"dev":"cpu"', '"dev":"opencl:99"')
    with pytest.raises(DeviceUnavailableError, match="'opencl:99'.*map_location='cpu'"):
        pg.load(io.BytesIO(data))


@pytest.mark.parametrize("dev", ["cpu:-1", "no such device", "opencl:x", ""])
def test_malformed_device_in_the_file(dev):
    data = _rewrite_structure(_bytes({"w": pg.ones(2)}), '"dev":"cpu"', f'"dev":"{dev}"')
    for ml in (None, "cpu"):
        with pytest.raises(LoadError, match=f"tensor 'w' has an invalid device '{dev}'"):
            pg.load(io.BytesIO(data), map_location=ml)


def test_opencl_checkpoint_without_the_opencl_backend(tmp_path):
    """A file saved from opencl:0 loaded where the opencl backend does not exist says so."""
    path = tmp_path / "gpu.pt"
    data = _rewrite_structure(_bytes({"w": pg.arange(3.0)}), '"dev":"cpu"', '"dev":"opencl:0"')
    path.write_bytes(data)
    script = f"""
import portagrad as pg
from portagrad.serialization import DeviceUnavailableError
try:
    pg.load({str(path)!r})
except DeviceUnavailableError as e:
    print(e)
print(pg.load({str(path)!r}, map_location="cpu")["w"].tolist())
"""
    env = dict(os.environ, PORTAGRAD_DISABLE_PLUGINS="opencl",
               PYTHONPATH=_REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, env=env, timeout=120,
                         cwd=_REPO, text=True)
    assert res.returncode == 0, res.stderr
    msg, values = res.stdout.strip().splitlines()
    assert "tensor 'w' was saved on device 'opencl:0'" in msg
    assert "backend for 'opencl' devices is not available" in msg
    assert "map_location='cpu'" in msg
    assert values == "[0.0, 1.0, 2.0]"


def test_module_state_dict_and_parameters():
    from portagrad.nn.parameter import Parameter

    p = Parameter(pg.ones(3))
    out = _roundtrip({"p": p, "frozen": Parameter(pg.zeros(1), requires_grad=False)})
    assert isinstance(out["p"], Parameter) and out["p"].requires_grad
    assert isinstance(out["frozen"], Parameter) and not out["frozen"].requires_grad


class _Custom:
    def __init__(self):
        self.w = pg.arange(3.0)
        self.name = "c"


def test_pickled_objects_need_explicit_opt_in(tmp_path):
    path = tmp_path / "obj.pt"
    pg.save(_Custom(), path)
    with pytest.raises(WeightsOnlyError, match="weights_only=False"):
        pg.load(path)
    with pytest.raises(pickle.UnpicklingError):
        pg.load(path)
    obj = pg.load(path, weights_only=False)
    assert isinstance(obj, _Custom) and obj.w.tolist() == [0.0, 1.0, 2.0]


# ------------------------------------------------------------------------- corrupted files
GOOD = None


def _good():
    global GOOD
    if GOOD is None:
        GOOD = _bytes({"model": {"w": pg.randn(4, 3), "b": pg.zeros(3)}, "epoch": 2,
                       "opt": {"state": {0: {"step": pg.tensor(1.0)}}, "param_groups": []}})
    return GOOD


def _load_bytes(data):
    return pg.load(io.BytesIO(data))


def _expect_error(data, match=None):
    with pytest.raises(LoadError, match=match) as info:
        _load_bytes(data)
    assert str(info.value)
    return info.value


class _HugeFile(io.RawIOBase):
    """A seekable file of ``size`` bytes (a header, then zeros) that is never materialised and
    refuses to be read whole; counts the bytes read."""

    def __init__(self, head: bytes, size: int) -> None:
        self.head, self.size, self.pos, self.read_bytes = head, size, 0, 0

    def seekable(self):
        return True

    def readable(self):
        return True

    def tell(self):
        return self.pos

    def seek(self, pos, whence=0):
        self.pos = {0: pos, 1: self.pos + pos, 2: self.size + pos}[whence]
        return self.pos

    def readinto(self, b):
        n = min(len(b), self.size - self.pos)
        assert n <= 64 * 1024 * 1024, f"read {n} bytes at once"
        chunk = self.head[self.pos:self.pos + n]
        b[:n] = chunk + b"\0" * (n - len(chunk))
        self.pos += n
        self.read_bytes += n
        return n

    def read(self, n=-1):
        assert n is not None and n >= 0, "the whole file was read"
        b = bytearray(min(n, self.size - self.pos))
        return bytes(b[:self.readinto(b)])


@pytest.mark.parametrize("header,match", [
    ({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, "cover 8 bytes"),
    ({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 2 ** 32]}}, "needs 8 bytes"),
    ({"x": {"dtype": "F32", "shape": [2 ** 40], "data_offsets": [0, 2 ** 60]}}, "spans"),
    ({"x": {"dtype": "F32", "shape": [-1, -4], "data_offsets": [0, 16]}}, "negative size"),
])
def test_huge_bogus_file_is_refused_without_being_read(header, match):
    h = json.dumps(header).encode()
    f = _HugeFile(struct.pack("<Q", len(h)) + h, 8 * 2 ** 30)
    with pytest.raises(LoadError, match=match):
        pg.load(f)
    assert f.read_bytes <= 16 + len(h)  # the first 8 bytes are looked at twice


def test_tensors_are_read_one_by_one(tmp_path):
    """A valid file is read per tensor (header, then each tensor's span), never whole."""
    arrays = {"a": pg.arange(1000.0), "b": pg.ones(10, 10, dtype=pg.int64)}
    data = _bytes(arrays)
    f = _HugeFile(data, len(data))
    out = pg.load(f)
    assert pg.equal(out["a"], arrays["a"]) and pg.equal(out["b"], arrays["b"])
    assert f.read_bytes <= len(data) + 8 and f.tell() == len(data)


def test_every_truncation_raises_load_error():
    data = _good()
    offsets = sorted(set(list(range(0, 64)) + list(range(64, len(data), 7)) + [len(data) - 1]))
    for n in offsets:
        _expect_error(data[:n])


def test_flipped_bytes_never_crash():
    data = bytearray(_good())
    rng = np.random.default_rng(0)
    hlen = struct.unpack("<Q", bytes(data[:8]))[0]
    for pos in list(range(0, 8 + hlen, 3)) + list(rng.integers(8 + hlen, len(data), 30)):
        for bit in (0x01, 0x80):
            bad = bytearray(data)
            bad[pos] ^= bit
            try:
                _load_bytes(bytes(bad))  # a flip inside tensor data or a string may still load
            except LoadError:
                pass


def _with_header(header, data=b"", raw_len=None):
    h = json.dumps(header).encode() if not isinstance(header, bytes) else header
    return struct.pack("<Q", len(h) if raw_len is None else raw_len) + h + data


@pytest.mark.parametrize("data,match", [
    (b"", "only 0 bytes"),
    (b"\x00" * 7, "only 7 bytes"),
    (struct.pack("<Q", 2 ** 63) + b"{}", "header length"),
    (struct.pack("<Q", 2 ** 64 - 1) + b"{}", "header length"),
    (struct.pack("<Q", 50_000_000) + b"{}", "file has only"),
    (_with_header(b"{not json"), "not valid JSON"),
    (_with_header(b"\xff\xfe"), "not valid JSON"),
    (_with_header(b"[1, 2]"), "not an object"),
    (_with_header(b'{"a": NaN}'), "not valid JSON"),
    (_with_header(b"[" * 100000 + b"]" * 100000), "not valid JSON|not an object"),
    (_with_header({"__metadata__": {"a": 1}}), "strings to strings"),
    (_with_header({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4),
     "data section has 4 bytes"),
    (_with_header({"x": {"dtype": "F32", "shape": [10 ** 12], "data_offsets": [0, 8]}},
                  b"\0" * 8), "needs"),
    (_with_header({"x": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, b"\0" * 8),
     "invalid shape"),
    (_with_header({"x": {"dtype": "Q99", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8),
     "unknown dtype"),
    (_with_header({"x": {"dtype": "U16", "shape": [2], "data_offsets": [0, 4]}}, b"\0" * 4),
     "does not support"),
    (_with_header({"x": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}}, b"\0" * 8),
     "spans"),
    (_with_header({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0]}}, b"\0" * 8),
     "data_offsets"),
    (_with_header({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                   "y": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 8),
     "overlapping"),
    (_with_header({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 12),
     "cover 4 bytes"),
    (_with_header({"x": 5}), "not an object"),
    (_with_header({"__metadata__": {"portagrad.format": "tree"}}), "no 'portagrad.structure'"),
    (_with_header({"__metadata__": {"portagrad.format": "tree", "portagrad.structure": "{bad"}}),
     "structure metadata is not valid JSON"),
    (_with_header({"__metadata__": {"portagrad.format": "tree",
                                    "portagrad.structure": '{"$t": "missing", "dev": "cpu"}'}}),
     "not in the file"),
    (_with_header({"__metadata__": {"portagrad.format": "tree",
                                    "portagrad.structure": '{"$evil": "os.system"}'}}),
     "unknown or malformed"),
    (_with_header({"__metadata__": {"portagrad.format": "tree",
                                    "portagrad.structure": '{"$d": [[1]]}'}}), "pair"),
    (_with_header({"__metadata__": {"portagrad.format": "tree",
                                    "portagrad.structure": '{"$dtype": "complex32"}'}}),
     "invalid \\$dtype"),
    (_with_header({"__metadata__": {"portagrad.format": "tree",
                                    "portagrad.structure": "[" * 5000 + "]" * 5000}}),
     "deeper|not valid JSON"),
    (_with_header({"__metadata__": {"portagrad.format": "zip"}}), "unsupported portagrad format"),
    (_with_header({"__metadata__": {"portagrad.format": "pickle", "portagrad.pickle": "!!"}}),
     "invalid pickle payload"),
    (b"PK\x03\x04" + b"\0" * 100, "zip archive"),
    (_with_header({"x": {"dtype": "F32", "shape": [2], "data_offsets": [16, 24]}}, b"\0" * 8),
     "'x' spans bytes \\[16, 24\\)"),
    (_with_header({"x": {"dtype": "F32", "shape": [2, -1], "data_offsets": [0, 8]}}, b"\0" * 8),
     "'x' has an invalid shape .*negative"),
    (_with_header({"x": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8),
     "'x' of shape \\[3\\] and dtype F32 needs 12 bytes"),
    (_with_header({"x": {"dtype": "F32", "shape": [2.0], "data_offsets": [0, 8]}}, b"\0" * 8),
     "invalid shape"),
    (_with_header({"x": {"dtype": "BOOL", "shape": [2], "data_offsets": [0, 2]}}, b"\x01\x02"),
     "'x' of dtype BOOL holds bytes other than 0 and 1"),
    (_with_header({"__metadata__": {"portagrad.format": "tree",
                                    "portagrad.structure": '{"$size": [2, -1]}'}}),
     "invalid \\$size|malformed"),
])
def test_hostile_files(data, match):
    _expect_error(data, match)


def test_pickle_files_are_refused_and_never_executed(tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    payload = pickle.dumps(Evil(), protocol=2)
    with pytest.raises(WeightsOnlyError, match="pickle file"):
        _load_bytes(payload)
    # a portagrad pickle-format file carrying the same payload is refused too
    evil = _with_header({"__metadata__": {
        "portagrad.format": "pickle", "portagrad.version": "1",
        "portagrad.pickle": __import__("base64").b64encode(payload).decode()}})
    with pytest.raises(WeightsOnlyError):
        _load_bytes(evil)
    assert not marker.exists()


def test_corrupted_pickle_payload_with_opt_in_is_clear():
    bad = _with_header({"__metadata__": {"portagrad.format": "pickle", "portagrad.pickle": "@@"}})
    with pytest.raises(LoadError, match="invalid pickle payload"):
        pg.load(io.BytesIO(bad), weights_only=False)


def test_load_error_is_a_runtime_error():
    assert issubclass(LoadError, RuntimeError)
    assert issubclass(WeightsOnlyError, pickle.UnpicklingError)


# ------------------------------------------------------------------------- atomic saves
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _child(script: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=_REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=_REPO)


def _kill(proc) -> bytes:
    proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    return err


def _temporaries(folder) -> list[str]:
    return [n for n in os.listdir(folder) if n.endswith(".tmp")]


def _readline(proc, timeout: float = 120.0) -> bytes:
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    try:
        if not sel.select(timeout):
            proc.kill()
            raise AssertionError(f"child said nothing in {timeout}s: {proc.communicate()[1]!r}")
    finally:
        sel.close()
    return proc.stdout.readline()


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
def test_save_killed_mid_write_keeps_the_previous_file(tmp_path):
    path = tmp_path / "ck.pt"
    old = {"w": pg.arange(1000.0).view(10, 100), "step": 1}
    pg.save(old, path)
    # the child writes half of a large checkpoint, then stalls until it is killed
    proc = _child(f"""
import sys, time, portagrad as pg, portagrad.serialization as S
def stalled(fh, data):
    fh.write(memoryview(data)[:len(data) // 2]); fh.flush()
    print("mid", flush=True); time.sleep(600)
S._write_all = stalled
pg.save({{"w": pg.full((1000, 1000), 7.0), "step": 2}}, {str(path)!r})
""")
    try:
        assert _readline(proc) == b"mid\n"
    finally:
        err = _kill(proc)
    assert b"Traceback" not in err, err
    assert len(_temporaries(tmp_path)) == 1  # the kill did land mid-write
    out = pg.load(path)
    assert out["step"] == 1 and out["w"].tolist() == old["w"].tolist()
    pg.save({"w": pg.ones(2), "step": 3}, path)  # the next save cleans the leftover up
    assert _temporaries(tmp_path) == [] and os.listdir(tmp_path) == ["ck.pt"]
    assert pg.load(path)["step"] == 3


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
def test_save_in_a_loop_killed_at_any_time_leaves_a_whole_checkpoint(tmp_path):
    path = tmp_path / "ck.pt"
    proc = _child(f"""
import portagrad as pg
for k in range(10 ** 6):
    pg.save({{"w": pg.full((512, 1024), float(k)), "k": k}}, {str(path)!r})
    if k == 2:
        print("saving", flush=True)
""")
    try:
        assert _readline(proc) == b"saving\n"
        time.sleep(0.3)
    finally:
        err = _kill(proc)
    assert b"Traceback" not in err, err
    out = pg.load(path)
    assert out["k"] >= 2 and pg.equal(out["w"], pg.full((512, 1024), float(out["k"])))


def test_failed_save_keeps_the_previous_file_and_no_temporary(tmp_path, monkeypatch):
    import portagrad.serialization as S

    path = tmp_path / "ck.pt"
    pg.save({"x": pg.ones(3)}, path)

    def broken(fh, data):
        fh.write(data[:10])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(S, "_write_all", broken)
    with pytest.raises(OSError, match="No space"):
        pg.save({"x": pg.zeros(3)}, path)
    assert os.listdir(tmp_path) == ["ck.pt"]
    assert pg.load(path)["x"].tolist() == [1.0, 1.0, 1.0]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions and symlinks")
def test_atomic_save_keeps_mode_and_writes_through_symlinks(tmp_path):
    path = tmp_path / "ck.pt"
    pg.save({"x": 1}, path)
    os.chmod(path, 0o640)
    link = tmp_path / "latest.pt"
    link.symlink_to(path)
    pg.save({"x": 2}, link)
    assert link.is_symlink() and pg.load(path) == {"x": 2}
    assert os.stat(path).st_mode & 0o777 == 0o640
    pg.save({"x": 3}, pathlib.PurePath(str(path)).as_posix())
    assert pg.load(path) == {"x": 3} and _temporaries(tmp_path) == []
