"""``DistributedSampler``: each rank of a data-parallel job visits its own share of a dataset."""
from __future__ import annotations

import math
from collections.abc import Iterator, Sized
from typing import Any

from ... import _random
from ...distributed import _world
from ._torch_randperm import TORCH_SMALL_N, torch_randperm
from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Indices of the ``rank``-th of ``num_replicas`` shares of ``dataset``
    (``torch.utils.data.distributed.DistributedSampler``).

    With ``shuffle`` the dataset is permuted by a generator seeded with ``seed + epoch`` (the same
    permutation on every rank: call :meth:`set_epoch` at the start of each epoch for a new one):
    PyTorch's exact permutation (its CPU ``torch.randperm`` for that seed, reproduced on the host),
    so a ported script visits the same samples in the same order, for datasets under
    ``(2**32 - 1) // 20`` items (larger ones get portagrad's own permutation).
    Rank ``r`` takes every ``num_replicas``-th index from ``r``. Unless ``drop_last``, the list is
    padded by repeating its start so that every rank gets ``ceil(len / num_replicas)`` indices;
    with ``drop_last`` the tail that does not divide evenly is dropped."""

    def __init__(self, dataset: Sized, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None:
            if not _world.is_available():
                raise RuntimeError("Requires distributed package to be available")
            num_replicas = _world.get_world_size()
        if rank is None:
            if not _world.is_available():
                raise RuntimeError("Requires distributed package to be available")
            rank = _world.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if self.drop_last and n % self.num_replicas != 0:
            # drop the tail so that every rank gets the same number of samples
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[Any]:
        n = len(self.dataset)
        if self.shuffle:
            indices: list[int]
            if n < TORCH_SMALL_N:
                indices = torch_randperm(n, self.seed + self.epoch)
            else:
                g = _random.Generator()
                g.manual_seed(self.seed + self.epoch)
                indices = _random.randperm(n, generator=g, device="cpu").tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            indices = indices[:self.total_size]
        if len(indices) != self.total_size:
            raise AssertionError(f"{len(indices)} != {self.total_size}")
        indices = indices[self.rank:self.total_size:self.num_replicas]
        if len(indices) != self.num_samples:
            raise AssertionError(f"{len(indices)} != {self.num_samples}")
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use ``seed + epoch`` for the next shuffle (call it before each epoch, on every rank)."""
        self.epoch = epoch
