"""Sharded checkpoints (``torch.distributed.checkpoint.save``/``load``) in safetensors files.

``save(state_dict, checkpoint_id=folder)``: every rank writes the rows it holds of each sharded
tensor (those of a ``fully_shard`` model's ``state_dict()``) to ``folder/__{rank}_0.safetensors``;
tensors that are not sharded (buffers, a plain model's weights: the same on every rank) are written
by rank 0 only. Rank 0 writes ``folder/index.json``: for each tensor (nested dicts flattened with
dots: ``{"model": {...}}`` gives ``model.inp.weight``), its whole shape, dtype and the files and
row offsets of its pieces; plain values (numbers, strings) are stored in the index itself.

``load(state_dict, checkpoint_id=folder)`` fills the tensors of ``state_dict`` in place from the
pieces that overlap the rows each one holds, so a checkpoint saved on N ranks loads on any number
of ranks (and into a model that is not sharded at all). Loading reads JSON and safetensors only:
it never runs code from the checkpoint.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from ... import serialization
from ..._tensor import Tensor
from ...autograd import grad_mode
from .._collectives_more import barrier
from .._group import ProcessGroup
from .._object_collectives import all_gather_object
from .._world import is_initialized, resolve
from ..fsdp._param import shard_info

__all__ = ["save", "load", "FileSystemWriter", "FileSystemReader"]

INDEX = "index.json"
_FORMAT = "portagrad.distributed.checkpoint"


class FileSystemWriter:
    """Where :func:`save` writes: a folder (``torch``'s ``FileSystemWriter(path)``)."""

    def __init__(self, path: str | os.PathLike, *args: Any, **kwargs: Any) -> None:
        self.path = os.fspath(path)


class FileSystemReader:
    """Where :func:`load` reads: a folder (``torch``'s ``FileSystemReader(path)``)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)


def _flatten(obj: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if not isinstance(k, str):
                raise TypeError(f"distributed.checkpoint: state_dict keys must be strings, got "
                                f"{k!r} under {prefix[:-1] or 'the top level'!r}")
            yield from _flatten(v, f"{prefix}{k}.")
    else:
        yield prefix[:-1], obj


def _folder(checkpoint_id: Any, io: Any, kind: type[Any]) -> str:
    if io is not None:
        if not isinstance(io, kind):
            raise TypeError(f"expected a {kind.__name__}, got {type(io).__name__}")
        return str(io.path)
    if checkpoint_id is None:
        raise ValueError("distributed.checkpoint needs checkpoint_id (a folder) or a "
                         f"{kind.__name__}")
    return os.fspath(checkpoint_id)


def _group(process_group: Any, no_dist: bool) -> ProcessGroup | None:
    if no_dist or not is_initialized():
        return None
    return resolve(process_group)


def _piece(t: Tensor) -> tuple[list[int], int]:
    """(whole shape, first row) of what ``t`` holds."""
    info = shard_info(t)
    if info is None:
        return list(t.shape), 0
    return list(info.global_shape), info.offset


def save(state_dict: dict[str, Any], *, checkpoint_id: str | os.PathLike | None = None,
         storage_writer: FileSystemWriter | None = None, planner: Any = None,
         process_group: Any = None, no_dist: bool = False) -> dict[str, Any]:
    """Write ``state_dict`` as a sharded checkpoint (see the module doc); every rank of the
    group calls it. Returns the index."""
    if planner is not None:
        raise NotImplementedError("distributed.checkpoint.save(planner=...) is not supported by "
                                  "portagrad")
    folder = _folder(checkpoint_id, storage_writer, FileSystemWriter)
    group = _group(process_group, no_dist)
    rank = 0 if group is None else group.rank()
    os.makedirs(folder, exist_ok=True)
    fname = f"__{rank}_0.safetensors"
    mine: dict[str, Tensor] = {}
    entries: dict[str, Any] = {}  # what this rank wrote: name -> (shape, dtype, offset, rows)
    values: dict[str, Any] = {}
    for name, v in _flatten(state_dict):
        if isinstance(v, Tensor):
            whole, offset = _piece(v)
            if shard_info(v) is None and rank != 0:
                continue  # replicated: rank 0's copy is the one
            local = v.detach()
            if local.ndim == 0:  # a 0-d tensor is stored as one row
                local = local.reshape(1)
            entries[name] = (whole, str(v.dtype).replace("portagrad.", ""), offset,
                             int(local.shape[0]) if local.ndim else 1)
            if local.numel():
                mine[name] = local.cpu()
        elif v is None or isinstance(v, (bool, int, float, str)):
            values[name] = v
        else:
            raise TypeError(f"distributed.checkpoint.save: {name!r} is a {type(v).__name__}: "
                            f"only tensors, numbers, strings and None can be saved")
    serialization.save(mine, os.path.join(folder, fname))
    everyone: list[Any] = [None] * (1 if group is None else group.size())
    if group is None:
        everyone[0] = entries
    else:
        all_gather_object(everyone, entries, group=group)
    index: dict[str, Any] = {"format": _FORMAT, "version": 1, "values": values, "tensors": {}}
    for r, ents in enumerate(everyone):
        for name, (whole, dtype, offset, rows) in ents.items():
            t = index["tensors"].setdefault(name, {"shape": whole, "dtype": dtype, "pieces": []})
            if t["shape"] != whole or t["dtype"] != dtype:
                raise ValueError(f"distributed.checkpoint.save: ranks disagree on {name!r}: "
                                 f"{t['shape']} {t['dtype']} and {whole} {dtype}")
            if rows:
                t["pieces"].append({"file": f"__{r}_0.safetensors", "offset": offset,
                                    "rows": rows})
    if rank == 0:
        tmp = os.path.join(folder, INDEX + ".tmp")
        with open(tmp, "w") as fh:
            json.dump(index, fh, indent=1)
        os.replace(tmp, os.path.join(folder, INDEX))
    if group is not None:
        barrier(group=group)  # the index exists when save returns on any rank
    return index


def load(state_dict: dict[str, Any], *, checkpoint_id: str | os.PathLike | None = None,
         storage_reader: FileSystemReader | None = None, planner: Any = None,
         process_group: Any = None, no_dist: bool = False) -> None:
    """Fill ``state_dict``'s tensors in place from a checkpoint written by :func:`save` on any
    number of ranks (sharded tensors get their rows, others the whole tensor); plain values are
    replaced in their dicts. Raises ``KeyError`` for a name the checkpoint lacks and
    ``ValueError`` for a shape or dtype that differs."""
    if planner is not None:
        raise NotImplementedError("distributed.checkpoint.load(planner=...) is not supported by "
                                  "portagrad")
    folder = _folder(checkpoint_id, storage_reader, FileSystemReader)
    with open(os.path.join(folder, INDEX)) as fh:
        index = json.load(fh)
    if not isinstance(index, dict) or index.get("format") != _FORMAT:
        raise ValueError(f"{folder}: not a portagrad distributed checkpoint (no {INDEX} of "
                         f"format {_FORMAT!r})")
    files: dict[str, dict[str, Tensor]] = {}

    def piece(file: str, name: str) -> Tensor:
        if os.path.basename(file) != file:
            raise ValueError(f"{folder}: the index names a file outside the checkpoint: {file!r}")
        if file not in files:
            files[file] = serialization.load(os.path.join(folder, file), weights_only=True)
        return files[file][name]

    with grad_mode.no_grad():
        _fill(state_dict, "", index, piece)


def _fill(obj: dict[str, Any], prefix: str, index: dict[str, Any], piece: Any) -> None:
    for k in list(obj):
        name = prefix + k
        v = obj[k]
        if isinstance(v, dict):
            _fill(v, name + ".", index, piece)
        elif isinstance(v, Tensor):
            entry = index["tensors"].get(name)
            if entry is None:
                raise KeyError(f"distributed.checkpoint.load: the checkpoint has no {name!r}")
            whole, offset = _piece(v)
            dtype = str(v.dtype).replace("portagrad.", "")
            if entry["shape"] != whole or entry["dtype"] != dtype:
                raise ValueError(f"distributed.checkpoint.load: {name!r} is {whole} {dtype} "
                                 f"here but {entry['shape']} {entry['dtype']} in the checkpoint")
            dst = v.reshape(1) if v.ndim == 0 else v
            lo, hi = offset, offset + (dst.shape[0] if dst.ndim else 1)
            got = 0
            for pc in entry["pieces"]:
                a, b = max(lo, pc["offset"]), min(hi, pc["offset"] + pc["rows"])
                if a >= b:
                    continue
                src = piece(pc["file"], name)[a - pc["offset"]:b - pc["offset"]]
                dst[a - lo:b - lo].copy_(src)
                got += b - a
            if got != hi - lo:
                raise ValueError(f"distributed.checkpoint.load: the pieces of {name!r} cover "
                                 f"{got} of rows [{lo}, {hi})")
        else:
            if name not in index["values"]:
                raise KeyError(f"distributed.checkpoint.load: the checkpoint has no {name!r}")
            obj[k] = index["values"][name]
