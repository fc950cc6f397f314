"""``SDPBackend`` and ``sdpa_kernel`` (``torch.nn.attention``): which implementation
:func:`~portagrad.nn.functional.scaled_dot_product_attention` may use.

PyTorch picks among fused kernels (flash, memory-efficient, cuDNN) and the math one; here there is
one implementation, composed from portagrad ops, whichever backends are allowed. The names exist
so that code selecting a backend runs unchanged; the results are those of the math backend."""
from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterator

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.IntEnum):
    """The scaled-dot-product-attention implementations PyTorch can choose from."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


@contextlib.contextmanager
def sdpa_kernel(backends: list[SDPBackend] | SDPBackend, set_priority: bool = False
                ) -> Iterator[None]:
    """Allow only ``backends`` inside the block (checked as PyTorch checks them; every backend
    runs the same composed implementation here)."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError(f"Backend must be an instance of SDPBackend or a list of SDPBackend "
                             f"instances, got {type(backends).__name__}")
    items = [backends] if isinstance(backends, SDPBackend) else list(backends)
    for b in items:
        if not isinstance(b, SDPBackend):
            raise AssertionError(f"Backend must be an instance of SDPBackend or a list of "
                                 f"SDPBackend instances, got {type(b).__name__}")
    yield
