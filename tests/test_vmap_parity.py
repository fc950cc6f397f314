"""``vmap``'s randomness modes and nested ``in_dims`` as PyTorch 2.13 has them."""
from __future__ import annotations

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
