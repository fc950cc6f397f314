"""``nn.Module`` behaviour: registration, iteration, state_dict, modes, conversion, hooks, repr,
``Parameter`` and ``DataParallel`` (plus everyday Module examples)."""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import portagrad as pg
from portagrad import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.add_module("conv1", nn.Conv2d(3, 16, 5, padding=2))
        self.conv2 = nn.Conv2d(16, 20, 5)

    def forward(self, x):
        return self.conv2(pg.relu(self.conv1(x)))


class MyDataParallel(nn.DataParallel):
    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.module, name)


def test_parameter_basics():
    p = nn.Parameter(pg.ones(2))
    assert isinstance(p, pg.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf
    assert repr(p).startswith("Parameter containing:\ntensor(")
    q = nn.Parameter(pg.ones(2), requires_grad=False)
    assert not q.requires_grad
    t = pg.zeros(3)
    shared = nn.Parameter(t)
    shared.data.fill_(5)
    assert t.tolist() == [5.0, 5.0, 5.0]  # shares storage with data


def test_seed_net_named_parameters():
    net = Net()
    names = [n for n, p in net.named_parameters() if p.requires_grad]
    assert names == ["conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias"]
    assert net.conv1.weight.shape == (16, 3, 5, 5)
    assert [n for n, _ in net.named_children()] == ["conv1", "conv2"]
    assert [n for n, _ in net.named_modules()] == ["", "conv1", "conv2"]
    assert len(list(net.parameters())) == 4
    assert len(list(net.children())) == 2 and len(list(net.modules())) == 3
    out = net(pg.randn(1, 3, 8, 8))
    assert out.shape == (1, 20, 4, 4)


def test_seed_custom_loss_and_grad():
    def my_loss(output, target):
        return pg.mean((output - target) ** 2)

    model = nn.Linear(2, 2)
    x = pg.randn(1, 2)
    target = pg.randn(1, 2)
    loss = my_loss(model(x), target)
    loss.backward()
    out = (x.numpy() @ model.weight.detach().numpy().T + model.bias.detach().numpy())
    ref = 2 * (out - target.numpy()).T @ x.numpy() / 2
    np.testing.assert_allclose(model.weight.grad.numpy(), ref, rtol=1e-5, atol=1e-6)


def test_buffers_and_persistent():
    m = nn.Module()
    m.register_buffer("a", pg.zeros(2))
    m.register_buffer("b", pg.ones(1), persistent=False)
    m.register_buffer("c", None)
    assert [n for n, _ in m.named_buffers()] == ["a", "b"]
    assert list(m.state_dict().keys()) == ["a"]
    m.a = pg.full((2,), 3.0)  # reassigning a buffer name keeps it a buffer
    assert m._buffers["a"].tolist() == [3.0, 3.0]
    m.d = nn.Buffer(pg.ones(1), persistent=False)
    assert "d" in m._buffers and "d" not in m.state_dict()
    del m.a
    assert "a" not in m._buffers


def test_registration_errors():
    m = nn.Module()
    with pytest.raises(KeyError, match="contain"):
        m.register_buffer("a.b", pg.zeros(1))
    with pytest.raises(KeyError, match="empty string"):
        m.register_parameter("", None)
    with pytest.raises(TypeError, match="cannot assign 'int' object to buffer 'x'"):
        m.register_buffer("x", 3)  # type: ignore[arg-type]
    m.w = nn.Parameter(pg.ones(1))
    with pytest.raises(TypeError, match=r"cannot assign 'portagrad.FloatTensor' as parameter 'w' "
                                        r"\(torch.nn.Parameter or None expected\)"):
        m.w = pg.ones(1)
    m.w = None
    assert m.w is None and "w" in m._parameters
    with pytest.raises(KeyError, match="attribute 'w' already exists"):
        m.register_buffer("w", pg.ones(1))
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("z", 3)  # type: ignore[arg-type]
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'nope'"):
        m.nope  # noqa: B018 - the access itself must raise
    x = pg.ones(1, requires_grad=True) * 2
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor"):
        m.register_parameter("q", nn.Parameter(pg.ones(1)) if False else _nonleaf_param(x))

    class Early(nn.Module):
        def __init__(self):
            self.p = nn.Parameter(pg.ones(1))

    with pytest.raises(AttributeError, match="cannot assign parameters before Module.__init__"):
        Early()
    with pytest.raises(NotImplementedError, match='missing the required "forward" function'):
        nn.Module()(1)


def _nonleaf_param(x):
    p = nn.Parameter(pg.ones(1))
    p._grad_fn = x.grad_fn  # simulate a non-leaf Parameter
    return p


def test_state_dict_roundtrip_and_errors():
    a, b = Net(), Net()
    sd = a.state_dict()
    assert list(sd.keys()) == ["conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias"]
    assert not sd["conv1.weight"].requires_grad
    res = b.load_state_dict(sd)
    assert repr(res) == "<All keys matched successfully>"
    np.testing.assert_array_equal(b.conv2.weight.detach().numpy(), a.conv2.weight.detach().numpy())
    bad = OrderedDict(sd)
    del bad["conv1.bias"]
    bad["extra.w"] = pg.zeros(1)
    with pytest.raises(RuntimeError) as ei:
        b.load_state_dict(bad)
    msg = str(ei.value)
    assert msg.startswith("Error(s) in loading state_dict for Net:\n\t")
    assert 'Missing key(s) in state_dict: "conv1.bias". ' in msg
    assert 'Unexpected key(s) in state_dict: "extra.w". ' in msg
    res = b.load_state_dict(bad, strict=False)
    assert res.missing_keys == ["conv1.bias"] and res.unexpected_keys == ["extra.w"]
    wrong = OrderedDict(sd)
    wrong["conv1.bias"] = pg.zeros(3)
    with pytest.raises(RuntimeError, match=r"size mismatch for conv1.bias: copying a param with "
                                           r"shape portagrad.Size\(\[3\]\) from checkpoint"):
        b.load_state_dict(wrong, strict=False)


def test_load_state_dict_recurses_through_nested_modules():
    # load() calls itself for each child: grandchildren must be reached and their keys checked
    def make():
        return nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Linear(3, 3), nn.Sequential(nn.Linear(3, 1))))
    src, dst = make(), make()
    sd = src.state_dict()
    assert "2.weight" not in sd and "1.1.0.weight" in sd
    assert repr(dst.load_state_dict(sd)) == "<All keys matched successfully>"
    np.testing.assert_array_equal(dst[1][1][0].weight.detach().numpy(), src[1][1][0].weight.detach().numpy())
    del sd["1.1.0.bias"]
    sd["1.1.0.extra"] = pg.zeros(1)
    res = dst.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["1.1.0.bias"] and res.unexpected_keys == ["1.1.0.extra"]


def test_state_dict_across_devices(device):
    src = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    dst = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).to(device)
    w_before = dst[0].weight
    dst.load_state_dict(src.state_dict())
    assert dst[0].weight is w_before and dst[0].weight.device == pg.device(device)
    np.testing.assert_allclose(dst[0].weight.detach().cpu().numpy(),
                               src[0].weight.detach().numpy())
    back = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    back.load_state_dict(dst.state_dict())
    np.testing.assert_allclose(back[0].bias.detach().numpy(), src[0].bias.detach().numpy())
    assert int(back[1].num_batches_tracked) == 0


def test_to_keeps_parameter_objects(device):
    m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    params = list(m.parameters())
    m(pg.randn(4, 2)).sum().backward()
    assert m.to(device) is m
    assert all(p is q for p, q in zip(params, m.parameters()))
    assert all(p.device == pg.device(device) for p in m.parameters())
    assert all(p.grad.device == pg.device(device) for p in m.parameters())
    assert m[1].running_mean.device == pg.device(device)
    out = m(pg.randn(4, 2, device=device))
    assert out.device == pg.device(device)
    m.double()
    assert m[0].weight.dtype is pg.float64 and m[1].num_batches_tracked.dtype is pg.int64
    m.float().cpu()
    assert m[0].weight.device.type == "cpu" and m[0].weight.dtype is pg.float32
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point"):
        m.to(pg.int32)


def test_train_eval_zero_grad_requires_grad_apply():
    m = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
    assert m.training and m[1].training
    m.eval()
    assert not m.training and not m[1].training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train(1)  # type: ignore[arg-type]
    m.train()
    m[0](pg.ones(1, 2)).sum().backward()
    m.zero_grad(set_to_none=False)
    assert m[0].weight.grad.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    m.zero_grad()
    assert m[0].weight.grad is None
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "Dropout", "Sequential"]


def test_repr():
    net = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                        nn.Linear(16, 10, bias=False))
    assert repr(net) == (
        "Sequential(\n"
        "  (0): Conv2d(1, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
        "  (1): ReLU()\n"
        "  (2): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)\n"
        "  (3): Flatten(start_dim=1, end_dim=-1)\n"
        "  (4): Linear(in_features=16, out_features=10, bias=False)\n"
        ")")
    assert repr(nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.Tanh()])) == (
        "ModuleList(\n  (0-1): 2 x ReLU()\n  (2): Tanh()\n)")


def test_forward_hooks():
    m = nn.Linear(2, 2)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: calls.append(("pre", len(args))))
    h2 = m.register_forward_hook(lambda mod, args, out: out * 0)
    out = m(pg.ones(1, 2))
    assert calls == [("pre", 1)] and out.tolist() == [[0.0, 0.0]]
    h2.remove()
    assert m(pg.ones(1, 2)).abs().sum().item() > 0
    h1.remove()
    m(pg.ones(1, 2))
    assert len(calls) == 2
    m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    assert np.allclose(m(pg.ones(1, 2)).detach().numpy(), m.bias.detach().numpy())


def test_full_backward_hooks(device):
    m = nn.Linear(3, 2).to(device)
    x = pg.randn(4, 3, device=device, requires_grad=True)
    got = {}

    def pre(mod, grad_output):
        got["pre"] = grad_output
        return (grad_output[0] * 2,)

    def hook(mod, grad_input, grad_output):
        got["in"], got["out"] = grad_input, grad_output

    hp = m.register_full_backward_pre_hook(pre)
    hh = m.register_full_backward_hook(hook)
    m(x).sum().backward()
    assert isinstance(got["in"], tuple) and isinstance(got["out"], tuple)
    assert got["pre"][0].shape == (4, 2)
    np.testing.assert_allclose(got["out"][0].cpu().numpy(), np.full((4, 2), 2.0))
    w = m.weight.detach().cpu().numpy()
    np.testing.assert_allclose(got["in"][0].cpu().numpy(), np.full((4, 2), 2.0) @ w, rtol=1e-5)
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.full((4, 2), 2.0) @ w, rtol=1e-5)
    hp.remove()
    hh.remove()
    got.clear()
    x.grad = None
    m(x).sum().backward()
    assert not got
    # a hook replacing grad_input; no input requiring grad still calls the hook with None
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0,))
    x.grad = None
    m(x).sum().backward()
    assert float(x.grad.abs().sum()) == 0.0
    calls = []
    m2 = nn.Linear(3, 2)
    m2.register_full_backward_hook(lambda mod, gi, go: calls.append(gi))
    m2(pg.randn(2, 3)).sum().backward()
    assert calls == [(None,)]


def test_containers():
    seq = nn.Sequential(OrderedDict([("a", nn.Linear(2, 3)), ("b", nn.ReLU())]))
    assert isinstance(seq.a, nn.Linear) and len(seq) == 2
    assert isinstance(seq[-1], nn.ReLU) and isinstance(seq[:1], nn.Sequential)
    seq.append(nn.Linear(3, 1))
    assert seq(pg.ones(4, 2)).shape == (4, 1)
    ml = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
    assert len(list(ml.parameters())) == 6
    del ml[0]
    assert len(ml) == 2 and [n for n, _ in ml.named_children()] == ["0", "1"]
    md = nn.ModuleDict({"x": nn.Linear(1, 2)})
    md["y"] = nn.ReLU()
    assert list(md.keys()) == ["x", "y"] and "x" in md
    pl = nn.ParameterList([pg.ones(2), nn.Parameter(pg.zeros(1))])
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(list(pl.parameters())) == 2
    with pytest.raises(IndexError, match="index 5 is out of range"):
        seq[5]


def test_shared_parameters_listed_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, lin)
    assert len(list(seq.parameters())) == 2
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias"]


def test_data_parallel_single_device(device):
    model = nn.Linear(3, 2).to(device)
    dp = MyDataParallel(model, device_ids=[device])
    x = pg.randn(5, 3, device=device)
    out = dp(x)
    assert out.shape == (5, 2) and out.device == pg.device(device)
    np.testing.assert_allclose(out.detach().cpu().numpy(), model(x).detach().cpu().numpy(),
                               rtol=1e-6)
    assert dp.in_features == 3  # forwarded to .module by the subclass
    assert list(dp.state_dict().keys()) == ["module.weight", "module.bias"]
    out.sum().backward()
    assert model.weight.grad is not None


def test_data_parallel_cpu_module_runs_as_is():
    model = nn.Linear(3, 2)
    dp = nn.DataParallel(model)
    assert dp(pg.ones(2, 3)).shape == (2, 2)
    with pytest.raises(AttributeError):
        dp.in_features  # noqa: B018 - plain DataParallel does not forward attributes


def test_data_parallel_two_devices(opencl_devices):
    if len(opencl_devices) < 2:
        pytest.skip("needs two OpenCL devices")
    pg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).to(opencl_devices[0])
    x = pg.randn(6, 3, device=opencl_devices[0])
    dp = nn.DataParallel(model, device_ids=opencl_devices[:2])
    out = dp(x)
    assert out.device == pg.device(opencl_devices[0])
    ref = model(x)
    np.testing.assert_allclose(out.detach().cpu().numpy(), ref.detach().cpu().numpy(), rtol=1e-5,
                               atol=1e-6)
    out.sum().backward()
    g_dp = model[0].weight.grad.cpu().numpy().copy()
    model.zero_grad()
    ref.sum().backward()
    np.testing.assert_allclose(g_dp, model[0].weight.grad.cpu().numpy(), rtol=1e-5, atol=1e-6)


def test_get_submodule_parameter():
    net = Net()
    assert net.get_submodule("conv1") is net.conv1
    assert net.get_parameter("conv2.bias") is net.conv2.bias
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        net.get_submodule("nope")


def test_deepcopy_and_pickle():
    import copy
    import pickle

    net = Net()
    c = copy.deepcopy(net)
    assert c.conv1.weight is not net.conv1.weight
    assert isinstance(c.conv1.weight, nn.Parameter)
    np.testing.assert_array_equal(c.conv1.weight.detach().numpy(), net.conv1.weight.detach().numpy())
    p = pickle.loads(pickle.dumps(net))
    assert isinstance(p.conv2.bias, nn.Parameter)
