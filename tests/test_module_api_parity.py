"""``nn.Module`` API parity with PyTorch 2.13: ``nn.Buffer``, ``named_modules``' memo,
``to_empty``, ``to()``'s keyword check, ``always_call`` forward hooks, the global (module-wide)
forward, backward and registration hooks, mixing legacy and full backward hooks,
``Sequential +=``, ``ParameterList.extend``, the dict methods of ``ParameterDict`` and
``Unflatten``'s argument checks. Expected values are PyTorch's, written out."""
from __future__ import annotations

import warnings
from collections import OrderedDict

import pytest

import portagrad as pg
from portagrad import nn
from portagrad.nn.modules import module as nn_module


class _Raising(nn.Module):
    def forward(self, x: pg.Tensor, y: int = 1) -> pg.Tensor:
        raise ValueError("boom")


# ------------------------------------------------------------------ nn.Buffer
def test_buffer_is_a_marked_plain_tensor(device: str) -> None:
    x = pg.ones(2, device=device, requires_grad=True)
    b = nn.Buffer(x, persistent=False)
    assert type(b) is pg.Tensor
    assert isinstance(b, nn.Buffer) and not isinstance(x, nn.Buffer)
    assert b is not x and b.requires_grad and b.is_leaf
    assert b.data_ptr() == x.data_ptr()
    assert b.persistent is False
    p = nn.Parameter(pg.ones(1, device=device))
    assert type(nn.Buffer(p)) is pg.Tensor and not isinstance(p, nn.Buffer)


def test_buffer_persistence_rules(device: str) -> None:
    b = nn.Buffer(pg.ones(1, device=device), persistent=False)
    m = nn.Module()
    m.register_buffer("a", b)  # the argument (persistent=True) wins
    m.c = b  # assignment uses the Buffer's own flag
    assert m.a is b and type(m.a) is pg.Tensor
    assert list(m.state_dict()) == ["a"]
    assert list(m._buffers) == ["a", "c"]
    m.register_buffer("x", pg.ones(1, device=device), persistent=False)
    m.x = nn.Buffer(pg.ones(1, device=device))
    assert list(m.state_dict()) == ["a", "x"]


# ------------------------------------------------------------------ iteration, conversion
def test_named_modules_memo_holds_modules(device: str) -> None:
    lin = nn.Linear(2, 2, device=device)
    net = nn.Sequential(lin, nn.ReLU(), lin, nn.Sequential(nn.Linear(2, 3, device=device), lin))
    memo = {lin}
    assert [n for n, _ in net.named_modules(memo=memo)] == ["", "1", "3", "3.0"]
    assert len(memo) == 5
    memo2: set = set()
    list(nn.Sequential(nn.ReLU()).named_modules(memo2))
    assert sorted(type(x).__name__ for x in memo2) == ["ReLU", "Sequential"]


def test_to_empty(device: str) -> None:
    m = nn.BatchNorm1d(2, device=device)
    w = m.weight
    assert m.to_empty(device=device) is m
    assert m.weight is w and type(m.weight) is nn.Parameter and m.weight.requires_grad
    assert m.running_mean.shape == (2,) and m.num_batches_tracked.dtype == pg.int64
    assert m.weight.device == pg.device(device)
    s = nn.Sequential(nn.Linear(2, 3, device=device))
    s.to_empty(device=device, recurse=False)
    assert s[0].weight.shape == (3, 2)
    with pytest.raises(TypeError, match=r"takes 1 positional argument but 2 were given"):
        m.to_empty(device)  # type: ignore[misc]


def test_to_rejects_unknown_keyword(device: str) -> None:
    m = nn.Linear(1, 1, device=device)
    with pytest.raises(TypeError, match=r"^to\(\) received an invalid combination of arguments - "
                       r"got \(foo=int, \), but expected one of:\n \* \(torch.device device"):
        m.to(foo=1)


# ------------------------------------------------------------------ forward hooks
def test_always_call_forward_hooks(device: str) -> None:
    x = pg.tensor(1., device=device)
    seen: list = []
    m = _Raising()
    m.register_forward_hook(lambda mod, a, o: seen.append(("always", a, o)), always_call=True)
    m.register_forward_hook(lambda mod, a, o: seen.append("not"))
    m.register_forward_hook(lambda mod, a, k, o: seen.append(("kw", k, o)), with_kwargs=True,
                            always_call=True)
    with pytest.raises(ValueError, match="boom"):
        m(x, y=2)
    assert seen == [("always", (x,), None), ("kw", {"y": 2}, None)]

    # a failing forward hook: the always_call hooks not run yet run once, with the output
    seen.clear()
    m2 = nn.Identity()
    m2.register_forward_hook(lambda mod, a, o: seen.append(("first", o)), always_call=True)

    def bad(mod: nn.Module, a: tuple, o: pg.Tensor) -> None:
        raise KeyError("f")

    m2.register_forward_hook(bad)
    m2.register_forward_hook(lambda mod, a, o: seen.append(("second", o)), always_call=True)
    with pytest.raises(KeyError):
        m2(x)
    assert seen == [("first", x), ("second", x)]


def test_always_call_after_pre_hook_error_warns_on_own_error(device: str) -> None:
    m = nn.Identity()
    new = pg.tensor(5., device=device)
    m.register_forward_pre_hook(lambda mod, a: (new,))

    def bad_pre(mod: nn.Module, a: tuple) -> None:
        raise KeyError("p")

    m.register_forward_pre_hook(bad_pre)
    seen: list = []

    def always(mod: nn.Module, a: tuple, o: object) -> None:
        seen.append((a, o))
        raise ValueError("in always")

    h = m.register_forward_hook(always, always_call=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(KeyError):
            m(pg.tensor(1., device=device))
    assert seen == [((new,), None)]
    assert [str(x.message) for x in w] == [
        "module forward hook with ``always_call=True`` raised an exception that was silenced as "
        "another error was raised in forward: in always"]
    h.remove()
    assert m._forward_hooks_always_called == {}


def test_global_forward_hook_options(device: str) -> None:
    seen: list = []
    h = nn_module.register_module_forward_hook(lambda mod, a, k, o: seen.append(k),
                                               with_kwargs=True)
    h2 = nn_module.register_module_forward_hook(lambda mod, a, o: seen.append(("g", o)),
                                                always_call=True)
    try:
        nn.Identity()(pg.tensor(1., device=device))
        assert seen[0] == {} and seen[1][0] == "g"
        seen.clear()
        with pytest.raises(ValueError):
            _Raising()(1)
        assert seen == [("g", None)]
    finally:
        h.remove()
        h2.remove()
    seen.clear()
    nn.Identity()(pg.tensor(1., device=device))
    assert seen == []


# ------------------------------------------------------------------ backward hooks
def test_global_backward_hooks_run_first(device: str) -> None:
    x = pg.ones(1, device=device, requires_grad=True)
    m = nn.Identity()
    seen: list = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(("local", gi[0].tolist(),
                                                                   go[0].tolist())))
    m.register_full_backward_pre_hook(lambda mod, go: seen.append(("localpre", go[0].tolist())))
    h1 = nn_module.register_module_full_backward_hook(
        lambda mod, gi, go: seen.append(("global", gi[0].tolist())) or (gi[0] * 2,))
    h2 = nn_module.register_module_full_backward_pre_hook(
        lambda mod, go: seen.append(("globalpre", go[0].tolist())) or (go[0] * 3,))
    try:
        (m(x) * 1).sum().backward()
    finally:
        h1.remove()
        h2.remove()
    assert seen == [("globalpre", [1.0]), ("localpre", [3.0]), ("global", [3.0]),
                    ("local", [6.0], [3.0])]
    assert x.grad.tolist() == [6.0]


def test_legacy_and_full_backward_hooks_do_not_mix(device: str) -> None:
    msg = ("Cannot use both regular backward hooks and full backward hooks on a single Module. "
           "Please use only one of them.")
    m = nn.Linear(2, 1, device=device)
    m.register_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match=msg):
        m.register_full_backward_hook(lambda *a: None)
    m = nn.Linear(2, 1, device=device)
    m.register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match=msg):
        m.register_backward_hook(lambda *a: None)
    m = nn.Linear(2, 1, device=device)
    m.register_full_backward_pre_hook(lambda *a: None)
    m.register_backward_hook(lambda *a: None)  # a pre-hook is no full hook


# ------------------------------------------------------------------ registration hooks
def test_global_registration_hooks(device: str) -> None:
    one = pg.ones(1, device=device)
    seen: list = []
    h = nn_module.register_module_buffer_registration_hook(
        lambda mod, name, buf: seen.append(name) or (buf * 2 if buf is not None else None))
    try:
        m = nn.Module()
        m.register_buffer("a", one)
        m.register_buffer("n", None)
        m.b = nn.Buffer(one)
        assert m.a.tolist() == [2.0] and m.b.tolist() == [2.0] and m.n is None
    finally:
        h.remove()
    m.register_buffer("c", one)
    assert seen == ["a", "n", "b"] and m.c.tolist() == [1.0]

    seen.clear()
    h = nn_module.register_module_parameter_registration_hook(
        lambda mod, name, p: seen.append(name) or nn.Parameter(p * 3))
    try:
        m = nn.Module()
        m.register_parameter("p", nn.Parameter(one))
        m.q = nn.Parameter(one)
        m.register_parameter("n", None)  # not called for None
    finally:
        h.remove()
    assert seen == ["p", "q"]
    assert m.p.tolist() == [3.0] and m.q.tolist() == [3.0] and type(m.q) is nn.Parameter

    seen.clear()
    h = nn_module.register_module_module_registration_hook(
        lambda mod, name, sub: seen.append(name) or (nn.Tanh() if sub is not None else None))
    try:
        m = nn.Module()
        m.add_module("x", nn.ReLU())
        m.y = nn.ReLU()
        m.add_module("n", None)
        s = nn.Sequential(nn.ReLU())
    finally:
        h.remove()
    assert seen == ["x", "y", "n", "0"]
    assert type(m.x) is nn.Tanh and type(m.y) is nn.Tanh and type(s[0]) is nn.Tanh


# ------------------------------------------------------------------ containers
def test_sequential_iadd_in_place(device: str) -> None:
    seq = nn.Sequential(OrderedDict([("a", nn.ReLU())]))
    same = seq
    seq += nn.Sequential(nn.Linear(1, 1, device=device))
    assert seq is same and list(seq._modules) == ["a", "1"]
    with pytest.raises(ValueError, match=r"add operator supports only objects of Sequential "
                       r"class, but <class 'list'> is given."):
        seq += [nn.ELU()]


def test_parameter_list_extend_checks(device: str) -> None:
    pl = nn.ParameterList()
    with pytest.raises(TypeError, match=r"^ParameterList.extend should be called with an "
                       r"iterable, but got int$"):
        pl.extend(3)  # type: ignore[arg-type]
    assert pl.extend([pg.ones(1, device=device)]) is pl and len(pl) == 1


def test_parameter_dict_order(device: str) -> None:
    def t(n: int) -> pg.Tensor:
        return pg.ones(n, device=device)

    pd = nn.ParameterDict({"b": t(1), "a": t(2)})  # a plain dict: sorted
    assert list(pd) == ["a", "b"]
    assert [n for n, _ in pd.named_parameters()] == ["a", "b"]
    pd = nn.ParameterDict(OrderedDict([("b", t(1)), ("a", t(1))]))
    assert list(pd) == ["b", "a"]
    pd = nn.ParameterDict([("b", t(1)), ("a", t(1))])
    pd.update({"z": t(1), "c": t(1)})
    assert list(pd) == ["b", "a", "c", "z"]
    assert list(reversed(pd)) == ["z", "c", "a", "b"]


def test_parameter_dict_methods(device: str) -> None:
    def t(n: int) -> pg.Tensor:
        return pg.ones(n, device=device)

    pd = nn.ParameterDict({"b": t(2), "a": t(1)})
    assert pd.get("zz") is None and pd.get("zz", 5) == 5 and pd.get("b").shape == (2,)
    assert pd.get(1) is None  # type: ignore[arg-type]
    c = pd.copy()
    assert type(c) is nn.ParameterDict and c["b"] is pd["b"] and list(c) == ["a", "b"]
    assert pd.setdefault("c", t(3)).shape == (3,) and list(pd) == ["a", "b", "c"]
    assert pd.setdefault("n") is None and list(pd) == ["a", "b", "c", "n"]
    k, v = pd.popitem()
    assert k == "n" and v is None
    assert pd.pop("b").shape == (2,) and list(pd) == ["a", "c"]
    with pytest.raises(AttributeError, match="'ParameterDict' object has no attribute 'zz'"):
        pd.pop("zz")
    fk = pd.fromkeys(["q", "p"], t(1))
    assert type(fk) is nn.ParameterDict and list(fk) == ["q", "p"]
    assert list(pd | nn.ParameterDict({"z": t(1)})) == ["a", "c", "z"]
    assert list(pd | {"z": t(1)}) == ["a", "c", "z"]
    assert list({"z": t(1)} | pd) == ["z", "a", "c"]
    same = pd
    pd |= nn.ParameterDict({"y": t(1)})
    assert pd is same and list(pd) == ["a", "c", "y"]
    pd.clear()
    assert len(pd) == 0 and list(pd.named_parameters()) == []
    with pytest.raises(KeyError, match="popitem"):
        pd.popitem()


def test_parameter_dict_errors(device: str) -> None:
    pd = nn.ParameterDict()
    key_msg = (r"Index given to ParameterDict cannot be used as a key as it is not a string "
               r"\(type is 'int'\). Open an issue on github if you need non-string keys.")
    with pytest.raises(TypeError, match=key_msg):
        pd[1] = pg.ones(1, device=device)  # type: ignore[index]
    with pytest.raises(TypeError, match=key_msg):
        pd[1]  # type: ignore[index]
    with pytest.raises(TypeError, match=r"^ParametersDict.update should be called with an "
                       r"iterable of key/value pairs, but got int$"):
        pd.update(3)
    with pytest.raises(TypeError, match=r"^ParameterDict update sequence element #0 should be "
                       r"Iterable; isint$"):
        pd.update([3])
    with pytest.raises(ValueError, match=r"^ParameterDict update sequence element #0 has length "
                       r"3; 2 is required$"):
        pd.update([("a", pg.ones(1, device=device), 1)])
    pd.update([("a", pg.ones(1, device=device))])
    assert list(pd) == ["a"]


def test_unflatten_argument_checks(device: str) -> None:
    with pytest.raises(TypeError, match=r"^unflattened_size must be a tuple of ints, but found "
                       r"type int$"):
        nn.Unflatten(1, 6)
    with pytest.raises(TypeError, match=r"^unflattened_size must be tuple of ints, but found "
                       r"element of type float at pos 0$"):
        nn.Unflatten(1, (2.0, 3))
    with pytest.raises(TypeError, match="element of type tuple at pos 0"):
        nn.Unflatten("a", (("x", 2), ("y", 3)))
    # dim is only checked by forward
    assert repr(nn.Unflatten(1.5, (2, 3))) == "Unflatten(dim=1.5, unflattened_size=(2, 3))"
    m = nn.Unflatten(1, [2, -1])
    assert repr(m) == "Unflatten(dim=1, unflattened_size=[2, -1])"
    assert m(pg.ones(4, 6, device=device)).shape == (4, 2, 3)


# ------------------------------------------------------------------ Parameter
def test_parameter_integer_data(device: str) -> None:
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype can "
                       "require gradients$"):
        nn.Parameter(pg.ones(2, dtype=pg.int64, device=device))
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype"):
        nn.Parameter(pg.ones(2, dtype=pg.bool, device=device))
    p = nn.Parameter(pg.ones(2, dtype=pg.int64, device=device), requires_grad=False)
    assert type(p) is nn.Parameter and not p.requires_grad


def test_parameter_deepcopy_drops_grad(device: str) -> None:
    import copy

    p = nn.Parameter(pg.ones(2, device=device))
    p.grad = pg.ones(2, device=device)
    p.foo = 3  # type: ignore[attr-defined]
    c = copy.deepcopy(p)
    assert type(c) is nn.Parameter and c.requires_grad and c.grad is None
    assert not hasattr(c, "foo") and c.data_ptr() != p.data_ptr() and c.tolist() == [1.0, 1.0]
    m = nn.Linear(1, 1, device=device)
    m(pg.ones(1, 1, device=device)).sum().backward()
    assert copy.deepcopy(m).weight.grad is None and m.weight.grad is not None


def test_uninitialized_str(device: str) -> None:
    assert str(nn.UninitializedParameter()) == "<UninitializedParameter>"
    assert str(nn.UninitializedBuffer()) == "<UninitializedBuffer>"


# ------------------------------------------------------------------ misc
def test_backward_hook_not_called_for_dict_output(device: str) -> None:
    class M(nn.Module):
        def forward(self, a: pg.Tensor) -> dict:
            return {"o": a * 2}

    x = pg.tensor([1.], device=device, requires_grad=True)
    m = M()
    seen: list = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(gi))
    m(x)["o"].sum().backward()
    assert seen == [] and x.grad.tolist() == [2.0]


def test_load_state_dict_takes_any_mapping(device: str) -> None:
    from collections.abc import Mapping

    class MyMap(Mapping):
        def __init__(self, d: dict) -> None:
            self.d = d

        def __getitem__(self, k: str) -> pg.Tensor:
            return self.d[k]

        def __iter__(self):  # type: ignore[no-untyped-def]
            return iter(self.d)

        def __len__(self) -> int:
            return len(self.d)

    m = nn.Linear(1, 1, device=device)
    res = m.load_state_dict(MyMap({"weight": pg.ones(1, 1, device=device),
                                   "bias": pg.zeros(1, device=device)}))
    assert repr(res) == "<All keys matched successfully>"
    assert m.weight.tolist() == [[1.0]]
    with pytest.raises(TypeError, match=r"Expected state_dict to be dict-like, got <class 'list'>."):
        m.load_state_dict([])  # type: ignore[arg-type]


def test_buffer_over_plain_attribute_refused(device: str) -> None:
    m = nn.Module()
    m.x = 3
    with pytest.raises(KeyError, match="attribute 'x' already exists"):
        m.x = nn.Buffer(pg.ones(1, device=device))
    assert m.x == 3 and list(m._buffers) == []
    m.y = 3
    m.y = nn.Parameter(pg.ones(1, device=device))  # a parameter or module replaces it
    assert list(m._parameters) == ["y"] and "y" not in m.__dict__
