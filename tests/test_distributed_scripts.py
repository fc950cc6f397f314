"""torchrun-style scripts as written, the parts that need no second process: DistributedSampler's
shuffle order against PyTorch's, the launcher's torchrun flags and environment, the backend
mapping of ``init_process_group`` helpers, and the restricted unpickling of object collectives."""
from __future__ import annotations

import pytest

from portagrad.utils.data import DistributedSampler
from portagrad.utils.data._torch_randperm import torch_randperm

# torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist(), from torch 2.13 CPU
LITERAL = {
    (10, 0): [4, 1, 7, 5, 3, 9, 0, 8, 6, 2],
    (10, 1): [5, 6, 1, 2, 0, 8, 9, 3, 7, 4],
    (7, 42): [1, 6, 3, 5, 4, 0, 2],
    (20, 2 ** 33 + 7): [15, 17, 9, 12, 7, 1, 19, 3, 4, 11, 18, 8, 2, 14, 16, 0, 10, 13, 6, 5],
    (5, -3): [1, 4, 0, 3, 2],
}


@pytest.mark.parametrize("n, seed", list(LITERAL))
def test_torch_randperm_literal(n, seed):
    assert torch_randperm(n, seed) == LITERAL[(n, seed)]


def test_torch_randperm_edges_and_errors():
    assert torch_randperm(0, 3) == [] and torch_randperm(1, 3) == [0]
    with pytest.raises(TypeError, match="n must be an int"):
        torch_randperm(2.5, 0)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="non-negative"):
        torch_randperm(-1, 0)


def test_sampler_shuffle_is_torch_order_literal():
    # seed 1, epoch 0 -> the permutation of seed 1; rank r takes every 3rd from r (padded to 12)
    perm = LITERAL[(10, 1)]
    padded = perm + perm[:2]
    got = [list(DistributedSampler(range(10), 3, r, seed=1)) for r in range(3)]
    assert got == [padded[r::3] for r in range(3)]
    s = DistributedSampler(range(10), 1, 0, seed=0)
    s.set_epoch(1)  # seed + epoch
    assert list(s) == LITERAL[(10, 1)]


def test_sampler_shuffle_matches_torch():
    torch = pytest.importorskip("torch")
    from torch.utils.data.distributed import DistributedSampler as TS

    for n in (1, 2, 7, 64, 1000, 4099):
        for seed in (0, 3, 12345, 2 ** 32 + 1):
            for epoch in (0, 1, 5):
                g = torch.Generator()
                g.manual_seed(seed + epoch)
                assert torch_randperm(n, seed + epoch) == torch.randperm(n, generator=g).tolist()
                for k, drop in ((2, False), (3, True), (3, False)):
                    for r in range(k):
                        mine = DistributedSampler(range(n), k, r, seed=seed, drop_last=drop)
                        ref = TS(range(n), k, r, seed=seed, drop_last=drop)
                        mine.set_epoch(epoch)
                        ref.set_epoch(epoch)
                        assert list(mine) == list(ref), (n, seed, epoch, k, r, drop)
