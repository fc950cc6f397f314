"""Random draws' argument checks and ranges as PyTorch 2.13 has them: ``random_``'s call forms
and default ranges, the distribution parameters refused (negative std, rates, probabilities
outside [0, 1]), ``randperm``'s dtype limits, seeding and generator states, ``torch.random``.
Messages are PyTorch's, written out."""
from __future__ import annotations

import pytest

import portagrad as pg


def _maybe(device: str, dtype: pg.dtype, n: int = 3) -> pg.Tensor:
    try:
        return pg.empty(n, dtype=dtype, device=device)
    except pg.errors.DTypeError:
        pytest.skip(f"{device} has no {dtype}")


def test_random_call_forms_and_ranges(device: str) -> None:
    """``random_(to)`` draws from [0, to) (it drew from [to, 2**31)); ``random_()`` from the
    dtype's exact integers; ``random_(from, to)`` and the keywords."""
    pg.manual_seed(0)
    t = pg.empty(2000, device=device).random_(5)
    assert t.min().item() == 0 and t.max().item() == 4
    t = pg.empty(2000, device=device).random_(to=3)
    assert t.max().item() == 2
    t = pg.empty(2000, device=device).random_(**{"from": 3, "to": 5})
    assert t.min().item() == 3 and t.max().item() == 4
    t = pg.empty(2000, dtype=pg.int64, device=device).random_(-3, 2)
    assert t.min().item() == -3 and t.max().item() == 1
    f32 = pg.empty(20000, device=device).random_()
    assert 2**23 < f32.max().item() <= 2**24 and f32.min().item() >= 0
    i8 = pg.empty(5000, dtype=pg.int8, device=device).random_()
    assert i8.min().item() >= 0 and i8.max().item() == 127
    b = pg.empty(200, dtype=pg.bool, device=device).random_()
    assert 0 < b.sum().item() < 200
    with pytest.raises(RuntimeError, match=r"^random_ expects 'from' to be less than 'to', but "
                       r"got from=0 >= to=0$"):
        pg.empty(3, device=device).random_(0)
    with pytest.raises(RuntimeError, match="^to - 1 is out of bounds for signed char$"):
        pg.empty(3, dtype=pg.int8, device=device).random_(0, 300)
    with pytest.raises(RuntimeError, match="^from is out of bounds for unsigned char$"):
        pg.empty(3, dtype=pg.uint8, device=device).random_(-3, 2)


def test_distribution_parameters_refused(device: str) -> None:
    x = pg.empty(2, device=device)
    with pytest.raises(RuntimeError, match=r"^uniform_ expects to return a \[from, to\) range, "
                       r"but found from=2 > to=1$"):
        x.uniform_(2, 1)
    assert x.uniform_(1, 1).tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="^exponential_ expects lambda > 0.0, but found "
                       "lambda=-1$"):
        x.exponential_(-1)
    with pytest.raises(RuntimeError, match="lambda=0$"):
        x.exponential_(0)
    with pytest.raises(RuntimeError, match="^normal expects std >= 0.0, but found std -1$"):
        x.normal_(0, -1)
    with pytest.raises(RuntimeError, match="^normal expects std >= 0.0, but found std -1$"):
        pg.normal(0.0, -1.0, (2,), device=device)
    with pytest.raises(RuntimeError, match="^normal expects std >= 0.0, but found std -1$"):
        pg.normal(pg.zeros(2, device=device), -1.0)
    with pytest.raises(RuntimeError, match="^normal expects all elements of std >= 0.0$"):
        pg.normal(0.0, pg.tensor([1.0, -1.0], device=device))
    assert pg.normal(1.0, 0.0, (2,), device=device).tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match=r"^bernoulli_ expects p to be in \[0, 1\], but got "
                       r"p=1.5$"):
        x.bernoulli_(1.5)
    with pytest.raises(RuntimeError, match=r"p=-0.5$"):
        pg.bernoulli(pg.zeros(2, device=device), -0.5)
    p_msg = r"^Expected p_in >= 0 && p_in <= 1 to be true, but got false\."
    with pytest.raises(RuntimeError, match=p_msg):
        pg.bernoulli(pg.tensor([1.5, 0.0], device=device))
    with pytest.raises(RuntimeError, match=p_msg):
        pg.bernoulli(pg.tensor([float("nan")], device=device))
    with pytest.raises(RuntimeError, match=p_msg):
        x.bernoulli_(pg.tensor([0.5, 2.0], device=device))
    with pytest.raises(NotImplementedError, match="\"bernoulli_tensor_cpu_p_\" not implemented "
                       "for 'Long'"):
        pg.bernoulli(pg.tensor([1], device=device))
    assert set(pg.bernoulli(pg.tensor([0.0, 1.0], device=device)).tolist()) == {0.0, 1.0}


def test_integer_and_multinomial_checks(device: str) -> None:
    i = pg.empty(2, dtype=pg.int64, device=device)
    with pytest.raises(NotImplementedError, match="\"check_uniform_bounds\" not implemented for "
                       "'Long'"):
        i.uniform_()
    with pytest.raises(NotImplementedError, match="\"normal_kernel_cpu\" not implemented for "
                       "'Long'"):
        i.normal_()
    with pytest.raises(RuntimeError, match="^Exponential distribution is a continuous "
                       "probability distribution. dtype must be a floating point but you "
                       "specified Long$"):
        i.exponential_()
    with pytest.raises(NotImplementedError, match="\"check_uniform_bounds\" not implemented for "
                       "'Char'"):
        pg.rand(2, dtype=pg.int8, device=device)
    with pytest.raises(NotImplementedError, match="\"normal_kernel_cpu\" not implemented for "
                       "'Int'"):
        pg.randn(2, dtype=pg.int32, device=device)
    with pytest.raises(RuntimeError, match="^prob_dist must be 1 or 2 dim$"):
        pg.multinomial(pg.ones(2, 2, 2, device=device), 1)
    with pytest.raises(RuntimeError, match="^prob_dist must be 1 or 2 dim$"):
        pg.multinomial(pg.tensor(1.0, device=device), 1)
    with pytest.raises(RuntimeError, match="^cannot sample n_sample <= 0 samples$"):
        pg.multinomial(pg.ones(3, device=device), 0)
    with pytest.raises(RuntimeError, match="^multinomial only supports floating-point dtypes "
                       "for input, got: Long$"):
        pg.multinomial(pg.ones(3, dtype=pg.int64, device=device), 1)


def test_randperm_dtype_limits(device: str) -> None:
    """An index past the dtype's range is refused (int8 indices wrapped to negatives)."""
    assert pg.randperm(128, dtype=pg.int8, device=device).max().item() == 127
    assert pg.randperm(256, dtype=pg.uint8, device=device).max().item() == 255
    with pytest.raises(RuntimeError, match="^value cannot be converted to type int8_t without "
                       "overflow$"):
        pg.randperm(129, dtype=pg.int8, device=device)
    with pytest.raises(NotImplementedError, match="\"randperm\" not implemented for 'Bool'"):
        pg.randperm(2, dtype=pg.bool, device=device)
    _maybe(device, pg.float16)
    with pytest.raises(RuntimeError, match="^n cannot be greater than 2049 for Half type.$"):
        pg.randperm(3000, dtype=pg.float16, device=device)


def test_seeds_and_generator_states() -> None:
    """Seeds as PyTorch takes them (``int()`` at the top level, modulo 2**64, refused past
    the 64-bit range); states are CPU byte tensors that restore the stream."""
    assert pg.manual_seed(-5).initial_seed() == 18446744073709551611
    assert pg.manual_seed(2**64 - 1).initial_seed() == 2**64 - 1
    assert pg.manual_seed(1.5).initial_seed() == 1
    assert pg.manual_seed("3").initial_seed() == 3
    assert pg.manual_seed(pg.tensor(4)).initial_seed() == 4
    with pytest.raises(ValueError, match="^Overflow when unpacking long long$"):
        pg.manual_seed(2**64)
    with pytest.raises(ValueError, match="^Overflow when unpacking long long$"):
        pg.manual_seed(-2**63 - 1)
    g = pg.Generator()
    with pytest.raises(RuntimeError, match="^manual_seed expected a long, but got float$"):
        g.manual_seed(1.5)  # type: ignore[arg-type]
    g.manual_seed(7)
    pg.rand(5, generator=g)
    st = g.get_state()
    assert st.dtype is pg.uint8 and st.dim() == 1 and st.device == pg.device("cpu")
    a = pg.rand(4, generator=g)
    g.set_state(st)
    assert pg.equal(pg.rand(4, generator=g), a)
    with pytest.raises(TypeError, match="^RNG state must be a torch.ByteTensor$"):
        g.set_state(pg.zeros(16, dtype=pg.int64))
    with pytest.raises(RuntimeError, match="found the input RNG state size to be 3"):
        g.set_state(pg.zeros(3, dtype=pg.uint8))


def test_torch_random_module() -> None:
    """``torch.random``: ``fork_rng`` restores the default generator's state on leaving."""
    from portagrad import random as prandom

    assert pg.random is prandom and prandom.manual_seed is pg.manual_seed
    prandom.manual_seed(0)
    with prandom.fork_rng():
        inside = pg.rand(2)
    assert pg.equal(pg.rand(2), inside)
    with prandom.fork_rng(enabled=False):
        pg.rand(2)
    assert not pg.equal(pg.rand(2), inside)
    state = prandom.get_rng_state()
    x = pg.rand(3)
    prandom.set_rng_state(state)
    assert pg.equal(pg.rand(3), x)
