"""The default DDP communication hooks (``torch.distributed.algorithms.ddp_comm_hooks.
default_hooks``): plain all-reduce, and all-reduce of a float16/bfloat16 copy of the bucket, each
dividing by the group size as PyTorch's do (before the reduction: the sum of ``g / world_size``)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...._dtype import bfloat16, float16
from ...._tensor import Tensor
from ..._collectives_more import all_reduce
from ..._future import Future
from ..._grad_bucket import GradBucket
from ..._world import resolve

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook", "fp16_compress_wrapper",
           "bf16_compress_wrapper"]


def _group(process_group: Any) -> Any:
    group = resolve(process_group)
    if group is None:
        raise ValueError("the communication hook's process group does not include this rank")
    return group


def _allreduce_fut(process_group: Any, tensor: Tensor) -> Future:
    group = _group(process_group)
    tensor.div_(group.size())
    work = all_reduce(tensor, group=group, async_op=True)
    assert work is not None
    return work.get_future().then(lambda fut: fut.value()[0])


def allreduce_hook(process_group: Any, bucket: GradBucket) -> Future:
    """Divide the bucket by the group size and all-reduce it (DDP's own reduction as a hook)."""
    return _allreduce_fut(process_group, bucket.buffer())


def _compress_hook(dtype: Any, process_group: Any, bucket: GradBucket) -> Future:
    group = _group(process_group)
    buffer = bucket.buffer()
    compressed = buffer.to(dtype).div_(group.size())  # rounded to 16 bits, then divided there
    work = all_reduce(compressed, group=group, async_op=True)
    assert work is not None

    def decompress(fut: Future) -> Tensor:
        buffer.copy_(fut.value()[0])
        return buffer

    return work.get_future().then(decompress)


def fp16_compress_hook(process_group: Any, bucket: GradBucket) -> Future:
    """All-reduce a float16 copy of the bucket divided by the group size; the result is copied
    back into the bucket's dtype (half the bytes on the wire, float16's precision)."""
    return _compress_hook(float16, process_group, bucket)


def bf16_compress_hook(process_group: Any, bucket: GradBucket) -> Future:
    """As :func:`fp16_compress_hook`, in bfloat16 (float32's range, 8 bits of mantissa)."""
    return _compress_hook(bfloat16, process_group, bucket)


def _wrapper(dtype: Any, hook: Callable[[Any, GradBucket], Future]
             ) -> Callable[[Any, GradBucket], Future]:
    def wrapped(state: Any, bucket: GradBucket) -> Future:
        buffer = bucket.buffer()
        bucket.set_buffer(buffer.to(dtype))  # as PyTorch's: the wrapped hook does the division
        fut = hook(state, bucket)

        def decompress(f: Future) -> Tensor:
            buffer.copy_(f.value())
            return buffer

        return fut.then(decompress)

    wrapped.__name__ = f"{'fp16' if dtype is float16 else 'bf16'}_compress_wrapper_hook"
    return wrapped


def fp16_compress_wrapper(hook: Callable[[Any, GradBucket], Future]
                          ) -> Callable[[Any, GradBucket], Future]:
    """Wrap ``hook`` so that it runs on a float16 copy of the bucket; its result is cast back
    into the bucket's dtype."""
    return _wrapper(float16, hook)


def bf16_compress_wrapper(hook: Callable[[Any, GradBucket], Future]
                          ) -> Callable[[Any, GradBucket], Future]:
    """As :func:`fp16_compress_wrapper`, in bfloat16."""
    return _wrapper(bfloat16, hook)
