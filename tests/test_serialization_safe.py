"""weights_only loading of pickled objects: the allow-list (add_safe_globals, safe_globals,
get_safe_globals, clear_safe_globals) and the refusal of anything else, before it runs."""
from __future__ import annotations

import base64
import io
import json
import os
import pickle
import struct

import numpy as np
import pytest

import portagrad as pg
from portagrad import nn
from portagrad.serialization import LoadError, WeightsOnlyError


class MyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x))


class Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b


@pytest.fixture(autouse=True)
def _clean_allow_list():
    pg.serialization.clear_safe_globals()
    yield
    pg.serialization.clear_safe_globals()


def _saved(obj) -> io.BytesIO:
    buf = io.BytesIO()
    pg.save(obj, buf)
    buf.seek(0)
    return buf


def test_whole_model_loads_inside_safe_globals(device):
    pg.manual_seed(0)
    model = MyNet().to(device)
    buf = _saved(model)
    with pg.serialization.safe_globals([MyNet, nn.Linear, nn.ReLU]):
        loaded = pg.load(buf)
    assert isinstance(loaded, MyNet) and isinstance(loaded.fc, nn.Linear)
    assert isinstance(loaded.fc.weight, nn.Parameter) and loaded.fc.weight.requires_grad
    assert str(loaded.fc.weight.device) == str(pg.device(device))
    x = pg.randn(4, 3, device=device)
    np.testing.assert_allclose(loaded(x).numpy(force=True), model(x).numpy(force=True))
    # outside the block the allow-list is back to the defaults
    buf.seek(0)
    with pytest.raises(WeightsOnlyError):
        pg.load(buf)


def test_refusal_names_the_global_and_how_to_allow_it():
    buf = _saved(MyNet())
    with pytest.raises(WeightsOnlyError) as info:
        pg.load(buf)
    msg = str(info.value)
    name = f"{__name__}.MyNet"
    assert f"Unsupported global: GLOBAL {name} was not an allowed global by default" in msg
    assert f"pg.serialization.add_safe_globals([{name}])" in msg
    assert f"pg.serialization.safe_globals([{name}])" in msg
    assert "weights_only=False" in msg
    assert isinstance(info.value, pickle.UnpicklingError)
    # allowing the class alone is not enough: the next global it needs is named
    buf.seek(0)
    with pg.serialization.safe_globals([MyNet]), pytest.raises(WeightsOnlyError,
                                                                match="linear.Linear"):
        pg.load(buf)


def test_add_get_clear_and_tuple_form():
    assert pg.serialization.get_safe_globals() == []
    pg.serialization.add_safe_globals([Pair])
    assert pg.serialization.get_safe_globals() == [Pair]
    obj = pg.load(_saved(Pair(pg.arange(3.0), {"k": (1, 2.5)})))
    assert isinstance(obj, Pair) and obj.a.tolist() == [0.0, 1.0, 2.0] and obj.b == {"k": (1, 2.5)}
    pg.serialization.clear_safe_globals()
    assert pg.serialization.get_safe_globals() == []
    with pytest.raises(WeightsOnlyError, match="Pair"):
        pg.load(_saved(Pair(1, 2)))
    # (object, "module.qualname"): allowed under the name it was pickled as
    pg.serialization.add_safe_globals([(Pair, f"{__name__}.Pair")])
    assert isinstance(pg.load(_saved(Pair(1, 2))), Pair)
    with pytest.raises(TypeError, match="classes or functions"):
        pg.serialization.add_safe_globals([3])
    with pg.serialization.safe_globals([MyNet]):
        assert MyNet in pg.serialization.get_safe_globals()
        with pg.serialization.safe_globals([nn.ReLU]):
            assert nn.ReLU in pg.serialization.get_safe_globals()
        assert nn.ReLU not in pg.serialization.get_safe_globals()
    assert MyNet not in pg.serialization.get_safe_globals()


def test_get_unsafe_globals_in_checkpoint(tmp_path):
    path = tmp_path / "m.pt"
    pg.save(MyNet(), path)
    names = pg.serialization.get_unsafe_globals_in_checkpoint(path)
    assert names == sorted([f"{__name__}.MyNet", "portagrad.nn.modules.linear.Linear",
                            "portagrad.nn.modules.activation.ReLU"])
    with pg.serialization.safe_globals([MyNet]):
        assert f"{__name__}.MyNet" not in pg.serialization.get_unsafe_globals_in_checkpoint(path)
    pg.save({"w": pg.ones(2)}, path)
    assert pg.serialization.get_unsafe_globals_in_checkpoint(path) == []


def _portagrad_pickle_file(payload: bytes) -> bytes:
    header = json.dumps({"__metadata__": {"portagrad.format": "pickle",
                                          "portagrad.version": "1",
                                          "portagrad.pickle": base64.b64encode(payload).decode()}})
    return struct.pack("<Q", len(header)) + header.encode()


def test_malicious_pickle_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    payload = pickle.dumps({"model": Evil()}, protocol=2)
    for data in (payload, _portagrad_pickle_file(payload)):
        with pytest.raises(WeightsOnlyError, match=r"GLOBAL (posix|nt)\.system"):
            pg.load(io.BytesIO(data))
        # even with user classes allowed, an unlisted callable is refused
        with pg.serialization.safe_globals([MyNet, Pair]), pytest.raises(WeightsOnlyError):
            pg.load(io.BytesIO(data))
    evil_eval = pickle.dumps(_Reduce(eval, (f"open({str(marker)!r}, 'w')",)), protocol=2)
    with pytest.raises(WeightsOnlyError, match="builtins.eval"):
        pg.load(io.BytesIO(evil_eval))
    assert not marker.exists()


class _Reduce:
    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


def test_plain_pickles_of_safe_values_load_and_errors_are_typed():
    assert pg.load(io.BytesIO(pickle.dumps({"a": [1, 2.5, (3,)], "b": {1, 2}}, protocol=2))) == {
        "a": [1, 2.5, (3,)], "b": {1, 2}}
    with pytest.raises(RuntimeError, match="explicit pickle_module"):
        pg.load(_saved(MyNet()), pickle_module=pickle)
    with pytest.raises(LoadError, match="cannot be unpickled"):
        pg.load(io.BytesIO(b"\x80\x02" + b"\x00" * 10))
