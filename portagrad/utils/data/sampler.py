"""Samplers: the order in which a :class:`DataLoader` visits indices."""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Any, Generic, TypeVar

from ... import _creation, _dtype, _random

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]


_T_co = TypeVar("_T_co", covariant=True)


class Sampler(Generic[_T_co]):
    """Base class: ``__iter__`` yields indices (or lists of indices for batch samplers);
    subscriptable for annotations (``Sampler[int]``), as PyTorch's."""

    def __init__(self, data_source: Any = None) -> None:
        pass

    def __iter__(self) -> Iterator[_T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _seed_generator(generator: Any) -> Any:
    if generator is not None:
        return generator
    g = _random.Generator()
    # draw the seed from the default generator, so pg.manual_seed makes shuffling reproducible
    g.manual_seed(int(_random.randint(0, 2 ** 62, (1,), device="cpu").item()))
    return g


class RandomSampler(Sampler):
    """A random permutation (or ``num_samples`` draws with ``replacement``) from ``generator``."""

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: int | None = None, generator: Any = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got "
                            f"replacement={replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        g = _seed_generator(self.generator)
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from _random.randint(0, n, (32,), generator=g, device="cpu").tolist()
            yield from _random.randint(0, n, (self.num_samples % 32,), generator=g, device="cpu").tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from _random.randperm(n, generator=g, device="cpu").tolist()
            yield from _random.randperm(n, generator=g, device="cpu").tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in random order."""

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in _random.randperm(len(self.indices), generator=self.generator, device="cpu").tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Any = None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        # host-side, as the indices it yields (never on the default device)
        self.weights = _creation.as_tensor(weights, dtype=_dtype.float64, device="cpu")
        if self.weights.dim() != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(self.weights.shape)}")
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        rand = _random.multinomial(self.weights, self.num_samples, self.replacement,
                                   generator=self.generator)
        yield from iter(rand.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Group the indices of ``sampler`` into lists of ``batch_size``."""

    def __init__(self, sampler: Sampler | Iterable[int], batch_size: int,
                 drop_last: bool) -> None:
        if (not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0):
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        if self.drop_last:
            return n // self.batch_size
        return (n + self.batch_size - 1) // self.batch_size
