"""``nn.Module`` state and repr parity with PyTorch 2.13: extra state in ``state_dict``,
``load_state_dict`` (``assign``, 0-d backward compatibility, pre/post hooks), ``Module.to`` with
complex dtypes, the norm layers' ``bias`` argument and reprs, padding and parameter-container
reprs, and ``LSTM(proj_size=...)``. Expected values are PyTorch's, written out; the checks against
an installed torch are extra."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import portagrad as pg
from portagrad import nn


class _WithExtra(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.counter = 3

    def get_extra_state(self) -> dict:
        return {"counter": self.counter}

    def set_extra_state(self, state: dict) -> None:
        self.counter = state["counter"]


# ------------------------------------------------------------------ extra state
def test_extra_state_is_saved_and_loaded():
    m = nn.Sequential(_WithExtra())
    sd = m.state_dict()
    # after the module's own tensors, before its children's (PyTorch's order)
    assert list(sd) == ["0._extra_state", "0.lin.weight", "0.lin.bias"]
    assert sd["0._extra_state"] == {"counter": 3}
    dst = nn.Sequential(_WithExtra())
    dst[0].counter = 0
    assert repr(dst.load_state_dict(sd)) == "<All keys matched successfully>"
    assert dst[0].counter == 3


def test_missing_and_unexpected_extra_state():
    sd = nn.Sequential(_WithExtra()).state_dict()
    del sd["0._extra_state"]
    dst = nn.Sequential(_WithExtra())
    with pytest.raises(RuntimeError) as ei:
        dst.load_state_dict(sd)
    assert str(ei.value) == ('Error(s) in loading state_dict for Sequential:\n\t'
                             'Missing key(s) in state_dict: "0._extra_state". ')
    res = dst.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["0._extra_state"] and res.unexpected_keys == []
    # a module without set_extra_state does not expect the key
    plain = nn.Linear(1, 1)
    sd = dict(plain.state_dict(), _extra_state=1)
    res = plain.load_state_dict(sd, strict=False)
    assert res.missing_keys == [] and res.unexpected_keys == ["_extra_state"]


def test_base_extra_state_methods_raise():
    with pytest.raises(RuntimeError, match=r"Module.get_extra_state\(\) that should never be"):
        nn.Module().get_extra_state()
    with pytest.raises(RuntimeError, match=r"Module.set_extra_state\(\) that should never be"):
        nn.Module().set_extra_state({})
    assert "_extra_state" not in nn.Linear(1, 1).state_dict()


# ------------------------------------------------------------------ load_state_dict
def test_assign_keeps_the_module_requires_grad():
    lin = nn.Linear(2, 2)
    frozen = nn.Parameter(pg.ones(2, 2), requires_grad=False)
    plain = pg.zeros(2)
    lin.load_state_dict({"weight": frozen, "bias": plain}, assign=True)
    assert lin.weight is frozen and lin.weight.requires_grad  # PyTorch: True
    assert type(lin.bias) is nn.Parameter and lin.bias.requires_grad
    lin.requires_grad_(False)
    lin.load_state_dict({"weight": nn.Parameter(pg.ones(2, 2)), "bias": pg.zeros(2)}, assign=True)
    assert not lin.weight.requires_grad and not lin.bias.requires_grad


def test_one_element_tensor_loads_into_0d(device):
    m = nn.Module()
    m.register_buffer("step", pg.tensor(0.0, device=device))
    m.register_parameter("scale", nn.Parameter(pg.tensor(1.0, device=device)))
    m.load_state_dict({"step": pg.tensor([5.0]), "scale": pg.tensor([2.5])})
    assert m.step.shape == () and float(m.step) == 5.0
    assert m.scale.shape == () and float(m.scale) == 2.5
    with pytest.raises(RuntimeError, match=r"size mismatch for step: copying a param with shape"):
        m.load_state_dict({"step": pg.tensor([5.0, 6.0]), "scale": pg.tensor(1.0)})


def test_unexpected_keys_follow_pytorch():
    m = nn.Sequential(nn.Linear(1, 1))
    sd = m.state_dict()
    sd["0.weight.x"] = pg.zeros(1)
    sd["0"] = pg.zeros(1)
    sd["0.foo.bar"] = pg.zeros(1)
    res = m.load_state_dict(sd, strict=False)
    assert res.unexpected_keys == ["0", "0.weight.x", "0.foo.bar"]


# ------------------------------------------------------------------ state dict hooks
def _hooked_model(log: list) -> nn.Module:
    m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    m.register_load_state_dict_pre_hook(
        lambda mod, sd, p, md, st, mk, uk, em: log.append(
            ("pre", type(mod).__name__, p, sorted(sd), sorted(md))))
    m[1].register_load_state_dict_pre_hook(
        lambda mod, sd, p, md, st, mk, uk, em: log.append(("pre1", p, sorted(sd), sorted(md))))
    m[0]._register_load_state_dict_pre_hook(
        lambda sd, p, md, st, mk, uk, em: log.append(("priv0", p, sorted(sd))))
    m.register_load_state_dict_post_hook(lambda mod, inc: log.append(("post", inc.missing_keys)))

    def post(mod, sd, prefix, md):
        log.append(("sdpost", type(mod).__name__, prefix, dict(md)))
        sd[prefix + "extra"] = 1

    m[0].register_state_dict_post_hook(post)
    m.register_state_dict_pre_hook(lambda mod, p, kv: log.append(("sdpre", p, kv)))
    return m


def test_state_dict_hooks_order_and_arguments():
    log: list = []
    m = _hooked_model(log)
    sd = m.state_dict()
    assert list(sd) == ["0.weight", "0.bias", "0.extra", "1.weight", "1.bias", "1.running_mean",
                        "1.running_var", "1.num_batches_tracked"]
    del sd["0.extra"]
    h = m[0]._register_load_state_dict_pre_hook(
        lambda mod, *a: log.append(("privmod", type(mod).__name__)), with_module=True)
    sd2 = dict(sd)  # no _metadata: BatchNorm's version-1 rule fills in num_batches_tracked
    del sd2["1.num_batches_tracked"]
    assert repr(m.load_state_dict(sd2, strict=False)) == "<All keys matched successfully>"
    h.remove()
    m.load_state_dict(sd)
    bn = ["1.bias", "1.num_batches_tracked", "1.running_mean", "1.running_var", "1.weight"]
    assert log == [  # PyTorch 2.13's log
        ("sdpre", "", False),
        ("sdpost", "Linear", "0.", {"version": 1}),
        ("pre", "Sequential", "", ["0.bias", "0.weight"] + [k for k in bn if "num" not in k], []),
        ("priv0", "0.", ["0.bias", "0.weight"]),
        ("privmod", "Linear"),
        ("pre1", "1.", bn, []),
        ("post", []),
        ("pre", "Sequential", "", ["0.bias", "0.weight"] + bn, ["version"]),
        ("priv0", "0.", ["0.bias", "0.weight"]),
        ("pre1", "1.", bn, ["version"]),
        ("post", []),
    ]


def test_state_dict_hook_return_values():
    m = nn.Linear(2, 2)
    m.register_state_dict_post_hook(lambda *a: {})
    with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
        m.state_dict()
    m = nn.Linear(2, 2)
    m._register_state_dict_hook(lambda mod, sd, p, md: {"x": 1})  # the old form may replace it
    assert m.state_dict() == {"x": 1}
    m = nn.Linear(2, 2)
    m.register_load_state_dict_post_hook(lambda mod, inc: 1)
    with pytest.raises(AssertionError, match="are not expected to return new values"):
        m.load_state_dict(nn.Linear(2, 2).state_dict())


def test_load_pre_hook_can_edit_state_dict_and_be_removed():
    m = nn.Linear(1, 1)

    def rename(mod, sd, prefix, *rest):
        sd[prefix + "weight"] = sd.pop(prefix + "old_weight")

    h = m.register_load_state_dict_pre_hook(rename)
    src = {"old_weight": pg.full((1, 1), 4.0), "bias": pg.zeros(1)}
    m.load_state_dict(src)
    assert float(m.weight) == 4.0 and "old_weight" in src  # the caller's dict is untouched
    h.remove()
    with pytest.raises(RuntimeError, match='Missing key'):
        m.load_state_dict(src)


# ------------------------------------------------------------------ Module.to
def test_to_float64_casts_complex_buffers():
    m = nn.Linear(2, 2)
    m.register_buffer("c", pg.tensor([1 + 2j]))
    m.register_buffer("i", pg.tensor([1]))
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        m.to(pg.float64)
    assert m.c.dtype is pg.float64 and m.c.tolist() == [1.0]
    assert m.weight.dtype is pg.float64 and m.i.dtype is pg.int64


def test_to_complex_dtype():
    m = nn.Linear(2, 2)
    w = m.weight
    with pytest.warns(UserWarning, match="Complex modules are a new feature under active"):
        assert m.to(pg.complex64) is m
    assert m.weight is w and m.weight.dtype is pg.complex64 and m.bias.dtype is pg.complex64
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.to(dtype=pg.complex128)
    assert m.weight.dtype is pg.complex128
    with pytest.raises(TypeError, match=r"only accepts floating point or complex dtypes, but got "
                                        r"desired dtype=portagrad.int32"):
        m.to(pg.int32)


# ------------------------------------------------------------------ norm layers
_NORM_REPRS = [  # PyTorch 2.13's reprs and state_dict keys
    (lambda: nn.BatchNorm1d(3),
     "BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)",
     ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]),
    (lambda: nn.BatchNorm2d(3, bias=False),
     "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=False, track_running_stats=True)",
     ["weight", "running_mean", "running_var", "num_batches_tracked"]),
    (lambda: nn.BatchNorm3d(4, 1e-3, None, False, False),
     "BatchNorm3d(4, eps=0.001, momentum=None, affine=False, bias=False, "
     "track_running_stats=False)", []),
    (lambda: nn.SyncBatchNorm(3, bias=False),
     "SyncBatchNorm(3, eps=1e-05, momentum=0.1, affine=True, bias=False, "
     "track_running_stats=True)", ["weight", "running_mean", "running_var", "num_batches_tracked"]),
    (lambda: nn.InstanceNorm1d(3),
     "InstanceNorm1d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, "
     "track_running_stats=False)", []),
    (lambda: nn.InstanceNorm2d(3, affine=True),
     "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, "
     "track_running_stats=False)", ["weight", "bias"]),
    (lambda: nn.InstanceNorm3d(3, affine=True, bias=False, track_running_stats=True),
     "InstanceNorm3d(3, eps=1e-05, momentum=0.1, affine=True, bias=False, "
     "track_running_stats=True)", ["weight", "running_mean", "running_var", "num_batches_tracked"]),
    (lambda: nn.GroupNorm(2, 4), "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)",
     ["weight", "bias"]),
    (lambda: nn.GroupNorm(2, 4, bias=False), "GroupNorm(2, 4, eps=1e-05, affine=True, bias=False)",
     ["weight"]),
    (lambda: nn.GroupNorm(1, 4, 1e-3, affine=False),
     "GroupNorm(1, 4, eps=0.001, affine=False, bias=False)", []),
    (lambda: nn.LayerNorm(4), "LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)",
     ["weight", "bias"]),
    (lambda: nn.LayerNorm([2, 3], bias=False),
     "LayerNorm((2, 3), eps=1e-05, elementwise_affine=True, bias=False)", ["weight"]),
    (lambda: nn.LayerNorm(3, elementwise_affine=False),
     "LayerNorm((3,), eps=1e-05, elementwise_affine=False, bias=False)", []),
    (lambda: nn.LazyBatchNorm1d(),
     "LazyBatchNorm1d(0, eps=1e-05, momentum=0.1, affine=True, bias=True, "
     "track_running_stats=True)", ["weight", "bias", "running_mean", "running_var",
                                   "num_batches_tracked"]),
    (lambda: nn.LazyBatchNorm2d(bias=False),
     "LazyBatchNorm2d(0, eps=1e-05, momentum=0.1, affine=True, bias=False, "
     "track_running_stats=True)", ["weight", "running_mean", "running_var",
                                   "num_batches_tracked"]),
    (lambda: nn.LazyInstanceNorm2d(affine=True, track_running_stats=True, bias=False),
     "LazyInstanceNorm2d(0, eps=1e-05, momentum=0.1, affine=True, bias=False, "
     "track_running_stats=True)", ["weight", "running_mean", "running_var",
                                   "num_batches_tracked"]),
]


@pytest.mark.parametrize("make,text,keys", _NORM_REPRS, ids=[t.split(",")[0] for _, t, _ in
                                                            _NORM_REPRS])
def test_norm_repr_and_bias_argument(make, text, keys):
    m = make()
    assert repr(m) == text
    assert list(m.state_dict()) == keys


def test_norm_without_bias_forward(device):
    x = pg.arange(24.0, device=device).reshape(2, 3, 4)
    got = nn.BatchNorm1d(3, bias=False).to(device)(x).flatten()[:6]
    np.testing.assert_allclose(got.detach().cpu().numpy(),
                               [-1.2288, -1.065, -0.9012, -0.7373, -1.2288, -1.065], atol=1e-4)
    g = nn.GroupNorm(1, 3, bias=False).to(device)
    g.weight.data.fill_(2.0)
    np.testing.assert_allclose(g(x).flatten()[:6].detach().cpu().numpy(),
                               [-3.1865, -2.6071, -2.0278, -1.4484, -0.869, -0.2897], atol=1e-4)
    i = nn.InstanceNorm1d(3, affine=True, bias=False).to(device)
    np.testing.assert_allclose(i(x).flatten()[:6].detach().cpu().numpy(),
                               [-1.3416, -0.4472, 0.4472, 1.3416, -1.3416, -0.4472], atol=1e-4)
    lazy = nn.LazyBatchNorm2d(bias=False).to(device)
    lazy(pg.randn(2, 3, 2, 2, device=device))
    assert lazy.bias is None and lazy.weight.shape == (3,)


def test_convert_sync_batchnorm_keeps_bias_false():
    sb = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.BatchNorm2d(3, bias=False)))
    assert type(sb[0]) is nn.SyncBatchNorm and sb[0].bias is None
    assert repr(sb[0]) == ("SyncBatchNorm(3, eps=1e-05, momentum=0.1, affine=True, bias=False, "
                           "track_running_stats=True)")


def test_group_norm_divisibility_message():
    with pytest.raises(ValueError, match=r"^num_channels \(5\) must be divisible by num_groups "
                                         r"\(2\)$"):
        nn.GroupNorm(2, 5)


# ------------------------------------------------------------------ container and padding reprs
def test_zero_pad_repr():
    assert repr(nn.ZeroPad1d((1, 2))) == "ZeroPad1d((1, 2))"
    assert repr(nn.ZeroPad2d(1)) == "ZeroPad2d((1, 1, 1, 1))"
    assert repr(nn.ZeroPad3d((1, 2, 3, 4, 5, 6))) == "ZeroPad3d((1, 2, 3, 4, 5, 6))"
    assert repr(nn.ConstantPad2d(1, 2.0)) == "ConstantPad2d(padding=(1, 1, 1, 1), value=2.0)"
    assert repr(nn.ReflectionPad1d(2)) == "ReflectionPad1d((2, 2))"


def test_parameter_list_and_dict_repr():
    # PyTorch prints the dtype for ParameterList, the legacy type name for ParameterDict
    pl = nn.ParameterList([nn.Parameter(pg.zeros(2)), pg.zeros(2, 3, dtype=pg.float64), "x"])
    assert repr(pl) == ("ParameterList(\n"
                        "    (0): Parameter containing: [portagrad.float32 of size 2]\n"
                        "    (1): Parameter containing: [portagrad.float64 of size 2x3]\n"
                        "    (2): Object of type: str\n)")
    pd = nn.ParameterDict({"a": nn.Parameter(pg.zeros(2)), "b": pg.zeros(2, 3, dtype=pg.float64),
                           "c": "x"})
    assert repr(pd) == ("ParameterDict(\n"
                        "    (a): Parameter containing: [portagrad.FloatTensor of size 2]\n"
                        "    (b): Parameter containing: [portagrad.DoubleTensor of size 2x3]\n"
                        "    (c): Object of type: str\n)")
    assert repr(nn.ParameterDict()) == "ParameterDict()"
    with pytest.raises(RuntimeError, match="ParameterDict should not be called."):
        pd(1)
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        pl(1)


def test_parameter_list_repr_shows_accelerator_device(device):
    if device == "cpu":
        pytest.skip("the device appears only off the CPU")
    pl = nn.ParameterList([pg.zeros(2, device=device)])
    pd = nn.ParameterDict({"a": pg.zeros(2, device=device)})
    # one entry: the repr is one line, as PyTorch's
    assert repr(pl) == (f"ParameterList(  (0): Parameter containing: [portagrad.float32 of size 2 "
                        f"({pg.device(device)})])")
    assert repr(pd) == (f"ParameterDict(  (a): Parameter containing: [{pd['a'].type()} of size 2 "
                        f"({pg.device(device)})])")


# ------------------------------------------------------------------ LSTM projections
def _fill(m: nn.Module) -> None:
    """Deterministic weights (the same in both libraries)."""
    with pg.no_grad():
        for i, (_, p) in enumerate(m.named_parameters()):
            k = pg.arange(p.numel(), dtype=pg.float64, device=p.device)
            p.copy_((0.3 * pg.sin(k * 0.7 + i)).reshape(p.shape))


_LSTM_PROJ_KEYS = [
    ("weight_ih_l0", (12, 2)), ("weight_hh_l0", (12, 2)), ("bias_ih_l0", (12,)),
    ("bias_hh_l0", (12,)), ("weight_hr_l0", (2, 3)), ("weight_ih_l0_reverse", (12, 2)),
    ("weight_hh_l0_reverse", (12, 2)), ("bias_ih_l0_reverse", (12,)),
    ("bias_hh_l0_reverse", (12,)), ("weight_hr_l0_reverse", (2, 3)), ("weight_ih_l1", (12, 4)),
    ("weight_hh_l1", (12, 2)), ("bias_ih_l1", (12,)), ("bias_hh_l1", (12,)),
    ("weight_hr_l1", (2, 3)), ("weight_ih_l1_reverse", (12, 4)),
    ("weight_hh_l1_reverse", (12, 2)), ("bias_ih_l1_reverse", (12,)),
    ("bias_hh_l1_reverse", (12,)), ("weight_hr_l1_reverse", (2, 3))]


def test_lstm_proj_size_against_torch_literals(device):
    m = nn.LSTM(2, 3, proj_size=2, num_layers=2, bidirectional=True).double().to(device)
    assert repr(m) == "LSTM(2, 3, proj_size=2, num_layers=2, bidirectional=True)"
    assert [(k, tuple(v.shape)) for k, v in m.state_dict().items()] == _LSTM_PROJ_KEYS
    assert m._flat_weights_names == [k for k, _ in _LSTM_PROJ_KEYS]
    m.flatten_parameters()
    _fill(m)
    x = pg.cos(pg.arange(6, dtype=pg.float64)).reshape(3, 1, 2).to(device).requires_grad_()
    o, (h, c) = m(x)
    assert o.shape == (3, 1, 4) and h.shape == (4, 1, 2) and c.shape == (4, 1, 3)
    (o.sum() + (h * h).sum() + c.sum()).backward()

    def close(t, want):
        np.testing.assert_allclose(t.detach().cpu().numpy().ravel(), want, rtol=1e-7, atol=1e-9)

    close(o, [-0.0819566362, 0.0926357022, -0.0773737067, 0.0349161149, -0.1260367886,
              0.1396530733, -0.0624746297, 0.027798931, -0.1492020008, 0.1637411474,
              -0.0392862059, 0.0177092875])
    close(h, [-0.0882508098, 0.0569889898, -0.0341802938, 0.0384342582, -0.1492020008,
              0.1637411474, -0.0773737067, 0.0349161149])
    close(c, [0.0932631318, 0.3387429378, 0.3633653993, -0.2863900952, 0.0375572948,
              0.0832432198, -0.4212162626, -0.5037015443, -0.3947649705, 0.1128344154,
              -0.1885949776, -0.4288483256])
    close(x.grad, [0.1576752015, 0.0286818546, 0.1281648576, 0.0396966336, 0.1266005324,
                   -0.024896044])
    close(m.weight_hr_l1_reverse.grad, [0.0986230634, -0.1928449278, -0.4742820374,
                                        0.1095397009, -0.2139899353, -0.5274649224])


def test_lstm_proj_size_checks():
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="proj_size should be a positive integer or zero"):
        nn.LSTM(3, 4, proj_size=-1)
    m = nn.LSTM(3, 4, proj_size=2)
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(1, 2, 2\), got "
                                           r"\[1, 2, 4\]"):
        m(pg.zeros(5, 2, 3), (pg.zeros(1, 2, 4), pg.zeros(1, 2, 4)))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size \(1, 2, 4\), got "
                                           r"\[1, 2, 2\]"):
        m(pg.zeros(5, 2, 3), (pg.zeros(1, 2, 2), pg.zeros(1, 2, 2)))
    out, (h, c) = m(pg.zeros(5, 3))  # unbatched
    assert out.shape == (5, 2) and h.shape == (1, 2) and c.shape == (1, 4)


@pytest.mark.parametrize("kw,shape,with_hx", [
    ({"proj_size": 2}, (5, 2, 3), False),
    ({"proj_size": 3, "num_layers": 2, "bidirectional": True, "bias": False, "batch_first": True,
      "hidden_size": 5}, (2, 4, 3), True),
    ({"proj_size": 1, "num_layers": 2}, (4, 3), True),
])
def test_lstm_proj_size_against_torch(kw, shape, with_hx):
    torch = pytest.importorskip("torch")
    kw = {"input_size": 3, "hidden_size": 4, **kw}
    tm = torch.nn.LSTM(**kw).double()
    pm = nn.LSTM(**kw).double()
    assert repr(pm) == repr(tm)
    pm.load_state_dict({k: pg.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    targs: list = [torch.tensor(x, requires_grad=True)]
    pargs: list = [pg.tensor(x, requires_grad=True)]
    if with_hx:
        lead = (kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1),)
        if len(shape) == 3:
            lead += (shape[0] if kw.get("batch_first") else shape[1],)
        h = rng.standard_normal(lead + (kw["proj_size"],))
        c = rng.standard_normal(lead + (kw["hidden_size"],))
        targs.append((torch.tensor(h), torch.tensor(c)))
        pargs.append((pg.tensor(h), pg.tensor(c)))
    to, (th, tc) = tm(*targs)
    po, (ph, pc) = pm(*pargs)
    for a, b in ((to, po), (th, ph), (tc, pc)):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)
    (to.sum() + th.pow(2).sum() + tc.sum()).backward()
    (po.sum() + ph.pow(2).sum() + pc.sum()).backward()
    np.testing.assert_allclose(pargs[0].grad.numpy(), targs[0].grad.numpy(), rtol=1e-9,
                               atol=1e-12)
    tgrads = {n: p.grad.numpy() for n, p in tm.named_parameters()}
    for n, p in pm.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tgrads[n], rtol=1e-9, atol=1e-12)


def test_norm_and_container_reprs_match_torch():
    torch = pytest.importorskip("torch")
    # the same constructor call on both libraries' nn
    cases = [("BatchNorm1d", (3,), {}), ("BatchNorm2d", (3,), {"bias": False}),
             ("BatchNorm3d", (4, 1e-3, None, False), {}),
             ("SyncBatchNorm", (2,), {"affine": False, "bias": False}),
             ("InstanceNorm1d", (3,), {"affine": True}), ("InstanceNorm2d", (3,), {"bias": False}),
             ("GroupNorm", (2, 4, 1e-3), {"bias": False}),
             ("LayerNorm", ([2, 3], 1e-6), {"bias": False}),
             ("LazyBatchNorm3d", (), {"affine": False}), ("ZeroPad2d", ((1, 2, 3, 4),), {}),
             ("LSTM", (3, 5), {"proj_size": 2, "bidirectional": True})]
    for name, args, kwargs in cases:
        assert repr(getattr(nn, name)(*args, **kwargs)) == \
            repr(getattr(torch.nn, name)(*args, **kwargs)), name
