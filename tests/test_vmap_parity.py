"""``vmap``'s randomness modes and nested ``in_dims`` as PyTorch 2.13 has them."""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg
from portagrad.func import vmap


def test_random_ops_raise_by_default(device: str) -> None:
    x = pg.ones(2, 3, device=device)
    with pytest.raises(RuntimeError, match="called random operation while in randomness error "
                                           "mode"):
        vmap(lambda a: a + pg.rand((), device=device))(x)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda a: pg.nn.functional.dropout(a, 0.5))(x)
    # nothing random: fine, and the mode does not outlive the call
    assert vmap(lambda a: pg.nn.functional.dropout(a, 0.5, training=False))(x).shape == (2, 3)
    assert pg.rand(2, device=device).shape == (2,)


def test_randomness_same_and_different(device: str) -> None:
    z = pg.zeros(4, 3, device=device)
    pg.manual_seed(0)
    same = vmap(lambda a: a + pg.rand(3, device=device), randomness="same")(z)
    assert bool((same == same[0]).all())
    pg.manual_seed(0)
    first = pg.rand(3, device=device)  # "same" draws what one unbatched call draws
    assert same[0].tolist() == first.tolist()
    assert pg.rand(3, device=device).tolist() != first.tolist()
    diff = vmap(lambda a: a + pg.rand(3, device=device), randomness="different")(z)
    assert bool((diff[0] != diff[1]).any())
    g = pg.Generator().manual_seed(1)
    same_g = vmap(lambda a: a + pg.rand(3, generator=g, device=device), randomness="same")(z)
    assert bool((same_g == same_g[0]).all())
    nested = vmap(vmap(lambda a: a + pg.rand((), device=device), randomness="different"),
                  randomness="same")(pg.zeros(2, 3, device=device))
    assert nested[0].tolist() == nested[1].tolist()  # the same across the outer batch
    assert len(set(nested[0].tolist())) == 3  # different across the inner one


def test_nested_in_dims(device: str) -> None:
    out = vmap(lambda d, e: d["a"] * e[0] + e[1], in_dims=({"a": 1}, (None, 0)))(
        {"a": pg.ones(3, 2, device=device)}, (pg.tensor(2.0, device=device),
                                               pg.arange(2.0, device=device)))
    assert out.tolist() == [[2.0, 2.0, 2.0], [3.0, 3.0, 3.0]]
    d = {"a": pg.ones(2, 3, device=device), "b": pg.arange(3.0, device=device)}
    assert vmap(lambda t: t["a"] + t["b"], in_dims=({"a": 0, "b": None},))(d).tolist() == \
        [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]
    with pytest.raises(ValueError, match="in_dims is not compatible with the structure"):
        vmap(lambda t: t["a"], in_dims=({"b": 0},))({"a": pg.ones(3, device=device)})


_COUNTER = pg.zeros(3)


def test_in_place_changes_outside_the_batch_are_refused(device: str) -> None:
    """portagrad's vmap calls the function per batch element, so an in-place change of a tensor
    the function captured (or got unbatched) would be made once per element: refused, where
    PyTorch refuses it (a batched value into an unbatched tensor) and where it makes the change
    once (an unbatched update: here an error instead of a silent N-fold update)."""
    y = pg.zeros(3, device=device)

    def into_captured(x: pg.Tensor) -> pg.Tensor:
        y.add_(x)
        return x * 1

    with pytest.raises(RuntimeError, match="would be made 4 times"):
        pg.func.vmap(into_captured)(pg.ones(4, 3, device=device))

    def into_global(x: pg.Tensor) -> pg.Tensor:
        _COUNTER.add_(1)
        return x + 1

    with pytest.raises(RuntimeError, match="modified in place a tensor"):
        pg.func.vmap(into_global)(pg.ones(2, 3))

    def into_unbatched(x: pg.Tensor, w: pg.Tensor) -> pg.Tensor:
        w.mul_(2)
        return x + w

    with pytest.raises(RuntimeError, match="modified in place"):
        pg.func.vmap(into_unbatched, in_dims=(0, None))(pg.ones(2, 3, device=device),
                                                        pg.ones(3, device=device))
    m = pg.nn.BatchNorm1d(3).to(device)  # training mode: running statistics updated in place
    with pytest.raises(RuntimeError):
        pg.func.vmap(m)(pg.randn(4, 2, 3, device=device))


def test_in_place_on_the_batched_input_and_one_element(device: str) -> None:
    """Changing the mapped input's slices in place is each element's own change (PyTorch
    writes through to the input), and a batch of one makes each change once."""
    z = pg.zeros(4, 3, device=device)

    def bump(x: pg.Tensor) -> pg.Tensor:
        return x.add_(1)

    out = pg.func.vmap(bump)(z)
    np.testing.assert_array_equal(out.numpy(force=True), np.ones((4, 3)))
    np.testing.assert_array_equal(z.numpy(force=True), np.ones((4, 3)))
    w = pg.zeros(3, device=device)

    def once(x: pg.Tensor) -> pg.Tensor:
        w.add_(x)
        return x

    pg.func.vmap(once)(pg.ones(1, 3, device=device))
    np.testing.assert_array_equal(w.numpy(force=True), [1.0, 1.0, 1.0])
