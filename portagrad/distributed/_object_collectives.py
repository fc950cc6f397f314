"""Collectives of Python objects: ``broadcast_object_list``, ``all_gather_object``,
``gather_object``, ``scatter_object_list``, ``send_object_list``/``recv_object_list``.

PyTorch pickles the objects and unpickles what a peer sent with plain ``pickle``, which runs
whatever code the bytes name. Here the objects are serialised with :func:`portagrad.save` and
read back with :func:`portagrad.load` ``(weights_only=True)``: the restricted unpickler of
``portagrad.serialization``, which rebuilds plain data (numbers, strings, bytes, ``None``), the
containers (list, tuple, dict, set, ``OrderedDict``...), tensors, dtypes and devices, and refuses
any other class unless the program allows it with
``portagrad.serialization.add_safe_globals([...])``. A peer's bytes never execute code.

Each collective moves the bytes as uint8 tensors with the tensor collectives: the sizes first,
then the padded payloads, as PyTorch does.
"""
from __future__ import annotations

import io
from typing import Any

import numpy as np

from .. import _creation, _dtype, serialization
from . import _collectives as _c
from ._world import resolve

__all__ = ["broadcast_object_list", "all_gather_object", "gather_object", "scatter_object_list",
           "send_object_list", "recv_object_list", "dumps", "loads"]


def dumps(obj: Any) -> bytes:
    """The bytes of ``obj`` (:func:`portagrad.save`'s format, pickle protocol 4)."""
    buf = io.BytesIO()
    serialization.save(obj, buf, pickle_protocol=4)
    return buf.getvalue()


def loads(data: bytes) -> Any:
    """``obj`` back from :func:`dumps`'s bytes, through the restricted unpickler (tensors come
    back on the ``cpu``)."""
    return serialization.load(io.BytesIO(data), map_location="cpu", weights_only=True)


def _u8(data: bytes, size: int | None = None) -> Any:
    arr = np.zeros(len(data) if size is None else size, np.uint8)
    arr[:len(data)] = np.frombuffer(data, np.uint8)
    return _creation.tensor(arr, dtype=_dtype.uint8, device="cpu")


def _empty(n: int) -> Any:
    return _creation.zeros(n, dtype=_dtype.uint8, device="cpu")


def _sizes(n: int) -> Any:
    return _creation.zeros(n, dtype=_dtype.int64, device="cpu")


def _bytes(t: Any, n: int) -> bytes:
    return t.numpy().tobytes()[:n]


def _list(x: Any, name: str) -> list:
    if not isinstance(x, list):
        raise TypeError(f"{name} must be a list, got {type(x).__name__}")
    return x


def broadcast_object_list(object_list: list[Any], src: int | None = None, group: Any = None,
                          device: Any = None, group_src: int | None = None) -> None:
    """Replace ``object_list``'s items, on every rank, with those of rank ``src`` (the lists have
    the same length everywhere)."""
    _list(object_list, "object_list")
    pg = resolve(group)
    if pg is None:
        return
    root = _c._root(pg, src, group_src, "src")
    me = pg.rank() == root
    blobs = [dumps(o) for o in object_list] if me else []
    sizes = _sizes(len(object_list))
    if me:
        sizes.copy_(_creation.tensor([len(b) for b in blobs], dtype=_dtype.int64))
    _c.broadcast(sizes, group=pg, group_src=root)
    counts = [int(s) for s in sizes.tolist()]
    payload = _u8(b"".join(blobs)) if me else _empty(sum(counts))
    _c.broadcast(payload, group=pg, group_src=root)
    if not me:
        data = _bytes(payload, sum(counts))
        at = 0
        for i, k in enumerate(counts):
            object_list[i] = loads(data[at:at + k])
            at += k


def all_gather_object(object_list: list[Any], obj: Any, group: Any = None) -> None:
    """``object_list[i]`` of every rank gets ``obj`` of group rank ``i`` (``object_list`` has
    the group's size)."""
    _list(object_list, "object_list")
    pg = resolve(group)
    if pg is None:
        return
    n = pg.size()
    if len(object_list) != n:
        raise ValueError(f"object_list must have one entry per rank of the group ({n}), got "
                         f"{len(object_list)}")
    blob = dumps(obj)
    sizes = [_sizes(1) for _ in range(n)]
    _c.all_gather(sizes, _creation.tensor([len(blob)], dtype=_dtype.int64), group=pg)
    counts = [int(s.item()) for s in sizes]
    width = max(counts)
    outs = [_empty(width) for _ in range(n)]
    _c.all_gather(outs, _u8(blob, width), group=pg)
    for i, (t, k) in enumerate(zip(outs, counts)):
        object_list[i] = loads(_bytes(t, k))


def gather_object(obj: Any, object_gather_list: list[Any] | None = None, dst: int | None = None,
                  group: Any = None, group_dst: int | None = None) -> None:
    """Rank ``dst``'s ``object_gather_list[i]`` gets ``obj`` of group rank ``i`` (the list is
    given on ``dst`` only)."""
    pg = resolve(group)
    if pg is None:
        return
    n = pg.size()
    root = _c._root(pg, dst, group_dst, "dst")
    me = pg.rank() == root
    if me:
        _list(object_gather_list, "object_gather_list")
        assert object_gather_list is not None
        if len(object_gather_list) != n:
            raise ValueError(f"object_gather_list must have one entry per rank of the group "
                             f"({n}), got {len(object_gather_list)}")
    elif object_gather_list is not None:
        raise ValueError("Argument ``object_gather_list`` must NOT be specified on "
                         "non-destination ranks.")
    blob = dumps(obj)
    # every rank needs the widest payload (gather takes equal sizes): the sizes go to all
    sizes = [_sizes(1) for _ in range(n)]
    _c.all_gather(sizes, _creation.tensor([len(blob)], dtype=_dtype.int64), group=pg)
    counts = [int(s.item()) for s in sizes]
    width = max(counts)
    outs = [_empty(width) for _ in range(n)] if me else None
    _c.gather(_u8(blob, width), outs, group=pg, group_dst=root)
    if me:
        assert outs is not None and object_gather_list is not None
        for i, (t, k) in enumerate(zip(outs, counts)):
            object_gather_list[i] = loads(_bytes(t, k))


def scatter_object_list(scatter_object_output_list: list[Any],
                        scatter_object_input_list: list[Any] | None = None,
                        src: int | None = None, group: Any = None,
                        group_src: int | None = None) -> None:
    """``scatter_object_output_list[0]`` of group rank ``i`` gets
    ``scatter_object_input_list[i]`` of rank ``src``."""
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at "
                         "least 1.")
    pg = resolve(group)
    if pg is None:
        return
    n = pg.size()
    root = _c._root(pg, src, group_src, "src")
    me = pg.rank() == root
    if me:
        _list(scatter_object_input_list, "scatter_object_input_list")
        assert scatter_object_input_list is not None
        if len(scatter_object_input_list) != n:
            raise ValueError(f"scatter_object_input_list must have one entry per rank of the "
                             f"group ({n}), got {len(scatter_object_input_list)}")
        blobs = [dumps(o) for o in scatter_object_input_list]
        width = _creation.tensor([max(len(b) for b in blobs)], dtype=_dtype.int64)
    else:
        blobs, width = [], _sizes(1)
    _c.broadcast(width, group=pg, group_src=root)
    w = int(width.item())
    size = _sizes(1)
    _c.scatter(size, [_creation.tensor([len(b)], dtype=_dtype.int64) for b in blobs] or None,
               group=pg, group_src=root)
    out = _empty(w)
    _c.scatter(out, [_u8(b, w) for b in blobs] or None, group=pg, group_src=root)
    scatter_object_output_list[0] = loads(_bytes(out, int(size.item())))


def send_object_list(object_list: list[Any], dst: int | None = None, group: Any = None,
                     device: Any = None, group_dst: int | None = None,
                     use_batch: bool = False) -> None:
    """Send ``object_list``'s items to rank ``dst`` (which calls :func:`recv_object_list` with a
    list of the same length)."""
    _list(object_list, "object_list")
    pg = resolve(group)
    if pg is None:
        return
    blobs = [dumps(o) for o in object_list]
    _c.send(_creation.tensor([len(b) for b in blobs], dtype=_dtype.int64), dst, pg,
            group_dst=group_dst)
    _c.send(_u8(b"".join(blobs)), dst, pg, group_dst=group_dst)


def recv_object_list(object_list: list[Any], src: int | None = None, group: Any = None,
                     device: Any = None, group_src: int | None = None,
                     use_batch: bool = False) -> int:
    """Fill ``object_list`` with the items sent by rank ``src`` (any rank if ``None``); returns
    the sender's rank (``-1`` outside ``group``)."""
    _list(object_list, "object_list")
    pg = resolve(group)
    if pg is None:
        return -1
    sizes = _sizes(len(object_list))
    sender = _c.recv(sizes, src, pg, group_src=group_src)
    counts = [int(s) for s in sizes.tolist()]
    payload = _empty(sum(counts))
    _c.recv(payload, sender, pg)
    data = _bytes(payload, sum(counts))
    at = 0
    for i, k in enumerate(counts):
        object_list[i] = loads(data[at:at + k])
        at += k
    return sender
