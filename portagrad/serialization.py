"""``pg.save`` / ``pg.load``: tensors and nested containers in the safetensors format, never pickle.

File layout
-----------
A file is a plain safetensors file (8-byte little-endian header length, a JSON header, the raw
data). Every distinct tensor is one safetensors entry, named after its path in the saved object
(``"fc.weight"``, ``"state.0.momentum_buffer"``), so other safetensors tools can read the weights.
The nested structure around the tensors -- dicts (any key type), lists, tuples, ``None``, bools,
ints, floats, strings, dtypes, devices, ``Size`` -- is JSON stored in the header's ``__metadata__``
under ``"portagrad.structure"``; a tensor appears there as ``{"$t": name, "dev": "cpu"}`` (plus
``"rg": true`` when it requires grad, ``"param": true`` for an ``nn.Parameter``). Tensors that are
the same view of the same storage (tied weights) are stored once and loaded as one tensor.

Safety
------
:func:`load` reads the 8-byte header length and the JSON header first and checks every field
(header length against the file size, JSON, dtypes, shapes, offsets, each tensor's byte size
against its shape and dtype, names and devices the structure refers to) before reading any tensor
data; each tensor's bytes are then read on their own (seek and read), so a huge bogus file is
refused without being read whole. Any inconsistency raises :class:`LoadError` naming the tensor
and the problem; a tensor saved on a device whose backend is not available here raises
:class:`DeviceUnavailableError` (a :class:`LoadError`) suggesting ``map_location="cpu"``. Nothing
in a file can make :func:`load` run code.

The one exception is explicit: an object that is not made of tensors and the containers above (for
example a whole ``nn.Module``, PyTorch's second way of saving) is written with :mod:`pickle`
inside the same container (``"portagrad.format": "pickle"``, tensors still in safetensors). With
the default ``weights_only=True`` such a file is read by a restricted unpickler (PyTorch's
weights_only design): it builds only allow-listed classes -- containers, tensors, parameters,
dtypes, devices, and the classes the caller allows with :func:`add_safe_globals` or the
:class:`safe_globals` context manager -- and refuses any other global with a
:class:`WeightsOnlyError` naming it, before calling anything. ``weights_only=False`` unpickles
without restriction, which can execute arbitrary code: only for files you trust. Prefer saving
``model.state_dict()``.
"""
from __future__ import annotations

import base64
import contextlib
import io
import json
import math
import os
import pickle
import pickletools
import secrets
import socket
import struct
import sys
from collections import OrderedDict
from collections.abc import Callable
from typing import IO, Any, Union

import numpy as np

from . import _creation, _dtype, _safe_globals, _torch_format
from ._safe_globals import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals
from ._device import device, resolve
from ._storage import Size
from ._tensor import Tensor
from .nn.parameter import Parameter
from .plugins.manager import BackendUnavailableError

__all__ = ["save", "load", "LoadError", "WeightsOnlyError", "DeviceUnavailableError",
           "add_safe_globals", "clear_safe_globals", "get_safe_globals", "safe_globals",
           "get_unsafe_globals_in_checkpoint"]

FileLike = Union[str, "os.PathLike[str]", IO[bytes]]

_FORMAT_VERSION = "1"
_MAX_HEADER = 100 * 1024 * 1024  # the safetensors library's own limit
_MAX_DEPTH = 256
_ST_DTYPES = {"F16": "float16", "F32": "float32", "F64": "float64", "I32": "int32",
              "I64": "int64", "BOOL": "bool",
              "U8": "uint8", "I8": "int8", "I16": "int16", "BF16": "bfloat16",  # ml_dtypes' name
              "C64": "complex64"}
_ST_OTHER = {"F8_E4M3", "F8_E5M2", "U16", "U32", "U64"}
# safetensors has no complex128: such a tensor is stored as float64 pairs (its view_as_real), and
# the metadata key below lists those arrays (a JSON list of names) so that load views them back
_C128_KEY = "portagrad.complex128"


class LoadError(RuntimeError):
    """A file given to :func:`portagrad.load` is truncated, corrupted or not a portagrad file."""


class WeightsOnlyError(LoadError, pickle.UnpicklingError):
    """:func:`portagrad.load` with ``weights_only=True`` met a file that needs pickle."""


# ------------------------------------------------------------------------------------- saving
class _NotSafe(Exception):
    """The object holds something the safe format cannot represent."""


class _Encoder:
    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.by_view: dict[tuple, str] = {}
        self.complex128: list[str] = []  # arrays stored as float64 pairs

    def _name(self, path: str) -> str:
        base = path or "tensor"
        name, n = base, 1
        while name in self.arrays or name == "__metadata__":
            name = f"{base}#{n}"
            n += 1
        return name

    def tensor(self, t: Any, path: str) -> dict[str, Any]:
        v = t._v
        key = (id(t._storage), v.offset, v.shape, v.strides, v.dtype.name)
        name = self.by_view.get(key)
        if name is None:
            name = self._name(path)
            arr = t.detach().numpy(force=True)
            if arr.dtype == np.complex128:
                arr = np.stack([arr.real, arr.imag], axis=-1)
                self.complex128.append(name)
            self.arrays[name] = np.require(arr, requirements="C")  # keeps 0-d arrays 0-d
            self.by_view[key] = name
        node: dict[str, Any] = {"$t": name, "dev": str(t.device)}
        if t.requires_grad:
            node["rg"] = True
        if isinstance(t, Parameter):
            node["param"] = True
        return node

    def encode(self, obj: Any, path: str = "", depth: int = 0) -> Any:
        if depth > _MAX_DEPTH:
            raise _NotSafe(f"nesting deeper than {_MAX_DEPTH}")
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            if math.isfinite(obj):
                return float(obj)
            return {"$f": repr(obj)}
        if isinstance(obj, Tensor):
            return self.tensor(obj, path)
        if isinstance(obj, np.generic) and obj.dtype.kind in "biuf":
            return self.encode(obj.item(), path, depth)
        if isinstance(obj, _dtype.dtype):
            if obj in _dtype.DECLARED_ONLY:
                # the tree's "$dtype" names only dtypes of tensors (as_dtype refuses the others,
                # uint16, float8_e4m3fn...): such a value goes to the pickle form, whose
                # restricted unpickler allows every portagrad dtype
                raise _NotSafe(f"dtype {obj.name}")
            return {"$dtype": obj.name}
        if isinstance(obj, device):
            return {"$device": str(obj)}
        def sub(k: Any) -> str:
            return f"{path}.{k}" if path else str(k)

        if isinstance(obj, Size):
            return {"$size": [int(s) for s in obj]}
        if type(obj) in (dict, OrderedDict) or (isinstance(obj, dict) and type(obj).__module__
                                                  == "collections"):
            ordered = type(obj) is not dict
            if not ordered and all(isinstance(k, str) and not k.startswith("$") for k in obj):
                return {k: self.encode(v, sub(k), depth + 1) for k, v in obj.items()}
            items = [[self.encode(k, "", depth + 1) if not isinstance(k, Tensor) else _bad(k),
                      self.encode(v, sub(k), depth + 1)] for k, v in obj.items()]
            return {"$od" if ordered else "$d": items}
        if type(obj) is list:
            return [self.encode(v, sub(i), depth + 1) for i, v in enumerate(obj)]
        if type(obj) is tuple:
            return {"$tu": [self.encode(v, sub(i), depth + 1) for i, v in enumerate(obj)]}
        raise _NotSafe(type(obj).__name__)


def _bad(k: Any) -> Any:
    raise _NotSafe("tensor used as a dict key")


def _write(f: FileLike, data: bytes) -> None:
    if isinstance(f, (str, os.PathLike)):
        _atomic_write(os.fspath(f), data)
    else:
        f.write(data)


_CHUNK = 16 * 1024 * 1024
_TMP_TAG = ".pgsave-"


def _write_all(fh: IO[bytes], data: bytes) -> None:
    """Write ``data`` in chunks (one big write of a multi-GB buffer can be refused by some OSes)."""
    view = memoryview(data)
    for i in range(0, len(view), _CHUNK):
        fh.write(view[i:i + _CHUNK])


def _tmp_prefix(path: str) -> str:
    return "." + os.path.basename(path) + _TMP_TAG


def _atomic_write(path: str, data: bytes) -> None:
    """Write ``path`` so that a reader (or a crash) sees the old file or the new one, never a
    mixture: the bytes go to a temporary file in the same directory, are flushed to disk, and the
    temporary is renamed over ``path`` (a rename within a file system is atomic)."""
    path = os.path.realpath(path)  # write through a symlink, as open(path, "wb") would
    folder = os.path.dirname(path)
    host = socket.gethostname().replace("-", "_")
    tmp = os.path.join(folder, f"{_tmp_prefix(path)}{host}-{os.getpid()}-{secrets.token_hex(4)}.tmp")
    # O_EXCL: never follow or clobber something already there; 0o666 lets the umask apply as it
    # would to a plain open(path, "wb")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            try:  # an existing file keeps its permissions
                os.chmod(fh.fileno(), os.stat(path).st_mode & 0o7777)
            except (FileNotFoundError, NotImplementedError, TypeError):
                pass
            _write_all(fh, data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(folder)
    _remove_stale_temporaries(path, host)


def _fsync_dir(folder: str) -> None:
    """Make the rename itself durable (POSIX; directories cannot be opened this way on Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove_stale_temporaries(path: str, host: str) -> None:
    """Delete temporaries of ``path`` left by saves on this host whose process died mid-write
    (a live process's temporary, or another host's, is left alone)."""
    prefix = _tmp_prefix(path)
    folder = os.path.dirname(path)
    try:
        names = [n for n in os.listdir(folder) if n.startswith(prefix) and n.endswith(".tmp")]
    except OSError:
        return
    for name in names:
        parts = name[len(prefix):-len(".tmp")].rsplit("-", 2)
        if len(parts) != 3 or parts[0] != host or not parts[1].isdigit():
            continue
        pid = int(parts[1])
        if pid == os.getpid() or _pid_alive(pid):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(folder, name))


def _pid_alive(pid: int) -> bool:
    if os.name == "nt":  # os.kill there terminates the process instead of probing it
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError, OverflowError):
        return True  # exists but is not ours, or cannot be checked: keep its file
    return True


def save(obj: Any, f: FileLike, pickle_module: Any = None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True, *, format: str | None = None) -> None:
    """Save ``obj`` to ``f`` (a path or a binary file object).

    ``format="pytorch"`` writes PyTorch's own checkpoint format instead (the zip archive
    ``torch.save`` writes), which ``torch.load(f, weights_only=True)`` reads: tensors (saved as
    CPU tensors), parameters, dtypes, ``Size``, containers and numbers. Under
    ``python -m portagrad.compat`` a path ending in ``.pt``, ``.pth`` or ``.bin`` gets that format
    by default, so a script's ``torch.save(model.state_dict(), "model.pt")`` writes a file PyTorch
    can read; ``format="portagrad"`` chooses the native format (below) explicitly.

    Tensors (on any device, copied to the host), and dicts, lists, tuples, numbers, strings,
    ``None``, dtypes and devices around them are stored in the safe format that :func:`load` reads
    by default: state dicts, optimizer state dicts, checkpoints. Any other object (a whole
    ``nn.Module``) is pickled -- readable only with ``load(f, weights_only=False)``, which can run
    code; save ``state_dict()`` instead where you can.

    Storage sharing: in the native format, tensors that are the *same* view of one storage (tied
    weights) are stored once and load as one tensor, but different views of one storage (a slice,
    a transpose, a ``view(dtype)``) are stored as separate tensors and no longer share memory
    once loaded. ``format="pytorch"`` keeps the sharing, as ``torch.save``, and like it raises
    ``RuntimeError`` for views of one storage as two different dtypes.

    A path is written atomically: to a temporary file in the same directory, flushed to disk, then
    renamed over the target, so a crash or kill during the save leaves the previous file intact
    (the leftover temporary is removed by the next successful save of that path). A file object
    is written directly.
    """
    if _save_format(format, f) == "pytorch":
        try:
            data = _torch_format.dumps(obj)
        except pickle.PicklingError as exc:
            raise TypeError(f"cannot save in PyTorch's format: {exc}") from None
        _write(f, data)
        return
    import safetensors.numpy as stnp

    enc = _Encoder()
    try:
        structure = enc.encode(obj)
        meta = {"portagrad.version": _FORMAT_VERSION, "portagrad.format": "tree",
                "portagrad.structure": json.dumps(structure, allow_nan=False,
                                                  separators=(",", ":"))}
    except _NotSafe:
        enc = _Encoder()
        meta = {"portagrad.version": _FORMAT_VERSION, "portagrad.format": "pickle",
                "portagrad.pickle": base64.b64encode(
                    _pickle_dumps(obj, enc, pickle_module or pickle, pickle_protocol)).decode()}
    if enc.complex128:
        meta[_C128_KEY] = json.dumps(enc.complex128)
    _write(f, stnp.save(enc.arrays, metadata=meta))


def _pickle_dumps(obj: Any, enc: _Encoder, pickle_module: Any, protocol: int) -> bytes:
    buf = io.BytesIO()

    class _Pickler(pickle_module.Pickler):
        def persistent_id(self, o: Any) -> Any:
            if isinstance(o, Tensor):
                node = enc.tensor(o, f"t{len(enc.arrays)}")
                return ("portagrad.tensor", node["$t"], node["dev"], bool(o.requires_grad),
                        type(o))
            return None

    _Pickler(buf, protocol=max(protocol, 2)).dump(obj)
    return buf.getvalue()


# ------------------------------------------------------------------------------------ loading
class _Source:
    """A file being loaded: its size and random access to its bytes, so that the header is read
    and checked first and each tensor's bytes are read only when that tensor is built."""

    def __init__(self, f: FileLike) -> None:
        self.own = isinstance(f, (str, os.PathLike))
        fh: Any = open(f, "rb") if isinstance(f, (str, os.PathLike)) else f  # closed by close()
        self.fh = fh
        self.base = 0
        try:
            seekable = bool(fh.seekable()) if hasattr(fh, "seekable") else False
            if seekable:
                self.base = fh.tell()
                self.size = fh.seek(0, io.SEEK_END) - self.base
                fh.seek(self.base)
        except (OSError, ValueError, AttributeError):
            seekable = False
        if not seekable:  # a pipe or socket: the only way to know its size is to read it
            data = fh.read()
            _check_bytes(data)
            self.fh, self.base, self.size = io.BytesIO(bytes(data)), 0, len(data)

    def read(self, start: int, n: int) -> bytes:
        self.fh.seek(self.base + start)
        data = self.fh.read(n)
        _check_bytes(data)
        if len(data) != n:
            raise LoadError(f"truncated file: expected {n} bytes at byte {start}, read {len(data)} "
                            f"(was the file changed while it was loaded?)")
        return bytes(data)

    def read_into(self, start: int, buf: bytearray) -> None:
        self.fh.seek(self.base + start)
        view, got = memoryview(buf), 0
        while got < len(buf):
            k = self.fh.readinto(view[got:]) if hasattr(self.fh, "readinto") else None
            if k is None:  # a file object without readinto
                chunk = self.fh.read(len(buf) - got)
                _check_bytes(chunk)
                k = len(chunk)
                view[got:got + k] = chunk
            if not k:
                raise LoadError(f"truncated file: expected {len(buf)} bytes at byte {start}, "
                                f"read {got} (was the file changed while it was loaded?)")
            got += k

    def close(self) -> None:
        if self.own:
            self.fh.close()
        else:  # leave a caller's file object after what was loaded, as a full read would
            with contextlib.suppress(OSError, ValueError, AttributeError):
                self.fh.seek(self.base + self.size)


def _check_bytes(data: Any) -> None:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"load: expected a binary file object, but read() returned "
                        f"{type(data).__name__}")


def _parse_header(src: _Source) -> tuple[dict[str, Any], dict[str, str], int]:
    """Read and check the safetensors framing before any tensor byte is read: the header length
    against the file size, then every entry (dtype, shape, offsets and byte size). Returns
    (tensor entries, metadata, start of the data)."""
    n = src.size
    if n < 8:
        raise LoadError(f"not a portagrad/safetensors file: it is only {n} bytes long (truncated?)")
    (hlen,) = struct.unpack("<Q", src.read(0, 8))
    if hlen > _MAX_HEADER:
        raise LoadError(f"corrupted file: the header length field says {hlen} bytes, more than "
                        f"the {_MAX_HEADER}-byte limit")
    if 8 + hlen > n:
        raise LoadError(f"truncated or corrupted file: the header length field says {hlen} bytes "
                        f"but the file has only {n - 8} bytes after it")
    raw = src.read(8, hlen)
    try:
        header = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise LoadError(f"corrupted file: the safetensors header is not valid JSON ({exc})") \
            from None
    if not isinstance(header, dict):
        raise LoadError(f"corrupted file: the safetensors header is a JSON "
                        f"{type(header).__name__}, not an object")
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                             for k, v in meta.items()):
        raise LoadError("corrupted file: '__metadata__' must map strings to strings")
    start = 8 + hlen
    data_len = n - start
    spans = []
    for name, entry in header.items():
        if not isinstance(entry, dict):
            raise LoadError(f"corrupted file: the header entry of tensor {name!r} is not an object")
        dt = entry.get("dtype")
        shape = entry.get("shape")
        offs = entry.get("data_offsets")
        if dt not in _ST_DTYPES:
            if dt in _ST_OTHER:
                raise LoadError(f"tensor {name!r} has dtype {dt}, which portagrad does not support")
            raise LoadError(f"corrupted file: tensor {name!r} has an unknown dtype {dt!r}")
        if not (isinstance(shape, list) and all(type(s) is int for s in shape)):
            raise LoadError(f"corrupted file: tensor {name!r} has an invalid shape {shape!r}")
        if any(s < 0 for s in shape):
            raise LoadError(f"corrupted file: tensor {name!r} has an invalid shape {shape!r} "
                            f"(negative size)")
        if not (isinstance(offs, list) and len(offs) == 2 and all(type(o) is int for o in offs)):
            raise LoadError(f"corrupted file: tensor {name!r} has invalid data_offsets {offs!r}")
        b, e = offs
        if not 0 <= b <= e <= data_len:
            raise LoadError(f"truncated or corrupted file: tensor {name!r} spans bytes [{b}, {e}) "
                            f"but the data section has {data_len} bytes")
        itemsize = np.dtype(_ST_DTYPES[dt]).itemsize
        if e - b != math.prod(shape) * itemsize:
            raise LoadError(f"corrupted file: tensor {name!r} of shape {shape} and dtype {dt} "
                            f"needs {math.prod(shape) * itemsize} bytes but its data_offsets span "
                            f"{e - b}")
        spans.append((b, e, name))
    spans.sort()
    pos = 0
    for b, e, name in spans:
        if b != pos:
            raise LoadError(f"corrupted file: the data of tensor {name!r} starts at byte {b}, "
                            f"expected {pos} (overlapping or gapped tensors)")
        pos = e
    if pos != data_len:
        raise LoadError(f"corrupted file: the tensors cover {pos} bytes of data but the file has "
                        f"{data_len}")
    return header, meta, start


class _Arrays:
    """The tensors of a checked header, each read from the file when first asked for."""

    def __init__(self, src: _Source, header: dict[str, Any], start: int,
                 meta: dict[str, str] | None = None) -> None:
        self.src = src
        self.header = header
        self.start = start
        self.complex128 = _complex128_names(meta or {}, header)

    def __contains__(self, name: object) -> bool:
        return name in self.header

    def __iter__(self) -> Any:
        return iter(self.header)

    def read(self, name: str) -> np.ndarray:
        entry = self.header[name]
        b, e = entry["data_offsets"]
        buf = bytearray(e - b)
        if buf:
            self.src.read_into(self.start + b, buf)
        dt = np.dtype(_ST_DTYPES[entry["dtype"]])
        arr = np.frombuffer(buf, dtype=dt.newbyteorder("<")).reshape(entry["shape"])
        if dt.kind == "b" and arr.size and buf.translate(None, b"\x00\x01"):
            raise LoadError(f"corrupted file: tensor {name!r} of dtype BOOL holds bytes other "
                            f"than 0 and 1")
        arr = arr.astype(dt, copy=False)
        if name in self.complex128:
            arr = np.ascontiguousarray(arr).view(np.complex128)[..., 0]
        return arr


def _complex128_names(meta: dict[str, str], header: dict[str, Any]) -> set[str]:
    """The arrays the metadata lists as complex128 stored as float64 pairs (checked)."""
    text = meta.get(_C128_KEY)
    if text is None:
        return set()
    try:
        names = json.loads(text)
    except ValueError:
        names = None
    if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        raise LoadError(f"corrupted file: {_C128_KEY} metadata is not a list of names")
    for n in names:
        e = header.get(n)
        if not (isinstance(e, dict) and e.get("dtype") == "F64" and isinstance(e.get("shape"), list)
                and e["shape"] and e["shape"][-1] == 2):
            raise LoadError(f"corrupted file: {_C128_KEY} names {n!r}, which is not a float64 "
                            "tensor with a last dimension of 2")
    return set(names)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


# the first of the pickles a legacy (non-zip) torch.save file is made of; its tensors' bytes follow
# the pickles, so reading it as one pickle would return this number as if it were the object
_TORCH_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C


def _refuse_legacy_torch(src: _Source) -> None:
    """Raise :class:`LoadError` for a file in PyTorch's legacy format (read by the restricted
    unpickler, which builds no object but numbers here, so nothing in the file runs)."""
    try:
        first = _safe_globals.WeightsUnpickler(io.BytesIO(src.read(0, min(src.size, 64)))).load()
    except Exception:  # anything else (a longer first pickle, a refused global): not that format
        return
    if type(first) is int and first == _TORCH_LEGACY_MAGIC:
        raise LoadError(
            "this is a PyTorch checkpoint in the legacy format (torch.save with "
            "_use_new_zipfile_serialization=False, or PyTorch < 1.6), which portagrad cannot read. "
            "In PyTorch, convert it with safetensors.torch.save_file(torch.load(path), "
            "'file.safetensors')")


_FORMATS = ("portagrad", "pytorch")
_PYTORCH_SUFFIXES = (".pt", ".pth", ".bin")


def _save_format(format: str | None, f: FileLike) -> str:
    if format is not None:
        if format not in _FORMATS:
            raise ValueError(f"save(): format must be one of {', '.join(_FORMATS)}, got "
                             f"{format!r}")
        return format
    compat = sys.modules.get("portagrad.compat")  # not imported: not installed either
    if compat is not None and compat.is_installed() and isinstance(f, (str, os.PathLike)) and \
            os.fspath(f).lower().endswith(_PYTORCH_SUFFIXES):
        return "pytorch"
    return "portagrad"


def _classify_foreign(data: bytes) -> str | None:
    if data[:1] == b"\x80" and len(data) > 1 and 2 <= data[1] <= 5:
        return "this is a pickle file"
    return None


def _to_device(dev: Any) -> Any:
    return dev if isinstance(dev, device) else device(dev)


class DeviceUnavailableError(LoadError):
    """A tensor in the file was saved on a device that does not exist here (its backend is not
    installed, or there are fewer devices), and no ``map_location`` says where to put it."""


class _Placer:
    """Creates tensors where ``map_location`` says, checking the device before reading bytes."""

    def __init__(self, map_location: Any) -> None:
        self.map_location = map_location

    def __call__(self, arrays: _Arrays, name: str, saved: str) -> Any:
        ml = self.map_location
        try:
            saved_dev = _to_device(saved)
        except (RuntimeError, ValueError, TypeError) as exc:
            raise LoadError(f"corrupted file: tensor {name!r} has an invalid device {saved!r} "
                            f"({exc})") from None
        if ml is None:
            target: Any = saved
        elif isinstance(ml, dict):
            target = ml.get(saved, saved)
        elif callable(ml) and not isinstance(ml, str):
            res = ml(_creation.from_host(arrays.read(name), device="cpu"), saved)
            if isinstance(res, Tensor):
                return res
            target = saved if res is None else res
        else:
            target = ml
        if isinstance(target, str) and target not in ("cpu",) and target.split(":")[0] == "cpu":
            target = "cpu"
        if (ml is None or target == saved) and saved_dev.type != "cpu":
            try:
                resolve(saved_dev)
            except BackendUnavailableError as exc:
                raise DeviceUnavailableError(
                    f"tensor {name!r} was saved on device '{saved}', but the backend for "
                    f"'{saved_dev.type}' devices is not available here ({exc}). Use "
                    f"pg.load(..., map_location='cpu') to load it on another device.") from None
            except RuntimeError as exc:
                raise DeviceUnavailableError(
                    f"tensor {name!r} was saved on device '{saved}', which is not available here "
                    f"({exc}). Use pg.load(..., map_location='cpu') to load it on another "
                    f"device.") from None
        dev = _to_device(target)
        resolve(dev)  # a bad map_location fails before the bytes are read
        return _creation.from_host(arrays.read(name), device=dev)


def load(f: FileLike, map_location: Any = None, pickle_module: Any = None, *,
         weights_only: bool = True, mmap: Any = None, **pickle_load_args: Any) -> Any:
    """Load an object saved with :func:`save` from ``f`` (a path or a binary file object).

    ``map_location`` moves tensors as PyTorch: ``None`` (where they were saved), a device or device
    string (``"cpu"``, ``"opencl:0"``), a dict mapping saved device strings to new ones, or a
    callable ``fn(cpu_tensor, saved_location) -> tensor or None``. A plain safetensors file (from
    other tools) loads as a dict of tensors. Truncated, corrupted or foreign files raise
    :class:`LoadError`; the header is checked against the file's size before any tensor is read,
    and each tensor is then read on its own, so a bogus file is refused without being read whole.
    A tensor saved on a device whose backend is missing here raises
    :class:`DeviceUnavailableError` (pass ``map_location="cpu"``). Files holding pickled objects
    (``save`` of a whole module) are unpickled with ``weights_only=True`` by a restricted
    unpickler that builds only allow-listed globals: allow your classes with
    ``pg.serialization.safe_globals([MyNet, pg.nn.Linear, ...])`` (or ``add_safe_globals``);
    anything else raises :class:`WeightsOnlyError` naming it. ``weights_only=False`` lifts the
    restriction -- only for files you trust: unpickling can run arbitrary code.
    """
    src = _Source(f)
    try:
        return _load(src, map_location, pickle_module, weights_only, pickle_load_args)
    finally:
        src.close()


def _load_torch(src: _Source, map_location: Any, pickle_module: Any, weights_only: bool,
                pickle_load_args: dict[str, Any]) -> Any:
    """A checkpoint in PyTorch's zip format (``_torch_format``)."""
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    src.fh.seek(src.base)
    try:
        return _torch_format.load(src.fh, src.size, _Placer(map_location), weights_only,
                                  pickle_module, pickle_load_args)
    except _torch_format.PlacementError as exc:
        placement = exc.exc  # the device's or map_location's own error, raised as it is below
    except _safe_globals.Refused as exc:
        raise WeightsOnlyError(_weights_only_message(str(exc))) from None
    except _torch_format.TorchFormatError as exc:
        raise LoadError(str(exc)) from None
    except _UNPICKLING_ERRORS as exc:
        raise LoadError(f"corrupted PyTorch file: its data.pkl cannot be unpickled "
                        f"({type(exc).__name__}: {exc})") from None
    raise placement


def _load(src: _Source, map_location: Any, pickle_module: Any, weights_only: bool,
          pickle_load_args: dict[str, Any]) -> Any:
    head = src.read(0, min(src.size, 8))
    if _torch_format.is_torch_zip(head):
        return _load_torch(src, map_location, pickle_module, weights_only, pickle_load_args)
    foreign = _classify_foreign(head)
    if foreign is not None:
        if foreign == "this is a pickle file":
            _refuse_legacy_torch(src)
        if foreign == "this is a pickle file" and not weights_only:
            return (pickle_module or pickle).loads(src.read(0, src.size), **pickle_load_args)
        if foreign == "this is a pickle file" and pickle_module is None:
            # a plain pickle: the restricted unpickler, with no tensor storage to refer to
            try:
                return _safe_globals.WeightsUnpickler(io.BytesIO(src.read(0, src.size))).load()
            except _safe_globals.Refused as exc:
                raise WeightsOnlyError(_weights_only_message(
                    str(exc), " (this is a pickle file, not a portagrad/safetensors file)")
                ) from None
            except _UNPICKLING_ERRORS as exc:
                raise LoadError(f"corrupted or foreign file: it starts like a pickle but cannot "
                                f"be unpickled ({type(exc).__name__}: {exc})") from None
        if foreign == "this is a pickle file":
            raise WeightsOnlyError(
                "Weights only load failed: this is a pickle file, not a portagrad/safetensors "
                "file. Unpickling can execute arbitrary code, so pg.load refuses it by default. "
                "If you trust its source, call pg.load(f, weights_only=False).")
        raise LoadError(f"not a portagrad/safetensors file: {foreign}")
    header, meta, start = _parse_header(src)
    arrays = _Arrays(src, header, start, meta)
    place = _Placer(map_location)
    kind = meta.get("portagrad.format")
    if kind is None:  # a plain safetensors file: a dict of tensors
        return {name: place(arrays, name, "cpu") for name in header}
    if kind == "pickle":
        if weights_only:
            if pickle_module is not None:
                raise RuntimeError("Can not safely load weights when explicit pickle_module is "
                                   "specified")
            return _pickle_loads(meta, arrays, place, pickle, restricted=True)
        return _pickle_loads(meta, arrays, place, pickle_module or pickle)
    if kind != "tree":
        raise LoadError(f"unsupported portagrad format {kind!r} (written by a newer portagrad?)")
    text = meta.get("portagrad.structure")
    if text is None:
        raise LoadError("corrupted file: the metadata has no 'portagrad.structure'")
    try:
        structure = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise LoadError(f"corrupted file: the structure metadata is not valid JSON ({exc})") \
            from None
    return _Decoder(arrays, place).decode(structure, 0)


class _Decoder:
    def __init__(self, arrays: _Arrays, place: Callable) -> None:
        self.arrays = arrays
        self.place = place
        self.made: dict[tuple[str, str, bool, bool], Any] = {}

    def tensor(self, node: dict[str, Any]) -> Any:
        name, dev = node.get("$t"), node.get("dev", "cpu")
        rg, param = node.get("rg", False), node.get("param", False)
        if not isinstance(name, str) or not isinstance(dev, str) or type(rg) is not bool \
                or type(param) is not bool:
            raise LoadError(f"corrupted file: invalid tensor reference {node!r}")
        if name not in self.arrays:
            raise LoadError(f"corrupted file: the structure refers to tensor {name!r}, which is "
                            f"not in the file")
        key = (name, dev, rg, param)
        t = self.made.get(key)
        if t is None:
            t = self.place(self.arrays, name, dev)
            if param:
                t = Parameter(t, requires_grad=rg)
            elif rg:
                if not (t.dtype.is_floating_point or t.dtype.is_complex):
                    raise LoadError(f"corrupted file: tensor {name!r} of dtype {t.dtype} cannot "
                                    f"require grad")
                t.requires_grad_(True)
            self.made[key] = t
        return t

    def decode(self, node: Any, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise LoadError(f"corrupted file: the structure is nested deeper than {_MAX_DEPTH}")
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self.decode(v, depth + 1) for v in node]
        if not isinstance(node, dict):
            raise LoadError(f"corrupted file: unexpected {type(node).__name__} in the structure")
        tag = next((k for k in node if k.startswith("$")), None)
        if tag is None:
            return {k: self.decode(v, depth + 1) for k, v in node.items()}
        val = node[tag]
        try:
            if tag == "$t":
                return self.tensor(node)
            if tag == "$tu" and isinstance(val, list):
                return tuple(self.decode(v, depth + 1) for v in val)
            if tag in ("$d", "$od") and isinstance(val, list):
                out: dict = {} if tag == "$d" else OrderedDict()
                for pair in val:
                    if not (isinstance(pair, list) and len(pair) == 2):
                        raise LoadError("corrupted file: a dict item is not a [key, value] pair")
                    k = self.decode(pair[0], depth + 1)
                    if isinstance(k, (list, dict)):
                        raise LoadError("corrupted file: a dict key is a list or dict")
                    out[k] = self.decode(pair[1], depth + 1)
                return out
            if tag == "$f" and val in ("nan", "inf", "-inf"):
                return float(val)
            if tag == "$size" and isinstance(val, list) and all(type(v) is int and v >= 0
                                                                for v in val):
                return Size(val)
            if tag == "$dtype" and isinstance(val, str):
                return _dtype.as_dtype(val)
            if tag == "$device" and isinstance(val, str):
                return _to_device(val)
        except LoadError:
            raise
        except (TypeError, ValueError, RuntimeError) as exc:
            raise LoadError(f"corrupted file: invalid {tag} entry {val!r} ({exc})") from None
        raise LoadError(f"corrupted file: unknown or malformed structure entry {tag!r}")


def _pickle_payload(meta: dict[str, str]) -> bytes:
    try:
        return base64.b64decode(meta["portagrad.pickle"], validate=True)
    except (KeyError, ValueError) as exc:
        raise LoadError(f"corrupted file: invalid pickle payload ({exc})") from None


def _pickle_loads(meta: dict[str, str], arrays: _Arrays, place: Callable,
                  pickle_module: Any, restricted: bool = False) -> Any:
    """Unpickle the payload: with ``restricted`` (``weights_only=True``) only allow-listed globals
    are built; otherwise without restriction (``weights_only=False``, trusted files only)."""
    payload = _pickle_payload(meta)
    base = _safe_globals.WeightsUnpickler if restricted else pickle_module.Unpickler

    class _Unpickler(base):  # type: ignore[valid-type,misc]
        def persistent_load(self, pid: Any) -> Any:
            if not (isinstance(pid, tuple) and len(pid) == 5):
                raise LoadError(f"corrupted file: unknown tensor reference {pid!r}")
            tag, name, dev, rg, cls = pid
            if tag != "portagrad.tensor" or name not in arrays or not (
                    isinstance(cls, type) and issubclass(cls, Tensor)):
                raise LoadError(f"corrupted file: unknown tensor reference {pid!r}")
            t = place(arrays, name, dev)
            if cls is not type(t):
                t = cls._from_tensor(t)
            if rg:
                t.requires_grad_(True)
            return t

    if not restricted:
        return _Unpickler(io.BytesIO(payload)).load()
    try:
        return _Unpickler(io.BytesIO(payload)).load()
    except _safe_globals.Refused as exc:
        raise WeightsOnlyError(_weights_only_message(str(exc))) from None
    except _UNPICKLING_ERRORS as exc:
        raise LoadError(f"corrupted file: the pickle payload cannot be unpickled "
                        f"({type(exc).__name__}: {exc})") from None


# what a malformed pickle raises (a refused global is handled before these)
_UNPICKLING_ERRORS = (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError,
                      IndexError, KeyError, ImportError, RecursionError)


def _weights_only_message(detail: str, what: str = "") -> str:
    return (f"Weights only load failed{what}. This file can still be loaded, to do so you have "
            "two options, do those steps only if you trust the source of the checkpoint.\n"
            "\t(1) Re-running `pg.load(f, weights_only=False)` will likely succeed, "
            "but it can result in arbitrary code execution. Do it only if you got the file from "
            "a trusted source.\n"
            "\t(2) Alternatively, to load with `weights_only=True` please check the recommended "
            "steps in the following error message.\n"
            f"\tWeightsUnpickler error: {detail}")


def get_unsafe_globals_in_checkpoint(f: FileLike) -> list[str]:
    """The globals a file's pickle needs that are not allowed for ``weights_only`` loads (read
    without unpickling anything): what to review before passing them to
    :func:`add_safe_globals`."""
    src = _Source(f)
    try:
        head = src.read(0, min(src.size, 8))
        if _torch_format.is_torch_zip(head):
            src.fh.seek(src.base)
            try:
                payload = _torch_format.data_pickle(src.fh, src.size)
            except _torch_format.TorchFormatError as exc:
                raise LoadError(str(exc)) from None
        elif _classify_foreign(head) == "this is a pickle file":
            payload = src.read(0, src.size)
        else:
            _, meta, _ = _parse_header(src)
            if meta.get("portagrad.format") != "pickle":
                return []
            payload = _pickle_payload(meta)
    finally:
        src.close()
    found: list[str] = []
    strings: list[str] = []
    for op, arg, _ in pickletools.genops(payload):
        if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8"):
            strings.append(str(arg))
        elif op.name == "GLOBAL":
            module, name = str(arg).split(" ", 1)
            if not _allowed(module, name):
                found.append(f"{module}.{name}")
        elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
            module, name = strings[-2], strings[-1]
            if not _allowed(module, name):
                found.append(f"{module}.{name}")
    return sorted(set(found))


def _allowed(module: str, name: str) -> bool:
    """Whether a ``weights_only`` load builds the global (PyTorch's own tensor globals included)."""
    return _torch_format.is_mapped(module, name) or _safe_globals.is_allowed(module, name)
