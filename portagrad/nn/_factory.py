"""``factory_kwargs``: the ``device``/``dtype``/``memory_format`` keywords a module passes on to
the tensors it creates (``torch.nn.factory_kwargs``)."""
from __future__ import annotations

from typing import Any

__all__ = ["factory_kwargs"]


def factory_kwargs(kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """The factory keywords of ``kwargs`` (given directly or under ``factory_kwargs``), checked:
    unknown keys or one given both ways raise ``TypeError``."""
    if kwargs is None:
        return {}
    simple_keys = {"device", "dtype", "memory_format"}
    expected_keys = simple_keys | {"factory_kwargs"}
    if not kwargs.keys() <= expected_keys:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected_keys}")
    r = dict(kwargs.get("factory_kwargs", {}))
    for k in simple_keys:
        if k in kwargs:
            if k in r:
                raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
            r[k] = kwargs[k]
    return r
