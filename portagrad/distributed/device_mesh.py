"""``DeviceMesh`` and ``init_device_mesh``: ranks laid out as an n-D array, with one process
group per line along each dimension (``torch.distributed.device_mesh``).

``init_device_mesh("cpu", (2, 4), mesh_dim_names=("dp", "tp"))`` on 8 ranks gives every rank a
"tp" group of the 4 ranks of its row and a "dp" group of the 2 of its column; ``mesh["dp"]`` is
the 1-D mesh of this rank's column, ``mesh.get_group("tp")`` the row's group. The groups are made
when the mesh is (every rank of the default group takes part); slicing makes none. The device
type is recorded only: the MPI engine moves tensors of every device.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _creation, _dtype
from .._tensor import Tensor
from ._group import ProcessGroup
from ._mpi import mpi
from ._world import _groups, _world, check_backend

__all__ = ["DeviceMesh", "init_device_mesh"]


def _as_array(mesh: Any) -> np.ndarray:
    if isinstance(mesh, Tensor):
        arr = mesh.cpu().numpy()
    else:
        arr = np.asarray(mesh)
    if arr.dtype.kind not in "iu" or arr.ndim == 0:
        raise ValueError(f"mesh must be an n-D array of integer ranks, got {mesh!r}")
    return arr.astype(np.int64)


class DeviceMesh:
    """An n-D array of global ranks and its groups (``torch.distributed.device_mesh.DeviceMesh``).

    Every rank of the default group constructs it with the same ``mesh``."""

    def __init__(self, device_type: str, mesh: Any, *, mesh_dim_names: tuple[str, ...] | None
                 = None, _init_backend: bool = True, _groups_by_dim: list | None = None,
                 _rank: int | None = None) -> None:
        if not isinstance(device_type, str):
            raise TypeError(f"device_type must be a string, got {type(device_type).__name__}")
        arr = _as_array(mesh)
        if len(set(arr.reshape(-1).tolist())) != arr.size:
            raise ValueError(f"mesh must not repeat a rank: {arr.tolist()}")
        if mesh_dim_names is not None:
            mesh_dim_names = tuple(mesh_dim_names)
            if len(mesh_dim_names) != arr.ndim:
                raise ValueError(f"mesh_dim_names {mesh_dim_names} must name each of the "
                                 f"{arr.ndim} dimensions of the mesh")
            if len(set(mesh_dim_names)) != len(mesh_dim_names):
                raise RuntimeError(f"Each mesh_dim_name must be unique, got {mesh_dim_names}")
        self.device_type = device_type
        self._mesh = arr
        self.mesh_dim_names = mesh_dim_names
        self._rank = _world().rank() if _rank is None else _rank
        where = np.argwhere(arr == self._rank)
        self._coord: list[int] | None = [int(c) for c in where[0]] if len(where) else None
        if _groups_by_dim is not None:
            self._dim_groups = _groups_by_dim
        elif _init_backend:
            self._dim_groups = [self._make_group(d) for d in range(arr.ndim)]
        else:
            raise ValueError("DeviceMesh without _init_backend has no groups to give")

    def _make_group(self, dim: int) -> ProcessGroup | None:
        """The group of the line through this rank along ``dim`` (``None`` outside the mesh):
        one communicator split over the default group, in which every rank takes part."""
        world = _world()
        n = world.size()
        if self._mesh.max() >= n or self._mesh.min() < 0:
            raise ValueError(f"mesh names ranks outside the default group of {n}: "
                             f"{self._mesh.tolist()}")
        MPI = mpi()
        lines = np.moveaxis(self._mesh, dim, -1).reshape(-1, self._mesh.shape[dim])
        color, key, members = MPI.UNDEFINED, 0, None
        for i, line in enumerate(lines.tolist()):
            if self._rank in line:
                color, key, members = i, line.index(self._rank), line
        comm = world._comm.Split(color, key)  # collective over the default group
        if members is None:
            return None
        pg = ProcessGroup(comm, members, world._timeout, self._rank)
        _groups.append(pg)
        return pg

    # ------------------------------------------------------------------ torch API
    @property
    def mesh(self) -> Tensor:
        """The ranks, as an int64 tensor of the mesh's shape."""
        return _creation.tensor(self._mesh, dtype=_dtype.int64, device="cpu")

    @property
    def ndim(self) -> int:
        return int(self._mesh.ndim)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(s) for s in self._mesh.shape)

    def size(self, mesh_dim: int | None = None) -> int:
        """The number of ranks (along ``mesh_dim``)."""
        return int(self._mesh.size) if mesh_dim is None else self.shape[self._dim(mesh_dim)]

    def _dim(self, mesh_dim: int | str | None) -> int:
        if mesh_dim is None:
            if self.ndim != 1:
                raise RuntimeError(f"Found the DeviceMesh have {self.ndim} dimensions. Optional "
                                   f"kwarg `mesh_dim` needs to be specified when device_mesh.ndim"
                                   f" > 1.")
            return 0
        if isinstance(mesh_dim, str):
            if not self.mesh_dim_names or mesh_dim not in self.mesh_dim_names:
                raise KeyError(f"Mesh dimension '{mesh_dim}' does not exist. Available mesh "
                               f"dimensions are: mesh_dim_names={self.mesh_dim_names}")
            return self.mesh_dim_names.index(mesh_dim)
        if not -self.ndim <= mesh_dim < self.ndim:
            raise IndexError(f"mesh_dim {mesh_dim} is out of range for a {self.ndim}-D mesh")
        return mesh_dim % self.ndim

    def get_group(self, mesh_dim: int | str | None = None) -> Any:
        """The group of this rank's line along ``mesh_dim`` (optional for a 1-D mesh)."""
        group = self._dim_groups[self._dim(mesh_dim)]
        if group is None:
            raise RuntimeError(f"rank {self._rank} is not in the mesh {self._mesh.tolist()}")
        return group

    def get_all_groups(self) -> list[Any]:
        """The groups of every dimension, in order."""
        return [self.get_group(d) for d in range(self.ndim)]

    def get_rank(self) -> int:
        """This process's global rank."""
        return self._rank

    def get_local_rank(self, mesh_dim: int | str | None = None) -> int:
        """This rank's index along ``mesh_dim`` (its rank in that dimension's group)."""
        d = self._dim(mesh_dim)
        if self._coord is None:
            raise RuntimeError(f"rank {self._rank} is not in the mesh {self._mesh.tolist()}")
        return self._coord[d]

    def get_coordinate(self) -> list[int] | None:
        """This rank's index along each dimension (``None`` outside the mesh)."""
        return None if self._coord is None else list(self._coord)

    def __getitem__(self, names: str | Sequence[str]) -> DeviceMesh:
        """The sub-mesh of this rank along the named dimensions (one name, or every name in
        order); no group is made."""
        if isinstance(names, str):
            names = (names,)
        names = tuple(names)
        if not self.mesh_dim_names:
            raise RuntimeError("Cannot slice a DeviceMesh without mesh_dim_names!")
        dims = [self._dim(nm) for nm in names]
        if dims == list(range(self.ndim)):
            return self
        if len(dims) != 1:
            raise NotImplementedError(f"slicing {names} out of the mesh {self.mesh_dim_names}: "
                                      f"only one dimension, or all of them in order, is "
                                      f"supported")
        if self._coord is None:
            raise RuntimeError(f"rank {self._rank} is not in the mesh {self._mesh.tolist()}")
        d = dims[0]
        index = tuple(slice(None) if i == d else c for i, c in enumerate(self._coord))
        return DeviceMesh(self.device_type, self._mesh[index], mesh_dim_names=names,
                          _groups_by_dim=[self._dim_groups[d]], _rank=self._rank)

    def __repr__(self) -> str:
        names = f", mesh_dim_names={self.mesh_dim_names}" if self.mesh_dim_names else ""
        return f"DeviceMesh('{self.device_type}', {self._mesh.tolist()}{names})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, DeviceMesh) and self.shape == other.shape
                and np.array_equal(self._mesh, other._mesh)
                and self.mesh_dim_names == other.mesh_dim_names)

    def __hash__(self) -> int:
        return hash((self._mesh.tobytes(), self.shape, self.mesh_dim_names))


def init_device_mesh(device_type: str, mesh_shape: tuple[int, ...], *,
                     mesh_dim_names: tuple[str, ...] | None = None,
                     backend_override: Any = None) -> DeviceMesh:
    """A mesh of ``mesh_shape`` over ranks ``0..N-1`` in order (N, the product of the shape, must
    be the world size); every rank calls it."""
    if isinstance(mesh_shape, int) or not all(isinstance(s, int) for s in mesh_shape):
        raise TypeError(f"mesh_shape must be a tuple of ints, got {mesh_shape!r}")
    if mesh_dim_names is not None and len(set(mesh_dim_names)) != len(mesh_dim_names):
        raise RuntimeError(f"Each mesh_dim_name must be unique. Found repeated mesh_dim_name in "
                           f"mesh_dim_names {mesh_dim_names}")
    if mesh_dim_names is not None and len(mesh_shape) != len(mesh_dim_names):
        raise RuntimeError(f"mesh_shape and mesh_dim_names should have same length! Found "
                           f"len(mesh_dim_names): {len(mesh_dim_names)} and len(mesh_shape):"
                           f"{len(mesh_shape)}.")
    if backend_override is not None:
        for b in (backend_override if isinstance(backend_override, (tuple, list))
                  else backend_override.values() if isinstance(backend_override, dict)
                  else [backend_override]):
            check_backend(b if isinstance(b, str) or b is None else None)
    world = _world().size()
    if math.prod(mesh_shape) != world:
        raise RuntimeError(f"mesh_shape {tuple(mesh_shape)} has {math.prod(mesh_shape)} ranks, "
                           f"but the world has {world}")
    mesh = np.arange(world, dtype=np.int64).reshape(tuple(mesh_shape))
    return DeviceMesh(device_type, mesh, mesh_dim_names=mesh_dim_names)
