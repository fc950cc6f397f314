"""utils.data: datasets, samplers, collate, DataLoader (shuffle, drop_last, workers, pinning)."""
from __future__ import annotations

import collections
import os

import numpy as np
import pytest

import portagrad as pg
from portagrad.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset,
                                  IterableDataset, RandomSampler, SequentialSampler, Subset,
                                  TensorDataset, default_collate, get_worker_info, random_split)


def _ds(n=10, device="cpu"):
    x = pg.arange(float(n * 2), device=device).view(n, 2)
    y = pg.arange(n, device=device)
    return TensorDataset(x, y)


def _labels(loader):
    return [b[1].tolist() for b in loader]


def test_tensor_dataset_and_errors(device):
    ds = _ds(5, device)
    x, y = ds[3]
    assert x.tolist() == [6.0, 7.0] and y.item() == 3 and len(ds) == 5
    with pytest.raises(AssertionError, match="Size mismatch"):
        TensorDataset(pg.zeros(3), pg.zeros(4))


def test_batches_in_order_and_drop_last(device):
    ds = _ds(10, device)
    dl = DataLoader(ds, batch_size=4)
    assert len(dl) == 3 and _labels(dl) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    batch = next(iter(dl))
    assert batch[0].shape == (4, 2) and batch[0].device == pg.device(device)
    dl = DataLoader(ds, batch_size=4, drop_last=True)
    assert len(dl) == 2 and _labels(dl) == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_shuffle_is_reproducible_with_a_generator():
    ds = _ds(20)
    a = _labels(DataLoader(ds, batch_size=6, shuffle=True, generator=pg.Generator().manual_seed(3)))
    b = _labels(DataLoader(ds, batch_size=6, shuffle=True, generator=pg.Generator().manual_seed(3)))
    c = _labels(DataLoader(ds, batch_size=6, shuffle=True, generator=pg.Generator().manual_seed(4)))
    assert a == b and a != c
    assert sorted(sum(a, [])) == list(range(20))
    pg.manual_seed(0)
    d = _labels(DataLoader(ds, batch_size=6, shuffle=True))
    pg.manual_seed(0)
    assert _labels(DataLoader(ds, batch_size=6, shuffle=True)) == d
    # two epochs of one loader differ
    dl = DataLoader(ds, batch_size=20, shuffle=True, generator=pg.Generator().manual_seed(1))
    assert _labels(dl) != _labels(dl)


def test_collate_dicts_tuples_namedtuples_and_numbers():
    Point = collections.namedtuple("Point", "x y")
    batch = [{"a": 1, "b": (2.0, "s"), "c": np.array([1, 2]), "p": Point(1, pg.ones(2))},
             {"a": 3, "b": (4.0, "t"), "c": np.array([3, 4]), "p": Point(2, pg.zeros(2))}]
    out = default_collate(batch)
    assert out["a"].tolist() == [1, 3] and out["a"].dtype == pg.int64
    assert out["b"][0].dtype == pg.float64 and out["b"][1] == ("s", "t")  # (as PyTorch)
    assert isinstance(out["b"], list)
    assert out["c"].tolist() == [[1, 2], [3, 4]]
    assert isinstance(out["p"], Point) and out["p"].y.shape == (2, 2)
    assert default_collate([True, False]).dtype == pg.bool
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [1]])
    with pytest.raises(TypeError, match="default_collate"):
        default_collate([object()])


class _DictDataset(Dataset):
    def __len__(self):
        return 7

    def __getitem__(self, i):
        return {"x": pg.full((2,), float(i)), "i": i, "name": f"s{i}"}


def test_custom_dataset_and_collate_fn():
    dl = DataLoader(_DictDataset(), batch_size=3)
    b = next(iter(dl))
    assert b["x"].shape == (3, 2) and b["i"].tolist() == [0, 1, 2] and b["name"] == ["s0", "s1", "s2"]
    dl = DataLoader(_DictDataset(), batch_size=3, collate_fn=lambda items: len(items))
    assert list(dl) == [3, 3, 1]
    dl = DataLoader(_DictDataset(), batch_size=None)
    assert next(iter(dl))["i"] == 0


def test_sampler_and_batch_sampler_options():
    ds = _ds(6)
    dl = DataLoader(ds, sampler=[5, 3, 1], batch_size=2)
    assert _labels(dl) == [[5, 3], [1]]
    dl = DataLoader(ds, batch_sampler=[[0, 5], [2]])
    assert _labels(dl) == [[0, 5], [2]]
    assert list(BatchSampler(SequentialSampler(range(5)), 2, drop_last=True)) == [[0, 1], [2, 3]]
    assert len(BatchSampler(range(5), 2, False)) == 3
    s = RandomSampler(range(5), replacement=True, num_samples=40, generator=pg.Generator())
    vals = list(s)
    assert len(vals) == 40 and set(vals) <= set(range(5))
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        DataLoader(ds, sampler=[0], shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(ds, batch_sampler=[[0]], batch_size=2)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(ds, persistent_workers=True)
    with pytest.raises(ValueError, match="prefetch_factor"):
        DataLoader(ds, prefetch_factor=2)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(ds, num_workers=-1)


def test_random_split_lengths_fractions_generator():
    a, b = random_split(range(10), [3, 7], generator=pg.Generator().manual_seed(0))
    assert len(a) == 3 and len(b) == 7 and sorted(list(a) + list(b)) == list(range(10))
    c, d = random_split(range(10), [3, 7], generator=pg.Generator().manual_seed(0))
    assert list(a) == list(c)
    parts = random_split(range(11), [0.5, 0.3, 0.2], generator=pg.Generator().manual_seed(1))
    assert [len(p) for p in parts] == [6, 3, 2]  # floors 5, 3, 2 + remainder to the first
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(range(10), [3, 3])


def test_subset_and_concat():
    ds = ConcatDataset([range(3), range(10, 14)])
    assert len(ds) == 7 and ds[3] == 10 and ds[-1] == 13
    sub = Subset(ds, [6, 0])
    assert [sub[0], sub[1]] == [13, 0] and len(sub) == 2
    assert _labels(DataLoader(Subset(_ds(10), [9, 2, 4]), batch_size=2)) == [[9, 2], [4]]


class _Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))

    def __len__(self):
        return self.n


def test_iterable_dataset():
    dl = DataLoader(_Stream(7), batch_size=3)
    assert [b.tolist() for b in dl] == [[0, 1, 2], [3, 4, 5], [6]] and len(dl) == 3
    with pytest.raises(ValueError, match="expected unspecified shuffle"):
        DataLoader(_Stream(3), shuffle=True)


def test_workers_give_the_same_batches_as_the_main_process():
    ds = _ds(23)
    kw = dict(batch_size=4, shuffle=True, drop_last=False)
    main = _labels(DataLoader(ds, generator=pg.Generator().manual_seed(5), **kw))
    workers = _labels(DataLoader(ds, num_workers=2, generator=pg.Generator().manual_seed(5), **kw))
    assert main == workers
    dl = DataLoader(_DictDataset(), batch_size=2, num_workers=2, prefetch_factor=1)
    assert [b["i"].tolist() for b in dl] == [[0, 1], [2, 3], [4, 5], [6]]


def _init(worker_id):
    os.environ["PG_TEST_WORKER"] = str(worker_id)


class _WhoAmI(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = get_worker_info()
        return (info.id, info.num_workers, os.environ.get("PG_TEST_WORKER"), os.getpid())


def test_worker_info_init_fn_and_persistent_workers():
    dl = DataLoader(_WhoAmI(), batch_size=1, num_workers=2, worker_init_fn=_init,
                    persistent_workers=True)
    first = [tuple(x if isinstance(x, (str, list, tuple)) else x.tolist() for x in b) for b in dl]
    ids = [f[0][0] for f in first]
    assert ids == [0, 1, 0, 1]
    assert all(str(f[0][0]) == f[2][0] and f[1][0] == 2 for f in first)
    second = [tuple(x if isinstance(x, (str, list, tuple)) else x.tolist() for x in b) for b in dl]
    assert {f[3][0] for f in first} == {f[3][0] for f in second}  # the same processes
    assert get_worker_info() is None


def test_iterable_dataset_with_workers():
    dl = DataLoader(_Stream(9), batch_size=2, num_workers=2)
    vals = sorted(sum((b.tolist() for b in dl), []))
    assert vals == list(range(9))


class _Fails(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise KeyError("bad sample 2")
        return i


def test_worker_errors_are_reraised_in_the_main_process():
    with pytest.raises(KeyError, match="bad sample 2"):
        list(DataLoader(_Fails(), batch_size=1, num_workers=2))


class _Slow(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        import time

        time.sleep(1.5)
        return i


def test_timeout():
    with pytest.raises(RuntimeError, match="timed out after 0.5 seconds"):
        list(DataLoader(_Slow(), num_workers=1, timeout=0.5))


def test_pin_memory_returns_pinned_batches_or_warns_once():
    dl = DataLoader(_ds(6), batch_size=3, pin_memory=True)
    if pg.accelerator.is_available():  # any accelerator's backend (OpenCL, a plugin) can pin
        batches = list(dl)
        assert all(b[0].is_pinned() and b[1].is_pinned() for b in batches)
        assert batches[1][1].tolist() == [3, 4, 5]
        batches = list(DataLoader(_ds(6), batch_size=3, pin_memory=True, num_workers=2))
        assert all(b[0].is_pinned() for b in batches)
    else:
        with pytest.warns(UserWarning, match="pin_memory"):
            batches = list(dl)
        assert batches[1][1].tolist() == [3, 4, 5]


def test_default_collate_numbers_and_strings_as_pytorch():
    """PyTorch infers the dtype of a batch of numbers from the whole batch unless its first
    number is a float (float64); strings come back as given. Values are PyTorch 2.13's."""
    from portagrad.utils.data import default_collate

    b = default_collate([1, 2.5])
    assert b.dtype is pg.float32 and b.tolist() == [1.0, 2.5]  # (it was int64 [1, 2])
    b = default_collate([True, 2])
    assert b.dtype is pg.int64 and b.tolist() == [1, 2]  # (it was bool)
    assert default_collate([True, False]).dtype is pg.bool
    assert default_collate([2.5, 1]).dtype is pg.float64
    assert default_collate([(1, "x"), (2, "y")])[1] == ("x", "y")
    assert default_collate(["a", "b"]) == ["a", "b"]
    dd = default_collate([collections.defaultdict(int, a=1)] * 2)
    assert type(dd) is collections.defaultdict and dd["a"].tolist() == [1, 1] and dd["z"] == 0
    assert [b.tolist() for b in DataLoader([1, 2.5, 3], batch_size=3)] == [[1.0, 2.5, 3.0]]


def test_dataloader_fixed_after_init():
    d = DataLoader(list(range(6)), batch_size=3)
    for name, value in (("batch_size", 5), ("drop_last", True), ("sampler", [1]),
                        ("batch_sampler", None), ("dataset", [1])):
        with pytest.raises(ValueError, match=f"{name} attribute should not be set after "
                                             "DataLoader is initialized"):
            setattr(d, name, value)
    assert [b.tolist() for b in d] == [[0, 1, 2], [3, 4, 5]]
    # an iterator knows its length without its loader (torch: len(iter(DataLoader(...))))
    assert len(iter(DataLoader(list(range(6)), batch_size=4))) == 2


def test_sampler_and_split_argument_checks():
    from portagrad.utils.data import WeightedRandomSampler, random_split

    with pytest.raises(ValueError, match="replacement should be a boolean value"):
        WeightedRandomSampler([1.0, 1.0], 2, replacement=1)
    with pytest.raises(TypeError, match="lengths must be ints"):
        random_split(range(10), [3.0, 7.0])
    assert [len(s) for s in random_split(range(10), [0.3, 0.7])] == [3, 7]
