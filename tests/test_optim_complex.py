"""Optimizers on complex parameters as PyTorch's: each of the real and imaginary parts is its own
coordinate (the step sees ``view_as_real``), so adaptive optimizers scale them apart. Expected
parameters after three steps are PyTorch 2.13's, written out (4 decimals)."""
from __future__ import annotations

import pytest

import portagrad as pg

_CASES = [
    ("SGD", dict(lr=0.1, momentum=0.9), [0.049 - 0.902j, 2 - 0.049j]),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1),
     [-0.5176 - 1.956j, 1.8418 + 0.5176j]),
    ("Adam", dict(lr=0.1), [0.7077 + 0.7077j, 2 - 0.7077j]),
    ("Adam", dict(lr=0.1, amsgrad=True, weight_decay=0.1), [0.7066 + 0.7071j, 1.7006 - 0.7066j]),
    ("AdamW", dict(lr=0.1), [0.705 + 0.705j, 1.994 - 0.705j]),
    ("RMSprop", dict(lr=0.1, centered=True, momentum=0.5), [-2.9279 - 2.9279j, 2 + 2.9279j]),
    ("Adagrad", dict(lr=0.1), [0.7304 + 0.7304j, 2 - 0.7304j]),
    ("Adamax", dict(lr=0.1), [0.7547 + 0.7547j, 2 - 0.7547j]),
    ("NAdam", dict(lr=0.1), [0.7019 + 0.7019j, 2 - 0.7019j]),
    ("RAdam", dict(lr=0.1), [0.5404 + 0.0807j, 2 - 0.5404j]),
    ("Adadelta", dict(lr=1.0), [0.9879 + 0.9879j, 2 - 0.9879j]),
    ("ASGD", dict(lr=0.1), [0.4 - 0.2j, 1.9999 - 0.4j]),
    ("Rprop", dict(lr=0.1), [0.636 + 0.636j, 2 - 0.636j]),
]


def _complex_param(device: str) -> pg.nn.Parameter:
    try:
        return pg.nn.Parameter(pg.tensor([1 + 1j, 2 - 1j], dtype=pg.complex64, device=device))
    except pg.errors.DTypeError:
        pytest.skip(f"{device} has no complex64")


@pytest.mark.parametrize("name, kw, want", _CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(_CASES)])
def test_complex_parameters_step_as_pytorch(device: str, name: str, kw: dict, want: list) -> None:
    """Adaptive optimizers took ``g * g`` of a complex gradient (Adam's amsgrad diverged to
    1e18) or left the imaginary part unscaled; Rprop raised."""
    p = _complex_param(device)
    opt = getattr(pg.optim, name)([p], **kw)
    for k in range(3):
        p.grad = pg.tensor([1 + 2j, -1j], dtype=pg.complex64, device=device) * (k + 1)
        opt.step()
    got = p.detach().cpu().tolist()
    for g, w in zip(got, want, strict=True):
        assert abs(g.real - w.real) < 2e-4 and abs(g.imag - w.imag) < 2e-4, (got, want)


def test_complex_state_closure_and_reload(device: str) -> None:
    """The state keeps the parameter's shape and complex dtype (as PyTorch's state_dict), a
    closure's gradients are the ones stepped on, and a reloaded optimizer goes on the same."""
    p = _complex_param(device)
    q = pg.nn.Parameter(pg.tensor([0.5, -0.5], device=device))
    opt = pg.optim.Adam([p, q], lr=0.1)

    def closure() -> pg.Tensor:
        opt.zero_grad()
        loss = (p.abs() ** 2).sum() + (q ** 2).sum()
        loss.backward()
        return loss

    for _ in range(3):
        loss = opt.step(closure)
    assert abs(float(loss) - 5.344) < 1e-3
    want_p, want_q = [0.7016 + 0.7016j, 1.7006 - 0.7016j], [0.2049, -0.2049]
    assert all(abs(a - b) < 2e-4 for a, b in zip(p.detach().cpu().tolist(), want_p))
    assert all(abs(a - b) < 2e-4 for a, b in zip(q.detach().cpu().tolist(), want_q))
    state = opt.state_dict()["state"][0]
    assert state["exp_avg"].dtype is pg.complex64 and state["exp_avg"].shape == (2,)
    assert state["exp_avg_sq"].dtype is pg.complex64
    again = pg.optim.Adam([p, q], lr=0.1)
    again.load_state_dict(opt.state_dict())
    again.step(closure)
    want = [0.6039 + 0.6039j, 1.6015 - 0.6039j]
    assert all(abs(a - b) < 2e-4 for a, b in zip(p.detach().cpu().tolist(), want))
