"""``nn.utils.parametrize`` / ``parametrizations`` and the hook forms of weight and spectral
normalisation, ``stateless.functional_call``, ``skip_init``, the conv memory-format
conversions: values and gradients against PyTorch 2.13's (literals), state_dict layouts and
round trips, and training steps against torch itself where it is installed."""
from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest

import portagrad as pg
from portagrad import nn
from portagrad.nn.utils import parametrize
from portagrad.nn.utils.parametrizations import orthogonal, spectral_norm, weight_norm

W = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]
B = [0.1, -0.2]
X = [[1.0, 2.0, -1.0], [0.5, -0.5, 3.0]]
Y = [[-3.4, 2.55], [6.85, -1.825]]  # the plain Linear's output: weight norm leaves it unchanged


def _np(t: pg.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def close(a: pg.Tensor, b: object, tol: float = 1e-5) -> None:
    np.testing.assert_allclose(_np(a), np.asarray(b, dtype=np.float32), rtol=tol, atol=tol)


def linear(device: str) -> nn.Linear:
    m = nn.Linear(3, 2).to(device)
    with pg.no_grad():
        m.weight.copy_(pg.tensor(W))
        m.bias.copy_(pg.tensor(B))
    return m


def loss_backward(m: nn.Module, device: str) -> pg.Tensor:
    y = m(pg.tensor(X, device=device))
    (y ** 2).sum().backward()
    return y


# ------------------------------------------------------------------ weight norm
@pytest.mark.parametrize("dim,g,gg,gv", [
    (0, [[2.2912879], [1.6955825]], [[50.7465668], [11.7695532]],
     [[-11.0238094, 1.6976166, 3.604763], [-7.1369557, 10.2896738, -10.8440237]]),
    (1, [[1.5811388, 1.0307764, 2.1360009]], [[3.1227491, 22.7559071, 50.4856987]],
     [[-0.9375002, 1.6264725, 0.6287651], [0.3125, 6.5058813, 1.6767111]]),
    (None, 2.8504386, 47.793087,
     [[-8.3334618, -3.6830769, 14.3661499], [-21.8753853, 7.8332686, -3.4748087]]),
])
def test_weight_norm_parametrization(device, dim, g, gg, gv):
    m = weight_norm(linear(device), dim=dim)
    assert type(m).__name__ == "ParametrizedLinear"
    assert parametrize.type_before_parametrizations(m) is nn.Linear
    assert parametrize.is_parametrized(m) and parametrize.is_parametrized(m, "weight")
    assert not parametrize.is_parametrized(m, "bias")
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original0",
                                    "parametrizations.weight.original1"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "parametrizations.weight.original0",
                                                     "parametrizations.weight.original1"]
    P = m.parametrizations.weight
    close(P.original0, g)
    close(P.original1, W)
    close(m.weight, W)
    y = loss_backward(m, device)
    close(y, Y, 1e-5)
    close(P.original0.grad, gg, 1e-4)
    close(P.original1.grad, gv, 1e-4)


def test_weight_norm_state_dict_round_trip_and_legacy_keys(device):
    src = weight_norm(linear(device))
    with pg.no_grad():
        src.parametrizations.weight.original0.mul_(2.0)
    dst = weight_norm(nn.Linear(3, 2).to(device))
    dst.load_state_dict(src.state_dict())
    close(dst.weight, 2.0 * np.asarray(W))
    # a state_dict of the hook form (weight_g, weight_v) loads into the parametrized module
    sd = {"weight_g": pg.tensor([[1.0], [2.0]]), "weight_v": pg.tensor(W), "bias": pg.tensor(B)}
    res = dst.load_state_dict(sd)
    assert not res.missing_keys and not res.unexpected_keys
    close(dst.parametrizations.weight.original0, [[1.0], [2.0]])
    w = np.asarray(W)
    close(dst.weight, w / np.linalg.norm(w, axis=1, keepdims=True) * [[1.0], [2.0]])


def test_legacy_weight_norm(device):
    with pytest.warns(FutureWarning):
        m = nn.utils.weight_norm(linear(device))
    assert list(m.state_dict()) == ["bias", "weight_g", "weight_v"]
    assert "weight" not in m._parameters
    close(m.weight_g, [[2.2912879], [1.6955825]])
    y = loss_backward(m, device)
    close(y, Y)
    close(m.weight_g.grad, [[50.7465668], [11.7695532]], 1e-4)
    close(m.weight_v.grad, [[-11.0238094, 1.6976166, 3.604763],
                            [-7.1369557, 10.2896738, -10.8440237]], 1e-4)
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"), \
            pytest.warns(FutureWarning):
        nn.utils.weight_norm(m)
    with pg.no_grad():
        m.weight_g.mul_(0.5)
    with pytest.warns(FutureWarning):
        m2 = nn.utils.weight_norm(nn.Linear(3, 2).to(device))
    m2.load_state_dict(m.state_dict())
    m2(pg.tensor(X, device=device))
    close(m2.weight, 0.5 * np.asarray(W))
    nn.utils.remove_weight_norm(m2)
    assert isinstance(m2.weight, nn.Parameter) and list(m2.state_dict()) == ["bias", "weight"]
    close(m2.weight, 0.5 * np.asarray(W))
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(m2)


def test_remove_weight_norm_parametrization(device):
    m = weight_norm(linear(device))
    with pytest.raises(ValueError, match="Cannot leave unparametrized"):
        parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    parametrize.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and not hasattr(m, "parametrizations")
    assert isinstance(m.weight, nn.Parameter) and list(m.state_dict()) == ["bias", "weight"]
    close(m.weight, W)


# ------------------------------------------------------------------ spectral norm
U0, V0 = [0.6, 0.8], [0.0, 0.6, 0.8]


def test_legacy_spectral_norm_train_and_eval(device):
    m = nn.utils.spectral_norm(linear(device))
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert m.state_dict()._metadata[""]["spectral_norm"] == {"weight.version": 1}
    with pg.no_grad():
        m.weight_u.copy_(pg.tensor(U0))
        m.weight_v.copy_(pg.tensor(V0))
    y = loss_backward(m, device)
    close(m.weight_u, [0.8102244, 0.5861198])
    close(m.weight_v, [0.9012626, -0.2403367, 0.360505])
    close(y, [[-1.9083775, 1.378011], [3.9732995, -1.1324611]], 1e-4)
    close(m.weight_orig.grad, [[-18.7266674, -1.6425123, 8.3433456],
                               [-12.6802969, 7.4426136, -10.9252272]], 1e-3)
    m.eval()
    u, v = _np(m.weight_u).copy(), _np(m.weight_v).copy()
    y2 = m(pg.tensor(X, device=device))
    np.testing.assert_array_equal(_np(m.weight_u), u)
    np.testing.assert_array_equal(_np(m.weight_v), v)
    close(y2, [[-1.9083775, 1.378011], [3.9732995, -1.1324611]], 1e-4)
    m2 = nn.utils.spectral_norm(nn.Linear(3, 2).to(device))
    m2.load_state_dict(m.state_dict())
    close(m2.weight_u, u)
    nn.utils.remove_spectral_norm(m2)
    assert list(m2.state_dict()) == ["bias", "weight"]
    m2.load_state_dict(m2.state_dict())  # the load pre-hook went with the rest
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        nn.utils.remove_spectral_norm(m2)


def test_spectral_norm_parametrization_train_and_eval(device):
    m = spectral_norm(linear(device))
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original",
                                    "parametrizations.weight.0._u",
                                    "parametrizations.weight.0._v"]
    sn = m.parametrizations.weight[0]
    # 15 power iterations at registration: close to the top singular vectors already
    s = np.linalg.svd(np.asarray(W))[1][0]
    close(pg.vdot(sn._u, pg.mv(m.parametrizations.weight.original, sn._v)), s, 1e-3)
    with pg.no_grad():
        sn._u.copy_(pg.tensor(U0))
        sn._v.copy_(pg.tensor(V0))
    y = loss_backward(m, device)
    close(sn._u, [0.9119215, -0.4103647])
    close(sn._v, [-0.0674466, -0.4287676, 0.9008937])
    close(y, [[-1.3792189, 0.9622434], [2.9527793, -0.8867802]], 1e-4)
    close(m.parametrizations.weight.original.grad,
          [[0.7159431, 0.4496419, 0.1876192], [0.1533565, 0.1883476, 0.7475834]], 1e-3)
    m.eval()
    u = _np(sn._u).copy()
    m(pg.tensor(X, device=device))
    m.weight  # noqa: B018 (an access runs the parametrization)
    np.testing.assert_array_equal(_np(sn._u), u)
    m.train()
    m.weight  # noqa: B018
    assert not np.array_equal(_np(sn._u), u)


def test_spectral_norm_dim_default_conv_transpose(device):
    m = spectral_norm(nn.ConvTranspose2d(2, 3, 2).to(device))
    assert m.parametrizations.weight[0].dim == 1
    assert m.parametrizations.weight[0]._v.shape == (2 * 2 * 2,) or \
        m.parametrizations.weight[0]._u.shape == (3,)
    m2 = nn.utils.spectral_norm(nn.ConvTranspose2d(2, 3, 2).to(device))
    assert m2.weight_u.shape == (3,) and m2.weight_v.shape == (8,)


# ------------------------------------------------------------------ orthogonal
WSQ = [[2.0, -1.0, 0.5], [1.0, 3.0, -0.5], [0.0, 1.0, 1.5]]
C = [[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0], [0.25, -2.0, 1.0]]
Q_WSQ = [[0.8944271, -0.4260064, 0.1360828], [0.4472136, 0.8520128, -0.2721655],
         [0.0, 0.3042903, 0.9525793]]


@pytest.mark.parametrize("orth_map,grad", [
    ("matrix_exp", [[0.0, 0.0, 0.0], [-3.2144074, 0.0, 0.0], [-2.0368884, -0.795347, 0.0]]),
    ("cayley", [[0.0, 0.0, 0.0], [-3.2144074, 0.0, 0.0], [-2.0368881, -0.795347, 0.0]]),
    ("householder", [[0.0, 0.0, 0.0], [-6.4288149, 0.0, 0.0], [-4.0737762, -1.590694, 0.0]]),
])
def test_orthogonal_square(device, orth_map, grad):
    m = nn.Linear(3, 3, bias=False).to(device)
    with pg.no_grad():
        m.weight.copy_(pg.tensor(WSQ))
    orthogonal(m, orthogonal_map=orth_map)
    assert list(m.state_dict()) == ["parametrizations.weight.original",
                                    "parametrizations.weight.0.base"]
    P = m.parametrizations.weight
    close(P.original, -np.eye(3))
    w = m.weight
    close(w, Q_WSQ, 1e-5)
    (w * pg.tensor(C, device=device)).sum().backward()
    close(P.original.grad, grad, 1e-4)


@pytest.mark.parametrize("orth_map", ["matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
def test_orthogonal_rectangular_and_assign(device, orth_map, shape):
    m = nn.Linear(shape[1], shape[0], bias=False).to(device)
    orthogonal(m, orthogonal_map=orth_map)
    w = _np(m.weight)
    gram = w.T @ w if shape[0] > shape[1] else w @ w.T
    np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-5)
    # an assigned orthogonal matrix is what the parametrization then gives
    q = np.linalg.qr(np.random.default_rng(0).standard_normal((max(shape), min(shape))))[0]
    q = q if shape[0] > shape[1] else q.T
    m.weight = pg.tensor(q.astype(np.float32), device=device)
    close(m.weight, q, 1e-5)
    with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
        orthogonal(nn.Linear(3, 3), orthogonal_map="qr")
    with pytest.raises(ValueError, match="Expected a matrix"):
        orthogonal(nn.Linear(3, 3), name="bias")


# ------------------------------------------------------------------ register_parametrization
class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).mT

    def right_inverse(self, A):
        return A.triu()


class Scale(nn.Module):
    def forward(self, X):
        return 2.0 * X

    def right_inverse(self, A):
        return A / 2.0


class Split(nn.Module):
    def forward(self, a, b):
        return a + b

    def right_inverse(self, A):
        return A * 0.25, A * 0.75


def test_register_parametrization_chain_and_setter(device):
    m = nn.Linear(3, 3).to(device)
    with pg.no_grad():
        m.weight.copy_(pg.tensor(WSQ))
    orig = m.weight
    parametrize.register_parametrization(m, "weight", Symmetric())
    assert m.parametrizations.weight.original is orig  # the same parameter, right_inverse'd
    close(orig, np.triu(WSQ))
    parametrize.register_parametrization(m, "weight", Scale())
    assert len(m.parametrizations.weight) == 2
    w = np.triu(WSQ) + np.triu(WSQ, 1).T
    close(m.weight, 2 * w)
    # the optimizer sees `original`; gradients flow to it
    opt = pg.optim.SGD(m.parameters(), lr=0.1)
    assert any(p is orig for p in m.parameters())
    m.weight.sum().backward()
    close(orig.grad, np.triu(np.full((3, 3), 4.0)) - 2 * np.eye(3))
    opt.step()
    # assigning goes through right_inverse (Scale's, then Symmetric's)
    m.weight = pg.tensor(np.diag([2.0, 4.0, 6.0]).astype(np.float32), device=device)
    close(orig, np.diag([1.0, 2.0, 3.0]))
    close(m.weight, np.diag([2.0, 4.0, 6.0]))
    with pytest.raises(ValueError, match="may not change the shape"):
        parametrize.register_parametrization(m, "bias", _Flatten())
    with pytest.raises(ValueError, match="does not have a parameter"):
        parametrize.register_parametrization(m, "nothing", Scale())
    parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    assert type(m) is nn.Linear
    close(m.weight, np.diag([1.0, 2.0, 3.0]))


class _Flatten(nn.Module):
    def forward(self, X):
        return X.reshape(1, -1)


def test_tuple_right_inverse_buffer_and_cached(device):
    m = nn.BatchNorm1d(3).to(device)
    parametrize.register_parametrization(m, "running_var", Split())
    assert "parametrizations.running_var.original0" in m.state_dict()
    assert not any("running_var" in n for n, _ in m.named_parameters())
    close(m.parametrizations.running_var.original1, [0.75] * 3)
    close(m.running_var, [1.0] * 3)
    lin = parametrize.register_parametrization(linear(device), "weight", Scale())
    calls = []
    lin.parametrizations.weight[0].register_forward_hook(lambda *a: calls.append(1))
    with parametrize.cached():
        a, b = lin.weight, lin.weight
        assert a is b
    assert len(calls) == 1
    assert lin.weight is not a and len(calls) == 2


def test_deepcopy_pickle_and_transfer(device):
    m = weight_norm(linear(device))
    m2 = copy.deepcopy(m)
    assert type(m2).__name__ == "ParametrizedLinear"
    close(m2.weight, W)
    assert m2.parametrizations.weight.original0 is not m.parametrizations.weight.original0
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(m)
    to = nn.Linear(3, 2).to(device)
    parametrize.transfer_parametrizations_and_params(m, to)
    assert parametrize.is_parametrized(to, "weight")
    assert to.parametrizations.weight.original1 is m.parametrizations.weight.original1
    close(to.weight, W)


# ------------------------------------------------------------------ stateless, skip_init, formats
class _AddBuf(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.register_buffer("count", pg.zeros(()))

    def forward(self, x, fail=False):
        self.count = self.count + 1
        if fail:
            raise ValueError("boom")
        return self.lin(x)


def test_stateless_functional_call(device):
    m = _AddBuf().to(device)
    w0 = m.lin.weight
    params = {"lin.weight": pg.eye(2, device=device), "lin.bias": pg.zeros(2, device=device),
              "count": pg.zeros((), device=device)}
    x = pg.tensor([[1.0, 2.0]], device=device)
    with pytest.warns(FutureWarning, match="functional_call"):
        y = nn.utils.stateless.functional_call(m, params, (x,))
    close(y, [[1.0, 2.0]])
    assert m.lin.weight is w0 and float(m.count) == 0.0
    close(params["count"], 1.0)  # the module's in-place update lands in the dict
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="boom"):
            nn.utils.stateless.functional_call(m, params, x, {"fail": True})
        assert m.lin.weight is w0 and "lin.weight" not in m.__dict__
        with pytest.raises(RuntimeError, match="Missing key"):
            nn.utils.stateless.functional_call(m, {"lin.weight": w0}, x, strict=True)


def test_skip_init_and_memory_format(device):
    state = pg.get_rng_state()
    m = nn.utils.skip_init(nn.Linear, 4, 3, device=device)
    assert pg.equal(pg.get_rng_state(), state)
    assert m.weight.shape == (3, 4) and m.weight.device == pg.device(device)
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    with pytest.raises(RuntimeError, match="Expected a Module"):
        nn.utils.skip_init(int)
    conv = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU()).to(device)
    assert nn.utils.convert_conv2d_weight_memory_format(conv, pg.channels_last) is conv
    with pytest.raises(RuntimeError, match="required rank 5"):
        nn.utils.convert_conv2d_weight_memory_format(conv, pg.channels_last_3d)
    assert nn.utils.convert_conv3d_weight_memory_format(conv, pg.channels_last) is conv


# ------------------------------------------------------------------ training against torch
@pytest.mark.parametrize("kind", ["wn", "wn_legacy", "sn", "sn_legacy", "orth_cayley",
                                  "orth_householder"])
def test_sgd_steps_match_torch(device, kind):
    torch = pytest.importorskip("torch")
    mods = []
    for lib, dev in ((torch, "cpu"), (pg, device)):
        m = lib.nn.Linear(3, 2)
        with lib.no_grad():
            m.weight.copy_(lib.tensor(W))
            m.bias.copy_(lib.tensor(B))
        m = m.to(dev)
        U = lib.nn.utils
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if kind == "wn":
                U.parametrizations.weight_norm(m)
            elif kind == "wn_legacy":
                U.weight_norm(m)
            elif kind == "sn":
                U.parametrizations.spectral_norm(m)
            elif kind == "sn_legacy":
                U.spectral_norm(m)
            else:
                U.parametrizations.orthogonal(m, orthogonal_map=kind[5:])
        mods.append(m)
    tm, pm = mods
    assert list(tm.state_dict()) == list(pm.state_dict())
    # the random parts (spectral-norm u/v, the orthogonal base) from torch's module
    pm.load_state_dict({k: pg.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    topt = torch.optim.SGD(tm.parameters(), lr=0.05)
    popt = pg.optim.SGD(pm.parameters(), lr=0.05)
    for _ in range(3):
        yt = tm(torch.tensor(X))
        yp = pm(pg.tensor(X, device=device))
        close(yp, yt.detach().numpy(), 1e-4)
        (yt ** 2).sum().backward()
        (yp ** 2).sum().backward()
        topt.step(), popt.step()
        topt.zero_grad(), popt.zero_grad()
    for k, v in tm.state_dict().items():
        close(pm.state_dict()[k], v.numpy(), 1e-4)


# ------------------------------------------------------------------ further behaviour
class _NoInverse(nn.Module):
    def forward(self, X):
        return X * 3.0


class _IntInverse(nn.Module):
    def forward(self, X):
        return X

    def right_inverse(self, X):
        return 3


def test_parametrize_errors_nesting_and_own_classes(device):
    m = parametrize.register_parametrization(linear(device), "weight", _NoInverse())
    with pytest.raises(RuntimeError, match="_NoInverse does not implement right_inverse"):
        m.weight = pg.zeros(2, 3, device=device)
    with pytest.raises(ValueError, match="must return a Tensor or a Sequence of tensors"):
        parametrize.register_parametrization(linear(device), "weight", _IntInverse())
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        parametrize.remove_parametrizations(linear(device), "weight")
    # each parametrized module has a class of its own
    other = parametrize.register_parametrization(linear(device), "weight", _NoInverse())
    assert type(other) is not type(m) and type(other).__name__ == type(m).__name__
    parametrize.register_parametrization(m, "bias", _NoInverse())
    assert sorted(m.parametrizations.keys()) == ["bias", "weight"]
    with parametrize.cached():
        with parametrize.cached():
            a = m.weight
        assert m.weight is a  # the inner block's exit keeps the outer block's values
    assert m.weight is not a
    parametrize.remove_parametrizations(m, "weight")
    assert parametrize.is_parametrized(m) and not parametrize.is_parametrized(m, "weight")
    assert isinstance(m.weight, nn.Parameter)
    close(m.weight, 3.0 * np.asarray(W))
    parametrize.remove_parametrizations(m, "bias", leave_parametrized=False)
    assert type(m) is nn.Linear and not hasattr(m, "parametrizations")
    close(m.bias, B)
    assert type(copy.deepcopy(other)) is type(other)


def test_legacy_spectral_norm_loads_version0_checkpoint(device):
    # version 0 saved the normalised weight and u, without v: v is solved for on load
    w = np.asarray(W, dtype=np.float32)
    sd = {"weight_orig": pg.tensor(w), "weight": pg.tensor(w / 3.0),
          "weight_u": pg.tensor([0.6, 0.8]), "bias": pg.tensor(B)}
    m = nn.utils.spectral_norm(nn.Linear(3, 2).to(device))
    res = m.load_state_dict(sd)
    assert not res.missing_keys and not res.unexpected_keys
    m.eval()
    m(pg.tensor(X, device=device))
    close(m.weight, w / 3.0, 1e-4)
    close(pg.dot(m.weight_u, pg.mv(m.weight_orig, m.weight_v)), 3.0, 1e-4)


def test_stateless_tied_weights_and_strict_message(device):
    m = nn.Sequential(nn.Linear(2, 2, bias=False), nn.Linear(2, 2, bias=False)).to(device)
    m[1].weight = m[0].weight
    x = pg.ones(1, 2, device=device)
    eye = pg.eye(2, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the tied name takes the given value too
        close(nn.utils.stateless.functional_call(m, {"0.weight": eye}, x), [[1.0, 1.0]])
        with pytest.raises(ValueError, match=r"multiple values for keys \['0.weight', "
                                             r"'1.weight'\], which are tied"):
            nn.utils.stateless.functional_call(m, {"0.weight": eye, "1.weight": 2 * eye}, x)
        with pytest.raises(RuntimeError) as info:
            nn.utils.stateless.functional_call(m, {"0.weight": eye, "zz": eye}, x,
                                               tie_weights=False, strict=True)
        assert str(info.value) == ("Error(s) in reparametrizing for Sequential:\n\t"
                                   "Unexpected key(s): 'zz'.\n\tMissing key(s): '1.weight'.")
        with pytest.raises(TypeError, match="is not an instance of torch.Tensor"):
            nn.utils.stateless.functional_call(m, {"0.weight": 3}, x)
    assert m[0].weight is m[1].weight
