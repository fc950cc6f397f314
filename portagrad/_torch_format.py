"""PyTorch's checkpoint format (``torch.save``'s zip archive), read and written without torch.

A PyTorch checkpoint is an uncompressed zip archive whose records sit under one folder:
``data.pkl`` (the object, pickled with protocol 2), ``data/<key>`` (the raw little-endian bytes
of each storage), ``byteorder``, ``version`` and a few markers. In ``data.pkl`` a tensor is a call
of ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)`` whose
storage is a *persistent id* ``("storage", torch.<Type>Storage, key, location, numel)``; views of
one storage name the same key.

Reading never imports torch and never builds an object the caller did not allow: the restricted
unpickler (``weights_only=True``, the default) maps PyTorch's tensor, parameter, dtype, device and
``Size`` globals to portagrad's and resolves everything else through the ``safe_globals``
allow-list, as ``torch.load(weights_only=True)`` does. Each storage's record is checked against
the size its reference claims before it is read, every view against its storage, and records are
looked up by name only (nothing is extracted), so a hostile archive raises a typed error. The
dtypes PyTorch gave no storage class (uint16/32/64, the float8s, complex32) are written as
``_rebuild_tensor_v3`` over a ``torch.storage.UntypedStorage`` (its numel counts bytes) with the
dtype as its last argument.

Writing produces what ``torch.save`` writes, so ``torch.load(f, weights_only=True)`` reads it:
tensors are copied to the host and saved with location ``"cpu"``.
"""
from __future__ import annotations

import collections
import io
import pickle
import zipfile
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _dtype, _layout, _safe_globals
from ._device import device
from ._storage import Size
from ._tensor import Tensor
from .nn.parameter import Parameter

__all__ = ["is_torch_zip", "is_mapped", "data_pickle", "load", "dumps", "TorchFormatError",
           "PlacementError"]


class TorchFormatError(pickle.UnpicklingError):
    """A PyTorch archive that cannot be read: malformed, or holding what portagrad cannot build
    (turned into ``LoadError`` by :func:`portagrad.load`)."""


# torch.<Name>Storage -> dtype of its elements
_STORAGE_DTYPES: dict[str, _dtype.dtype] = {
    "DoubleStorage": _dtype.float64, "FloatStorage": _dtype.float32,
    "HalfStorage": _dtype.float16, "BFloat16Storage": _dtype.bfloat16,
    "LongStorage": _dtype.int64, "IntStorage": _dtype.int32, "ShortStorage": _dtype.int16,
    "CharStorage": _dtype.int8, "ByteStorage": _dtype.uint8, "BoolStorage": _dtype.bool,
    "ComplexFloatStorage": _dtype.complex64, "ComplexDoubleStorage": _dtype.complex128,
}
_STORAGE_NAMES = {d: name for name, d in _STORAGE_DTYPES.items()}

# the dtype names PyTorch pickles as globals of module ``torch``
_TORCH_DTYPES: dict[str, _dtype.dtype] = {d.name: d for d in _STORAGE_DTYPES.values()}
_TORCH_DTYPES.update(half=_dtype.float16, float=_dtype.float32, double=_dtype.float64,
                     long=_dtype.int64, int=_dtype.int32, short=_dtype.int16,
                     cfloat=_dtype.complex64, cdouble=_dtype.complex128)
# the dtypes portagrad names without having tensors of them (uint16, float8_e4m3fn, complex32...)
# carry PyTorch's names: a checkpoint may hold them as values (torch.load(weights_only=True)
# allows them), and a portagrad dtype value is written as that torch global
_TORCH_DTYPES.update({d.name: d for d in _dtype.DECLARED_ONLY})
_UNTYPED = "UntypedStorage"  # torch.storage.UntypedStorage: raw bytes, the dtype comes later

_FOLDER = "archive"  # the records' folder in the archives written here (torch uses the file's stem)
_ALIGNMENT = 64  # storages start at multiples of this many bytes, as torch writes (for mmap)


def is_torch_zip(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a zip archive (PyTorch's format)."""
    return head[:4] == b"PK\x03\x04"


# ----------------------------------------------------------------------------------- reading
class _StorageType:
    """What a ``torch.<Type>Storage`` global unpickles to: the element dtype (bytes, as uint8,
    for ``UntypedStorage``, whose numel counts bytes)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.untyped = name == _UNTYPED
        self.dtype = _dtype.uint8 if self.untyped else _STORAGE_DTYPES[name]


class _LoadedStorage:
    """One storage of the archive, read once and placed once: every view of it shares it."""

    def __init__(self, archive: _Archive, key: str, dtype: _dtype.dtype, location: str,
                 numel: int, untyped: bool = False) -> None:
        self.archive, self.key, self.dtype = archive, key, dtype
        self.location, self.numel, self.untyped = location, numel, untyped
        self._flat: Tensor | None = None
        self._typed: dict[_dtype.dtype, _LoadedStorage] = {}

    def as_dtype(self, dt: _dtype.dtype) -> _LoadedStorage:
        """This untyped storage's bytes read as ``dt`` elements (``_rebuild_tensor_v3``): one
        storage per dtype, so views of one dtype share it (views of two dtypes get a copy each)."""
        typed = self._typed.get(dt)
        if typed is None:
            typed = self._typed[dt] = _LoadedStorage(self.archive, self.key, dt, self.location,
                                                     self.numel // dt.itemsize)
        return typed

    def read(self, name: str) -> np.ndarray:  # the reader _Placer expects
        return self.archive.storage_array(self.key, self.dtype, self.numel)

    def flat(self) -> Tensor:
        if self._flat is None:
            try:
                self._flat = self.archive.place(self, self.key, self.location)
            except TorchFormatError:  # the file's own error (a record failing its CRC check)
                raise
            except Exception as exc:  # the device's own error, not the file's: raised as it is
                raise PlacementError(exc) from None
        return self._flat


class PlacementError(Exception):
    """Carries an error from placing a storage (``map_location``, the device) out of the
    unpickler, past the handlers that turn malformed pickles into ``LoadError``."""

    def __init__(self, exc: Exception) -> None:
        super().__init__(str(exc))
        self.exc = exc


def _check_ints(what: str, values: Any) -> tuple[int, ...]:
    if not isinstance(values, (tuple, list)) or not all(
            type(v) is int and v >= 0 for v in values):
        raise TorchFormatError(f"corrupted PyTorch file: a tensor's {what} is {values!r}")
    return tuple(values)


def _rebuild_tensor(storage: Any, storage_offset: Any, size: Any, stride: Any,
                    requires_grad: Any = False, backward_hooks: Any = None,
                    metadata: Any = None) -> Tensor:
    """``torch._utils._rebuild_tensor_v2``: a view of ``storage``."""
    if not isinstance(storage, _LoadedStorage):
        raise TorchFormatError(f"corrupted PyTorch file: a tensor's storage is {storage!r}")
    shape, strides = _check_ints("size", size), _check_ints("stride", stride)
    (offset,) = _check_ints("storage offset", (storage_offset,))
    if len(shape) != len(strides):
        raise TorchFormatError(f"corrupted PyTorch file: a tensor of size {list(shape)} has "
                               f"strides {list(strides)}")
    if all(shape):
        last = offset + sum((n - 1) * s for n, s in zip(shape, strides))
        if last >= storage.numel:
            raise TorchFormatError(
                f"corrupted PyTorch file: a tensor of size {list(shape)}, stride {list(strides)} "
                f"and offset {offset} reaches past its storage of {storage.numel} elements")
    flat = storage.flat()
    t = Tensor._make(flat._storage, flat._v.offset + offset, shape, strides, flat.dtype)
    if requires_grad is True and (t.dtype.is_floating_point or t.dtype.is_complex):
        t.requires_grad_(True)
    return t


def _rebuild_tensor_v3(storage: Any, storage_offset: Any, size: Any, stride: Any,
                       requires_grad: Any, backward_hooks: Any, dtype: Any,
                       metadata: Any = None) -> Tensor:
    """``torch._utils._rebuild_tensor_v3`` (a dtype without a storage class of its own): a view
    of an ``UntypedStorage``'s bytes as ``dtype`` elements (offset and strides count elements)."""
    if isinstance(dtype, _dtype.dtype) and dtype in _dtype.DECLARED_ONLY:
        raise TorchFormatError(f"this PyTorch file holds a tensor of dtype torch.{dtype.name}; "
                               f"portagrad names that dtype but has no {dtype.name} tensors yet")
    if isinstance(dtype, _dtype.dtype) and isinstance(storage, _LoadedStorage) and \
            storage.untyped:
        storage = storage.as_dtype(dtype)
    if not isinstance(dtype, _dtype.dtype) or not isinstance(storage, _LoadedStorage) or \
            dtype is not storage.dtype:
        raise TorchFormatError(f"corrupted PyTorch file: a tensor of dtype {dtype!r} on a "
                               f"storage of {getattr(storage, 'dtype', storage)!r}")
    return _rebuild_tensor(storage, storage_offset, size, stride, requires_grad)


def _rebuild_parameter(data: Any, requires_grad: Any, backward_hooks: Any,
                       state: Any = None) -> Any:
    """``torch._utils._rebuild_parameter`` (and ``_with_state``, whose extra attributes must be
    plain data)."""
    if not isinstance(data, Tensor):
        raise TorchFormatError(f"corrupted PyTorch file: a parameter holds {data!r}")
    p = Parameter(data.detach(), requires_grad=bool(requires_grad))
    if isinstance(state, dict):
        for k, v in state.items():
            if isinstance(k, str):
                setattr(p, k, v)
    return p


def _torch_device(spec: Any, index: Any = None) -> device:
    return device(spec) if index is None else device(spec, index)


_LAYOUTS = {f"torch.{lay.name}": lay for lay in (_layout.strided, _layout.sparse_coo)}


def _torch_layout(name: Any) -> _layout.layout:
    """``torch.serialization._get_layout("torch.strided")``, how torch pickles a layout: a
    lookup among portagrad's layout constants, nothing else."""
    lay = _LAYOUTS.get(name) if isinstance(name, str) else None
    if lay is None:
        raise TorchFormatError(f"this PyTorch file holds the layout {name!r}, which portagrad "
                               f"does not have")
    return lay


_TORCH_GLOBALS: dict[str, Any] = {
    "torch._utils._rebuild_tensor_v2": _rebuild_tensor,
    "torch._utils._rebuild_tensor_v3": _rebuild_tensor_v3,
    "torch._utils._rebuild_parameter": _rebuild_parameter,
    "torch._utils._rebuild_parameter_with_state": _rebuild_parameter,
    "torch.device": _torch_device,
    "torch.Size": Size,
    "torch.serialization._get_layout": _torch_layout,
    "collections.OrderedDict": collections.OrderedDict,
    f"torch.storage.{_UNTYPED}": _StorageType(_UNTYPED),
}
_TORCH_GLOBALS.update({f"torch.{name}": _StorageType(name) for name in _STORAGE_DTYPES})
_TORCH_GLOBALS.update({f"torch.{name}": d for name, d in _TORCH_DTYPES.items()})


def _torch_global(module: str, name: str) -> Any:
    obj = _TORCH_GLOBALS.get(f"{module}.{name}")
    if obj is None and module.split(".")[0] == "torch" and name.endswith("Storage"):
        raise TorchFormatError(f"this PyTorch file holds a torch.{name}, a dtype portagrad does "
                               f"not have")
    return obj


class _Archive:
    """The zip archive: its records by name, their checked reads, the storages' placement."""

    def __init__(self, fh: Any, size: int, place: Callable[..., Tensor]) -> None:
        try:
            self.zf = zipfile.ZipFile(fh)
            infos = self.zf.infolist()
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise TorchFormatError(f"corrupted zip archive ({exc})") from None
        self.records = {i.filename: i for i in infos}
        pkl = [n for n in self.records if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(pkl) != 1:
            raise TorchFormatError("a zip archive that is not a PyTorch checkpoint (no single "
                                   "<folder>/data.pkl record)")
        self.folder = pkl[0][: -len("data.pkl")]
        for info in infos:
            if info.compress_type != zipfile.ZIP_STORED:
                raise TorchFormatError(f"record {info.filename!r} is compressed; PyTorch writes "
                                       f"every record uncompressed")
            if info.file_size > size:
                raise TorchFormatError(f"record {info.filename!r} claims {info.file_size} bytes "
                                       f"in a file of {size}")
        order = self.records.get(self.folder + "byteorder")
        self.byteorder = "little" if order is None else self.read(order.filename).decode(
            "ascii", "replace")
        if self.byteorder not in ("little", "big"):
            raise TorchFormatError(f"corrupted PyTorch file: byteorder {self.byteorder!r}")
        self.place = place
        self.storages: dict[str, _LoadedStorage] = {}

    def read(self, name: str) -> bytes:
        try:
            return self.zf.read(name)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, KeyError) as exc:
            raise TorchFormatError(f"corrupted PyTorch file: record {name!r} cannot be read "
                                   f"({exc})") from None

    def storage(self, pid: Any) -> _LoadedStorage:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise TorchFormatError(f"corrupted PyTorch file: unknown persistent id {pid!r}")
        _, stype, key, location, numel = pid
        if not isinstance(stype, _StorageType) or not isinstance(key, str) or \
                not isinstance(location, str) or type(numel) is not int or numel < 0:
            raise TorchFormatError(f"corrupted PyTorch file: unknown persistent id {pid!r}")
        known = self.storages.get(key)
        if known is not None:
            if known.dtype is not stype.dtype or known.numel != numel:
                raise TorchFormatError(f"corrupted PyTorch file: storage {key!r} is referred to "
                                       f"as two different storages")
            return known
        record = self.records.get(f"{self.folder}data/{key}")
        if record is None:
            raise TorchFormatError(f"corrupted PyTorch file: no record for storage {key!r}")
        if record.file_size != numel * stype.dtype.itemsize:
            raise TorchFormatError(
                f"corrupted PyTorch file: storage {key!r} of {numel} {stype.dtype.name} elements "
                f"has a record of {record.file_size} bytes")
        s = self.storages[key] = _LoadedStorage(self, key, stype.dtype, location, numel,
                                                stype.untyped)
        return s

    def storage_array(self, key: str, dt: _dtype.dtype, numel: int) -> np.ndarray:
        data = self.read(f"{self.folder}data/{key}")
        arr = np.frombuffer(data, dtype=np.dtype(dt.numpy).newbyteorder(
            "<" if self.byteorder == "little" else ">"), count=numel)
        return arr.astype(dt.numpy)  # native byte order, writable


def is_mapped(module: str, name: str) -> bool:
    """Whether the global ``module.name`` of a PyTorch pickle is one this module builds."""
    return f"{module}.{name}" in _TORCH_GLOBALS


def data_pickle(fh: Any, size: int) -> bytes:
    """The ``data.pkl`` record of the PyTorch archive ``fh`` (read, not unpickled)."""
    archive = _Archive(fh, size, lambda *a: None)  # type: ignore[arg-type,return-value]
    return archive.read(archive.folder + "data.pkl")


def load(fh: Any, size: int, place: Callable[..., Tensor], weights_only: bool,
         pickle_module: Any = None, pickle_load_args: dict[str, Any] | None = None) -> Any:
    """The object in the PyTorch archive ``fh`` (``size`` bytes), its storages placed by
    ``place(reader, key, saved_location)`` (``serialization``'s ``map_location`` logic)."""
    archive = _Archive(fh, size, place)
    payload = archive.read(archive.folder + "data.pkl")
    if weights_only:
        base: Any = _safe_globals.WeightsUnpickler
    else:
        base = (pickle_module or pickle).Unpickler

    class _Unpickler(base):  # type: ignore[misc,valid-type]
        def find_class(self, module: str, name: str) -> Any:
            obj = _torch_global(module, name)
            if obj is not None:
                return obj
            if not weights_only and module.split(".")[0] == "torch":
                raise TorchFormatError(
                    f"this PyTorch file needs {module}.{name}, a PyTorch object portagrad cannot "
                    f"build (a whole pickled module?); save its state_dict() in PyTorch instead")
            return super().find_class(module, name)

        def persistent_load(self, pid: Any) -> Any:
            return archive.storage(pid)

    return _Unpickler(io.BytesIO(payload), **(pickle_load_args or {})).load()


# ----------------------------------------------------------------------------------- writing
class _Global:
    """A PyTorch global (module, name) to write into the pickle without importing torch."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __call__(self, *args: Any) -> Any:  # pickle's save_reduce asks for a callable
        raise TypeError(f"{self.module}.{self.name} is PyTorch's, named in a pickle only")


_REBUILD_TENSOR = _Global("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = _Global("torch._utils", "_rebuild_parameter")
_TORCH_DEVICE = _Global("torch", "device")
_TORCH_SIZE = _Global("torch", "Size")
_TORCH_LAYOUT = _Global("torch.serialization", "_get_layout")
_GLOBAL_OF: dict[Any, _Global] = {}


class _StorageRef:
    """A storage to be written as its own record (persistent id)."""

    def __init__(self, key: str, dtype: _dtype.dtype, data: np.ndarray) -> None:
        self.key, self.dtype, self.data = key, dtype, data


# the pure-Python pickler: its dispatch table can name our stand-ins for PyTorch's globals (the C
# pickler's cannot), and a checkpoint holds few objects (the bytes go to records, not the pickle)
_PurePickler: Any = pickle._Pickler  # type: ignore[attr-defined]


class _Pickler(_PurePickler):
    """Protocol 2, as torch.save: tensors as ``_rebuild_tensor_v2`` calls over storage records."""

    def __init__(self, file: Any) -> None:
        super().__init__(file, protocol=2)
        self.storage_refs: dict[tuple[int, Any], _StorageRef] = {}
        self.storage_dtypes: dict[int, _dtype.dtype] = {}  # id(storage) -> the dtype written

    def _save_torch_global(self, obj: _Global) -> None:
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
        self.memoize(obj)

    def _save_dtype(self, obj: _dtype.dtype) -> None:
        if obj.name not in _TORCH_DTYPES:
            raise pickle.PicklingError(f"{obj} has no PyTorch equivalent")
        self.write(pickle.GLOBAL + f"torch\n{obj.name}\n".encode())
        self.memoize(obj)

    dispatch = dict(_PurePickler.dispatch)
    dispatch[_Global] = _save_torch_global
    dispatch[_dtype.dtype] = _save_dtype

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, _StorageRef):
            stype = _GLOBAL_OF.setdefault(obj.dtype, _Global("torch", _STORAGE_NAMES[obj.dtype]))
            return ("storage", stype, obj.key, "cpu", int(obj.data.size))
        return None

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, Tensor):
            v = obj._v
            if v.dtype not in _STORAGE_NAMES:
                raise pickle.PicklingError(f"a {obj.dtype} tensor has no PyTorch storage type")
            hooks = collections.OrderedDict()  # type: ignore[var-annotated]
            if isinstance(obj, Parameter):  # the parameter around a plain tensor, as PyTorch
                plain = Tensor._make(obj._storage, v.offset, v.shape, v.strides, v.dtype)
                return (_REBUILD_PARAMETER, (plain, bool(obj.requires_grad), hooks))
            return (_REBUILD_TENSOR, (self._storage_ref(obj), v.offset, tuple(v.shape),
                                      tuple(v.strides), bool(obj.requires_grad), hooks))
        if isinstance(obj, device):
            if obj.type not in ("cpu", "cuda", "mps", "meta", "xpu"):
                raise pickle.PicklingError(
                    f"device '{obj}' cannot be stored in a PyTorch file: PyTorch has no "
                    f"'{obj.type}' devices (store its string, or save tensors alone)")
            return (_TORCH_DEVICE, (str(obj),))
        if isinstance(obj, Size):
            return (_TORCH_SIZE, (tuple(obj),))
        if isinstance(obj, _layout.layout):  # as torch pickles a layout
            return (_TORCH_LAYOUT, (f"torch.{obj.name}",))
        return NotImplemented

    def _storage_ref(self, t: Tensor) -> _StorageRef:
        k = (id(t._storage), t._v.dtype)
        ref = self.storage_refs.get(k)
        if ref is None:
            dt = t._v.dtype
            # a storage record has one dtype: torch.save refuses views of one storage as two
            # dtypes (loading them could not share it) rather than silently writing two copies;
            # like torch, an empty storage (no data pointer) is not checked
            if t._storage.nbytes and self.storage_dtypes.setdefault(id(t._storage), dt) is not dt:
                raise RuntimeError("Cannot save multiple tensors or storages that view the same "
                                   "data as different types")
            whole = Tensor._make(t._storage, 0, (t._storage.nbytes // dt.itemsize,), (1,), dt)
            data = np.ascontiguousarray(whole.detach().cpu().numpy())
            ref = self.storage_refs[k] = _StorageRef(str(len(self.storage_refs)), dt, data)
        return ref


def _aligned_info(name: str, offset: int) -> zipfile.ZipInfo:
    """A stored record whose data starts at a multiple of ``_ALIGNMENT`` bytes (padding in the
    local header's extra field, as torch does)."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    header = 30 + len(name.encode("utf-8"))
    pad = (-(offset + header + 4)) % _ALIGNMENT
    info.extra = b"FB" + pad.to_bytes(2, "little") + b"Z" * pad
    return info


def dumps(obj: Any) -> bytes:
    """``obj`` as the bytes ``torch.save`` would write."""
    buf = io.BytesIO()
    pickler = _Pickler(buf)
    pickler.dump(obj)
    records: list[tuple[str, bytes]] = [
        ("data.pkl", buf.getvalue()), (".format_version", b"1"),
        (".storage_alignment", str(_ALIGNMENT).encode()), ("byteorder", b"little")]
    for ref in pickler.storage_refs.values():
        little = ref.data.astype(ref.data.dtype.newbyteorder("<"), copy=False)
        records.append((f"data/{ref.key}", little.tobytes()))
    records.append(("version", b"3\n"))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, data in records:
            zf.writestr(_aligned_info(f"{_FOLDER}/{name}", out.tell()), data)
    return out.getvalue()
