"""``torch.distributed.GradBucket``: what a DDP communication hook receives -- one bucket's
flattened gradients and the parameters they belong to."""
from __future__ import annotations

from .._tensor import Tensor

__all__ = ["GradBucket"]


class GradBucket:
    """One DDP bucket: ``buffer()`` is the flat tensor of its gradients (in bucket order),
    ``gradients()`` views of it shaped as ``parameters()``, ``index()`` its position (buckets
    are reduced in index order on every rank) and ``is_last()`` whether it is the last one of
    the backward pass. ``set_buffer(t)`` replaces the buffer (the views then follow ``t``)."""

    def __init__(self, index: int, is_last: bool, buffer: Tensor, params: list[Tensor]) -> None:
        self._index = index
        self._is_last = is_last
        self._buffer = buffer
        self._params = params

    def index(self) -> int:
        """The bucket's index (0 holds the parameters registered last)."""
        return self._index

    def buffer(self) -> Tensor:
        """The flat gradient tensor of the bucket."""
        return self._buffer

    def set_buffer(self, buffer: Tensor) -> None:
        """Make ``buffer`` the bucket's flat gradient tensor."""
        if not isinstance(buffer, Tensor):
            raise TypeError(f"set_buffer needs a Tensor, got {type(buffer).__name__}")
        if buffer.numel() != self._buffer.numel():
            raise ValueError(f"set_buffer: the bucket holds {self._buffer.numel()} elements, the "
                             f"new buffer {buffer.numel()}")
        self._buffer = buffer

    def gradients(self) -> list[Tensor]:
        """Views of the buffer, one per parameter, in the parameters' shapes."""
        out, off = [], 0
        flat = self._buffer.reshape(-1)
        for p in self._params:
            n = p.numel()
            out.append(flat[off:off + n].view(tuple(p.shape)))
            off += n
        return out

    def parameters(self) -> list[Tensor]:
        """The parameters whose gradients the bucket holds, in bucket order."""
        return list(self._params)

    def is_last(self) -> bool:
        """Whether this is the last bucket reduced in the backward pass."""
        return self._is_last

    def __repr__(self) -> str:
        return f"GradBucket(index={self._index}, numel={self._buffer.numel()})"

