"""``torch._dynamo.utils``: :func:`is_compile_supported`, which libraries ask before choosing a
code path written for ``torch.compile`` (torchvision then uses its pure-tensor ``roi_align``)."""
from __future__ import annotations

__all__ = ["is_compile_supported"]


def is_compile_supported(device_type: str) -> bool:
    """Whether ``portagrad.compile`` accepts code on ``device_type``: on every device (it
    returns the code to run eagerly, or captures steps on the devices that can)."""
    if not isinstance(device_type, str):
        raise TypeError(f"is_compile_supported(): expected a device type string, got "
                        f"{type(device_type).__name__}")
    return True
