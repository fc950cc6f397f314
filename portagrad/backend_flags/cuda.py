"""``torch.backends.cuda``: CUDA's flags, as PyTorch answers where CUDA is not built.

:func:`is_built` is False. ``matmul.allow_tf32`` and the reduced-precision reduction flags, and the
scaled-dot-product-attention kernel switches, are kept and type-checked as in PyTorch so scripts
that set them run unchanged; they change nothing in portagrad, which has no CUDA kernels.
"""
from __future__ import annotations

from typing import Any

from ._flags import check_bool

__all__ = ["is_built", "matmul", "flash_sdp_enabled", "enable_flash_sdp",
           "mem_efficient_sdp_enabled", "enable_mem_efficient_sdp", "math_sdp_enabled",
           "enable_math_sdp", "cudnn_sdp_enabled", "enable_cudnn_sdp",
           "is_flash_attention_available"]


def is_built() -> bool:
    """Whether the library was built with CUDA: portagrad has no CUDA backend."""
    return False


class _Matmul:
    """``torch.backends.cuda.matmul``: the cuBLAS flags; unknown names are refused."""

    _SETTERS = {"allow_tf32": "set_allow_tf32_cublas",
                "allow_fp16_reduced_precision_reduction": "set_allow_fp16_reduction_cublas",
                "allow_bf16_reduced_precision_reduction": "set_allow_bf16_reduction_cublas"}

    def __init__(self) -> None:
        object.__setattr__(self, "_values", {"allow_tf32": False,
                                             "allow_fp16_reduced_precision_reduction": True,
                                             "allow_bf16_reduced_precision_reduction": True})

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._SETTERS:
            raise AttributeError(f"Unknown attribute {name}")
        self._values[name] = check_bool(self._SETTERS[name], value)


matmul: Any = _Matmul()

# Which scaled-dot-product-attention kernels may run. All enabled by default, as in PyTorch.
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def _enable(kind: str, enabled: bool) -> None:
    _sdp[kind] = check_bool(f"enable_{kind}_sdp", enabled)


def flash_sdp_enabled() -> bool:
    """Whether the flash-attention kernel may be used (a flag only; portagrad has none)."""
    return _sdp["flash"]


def enable_flash_sdp(enabled: bool) -> None:
    """Allow or forbid the flash-attention kernel (a flag only)."""
    _enable("flash", enabled)


def mem_efficient_sdp_enabled() -> bool:
    """Whether the memory-efficient attention kernel may be used (a flag only)."""
    return _sdp["mem_efficient"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Allow or forbid the memory-efficient attention kernel (a flag only)."""
    _enable("mem_efficient", enabled)


def math_sdp_enabled() -> bool:
    """Whether the plain (math) attention implementation may be used."""
    return _sdp["math"]


def enable_math_sdp(enabled: bool) -> None:
    """Allow or forbid the plain (math) attention implementation (a flag only)."""
    _enable("math", enabled)


def cudnn_sdp_enabled() -> bool:
    """Whether the cuDNN attention kernel may be used (a flag only)."""
    return _sdp["cudnn"]


def enable_cudnn_sdp(enabled: bool) -> None:
    """Allow or forbid the cuDNN attention kernel (a flag only)."""
    _enable("cudnn", enabled)


def is_flash_attention_available() -> bool:
    """Whether a flash-attention kernel exists: not without CUDA."""
    return False
