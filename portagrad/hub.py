"""``torch.hub``: pretrained weights by URL, and models from a directory's ``hubconf.py``.

:func:`load_state_dict_from_url` downloads a checkpoint into ``<hub dir>/checkpoints`` once
(checking its SHA-256 against the hash prefix in the file name with ``check_hash=True``, as
PyTorch's model zoos name them: ``resnet18-f37072fd.pth``) and loads it with
:func:`portagrad.load`, which reads PyTorch's zip checkpoints. The hub directory follows
PyTorch's rules (:func:`get_dir`). :func:`load`, :func:`list` and :func:`help` work with
``source="local"`` (a directory holding ``hubconf.py``); fetching a GitHub repository is not
implemented and says so (clone it and pass ``source="local"``).
"""
from __future__ import annotations

import builtins
import contextlib
import errno
import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import types
import uuid
import warnings
import zipfile
from collections.abc import Callable, Iterator
from typing import Any
from urllib.error import URLError
from urllib.parse import urlparse
from urllib.request import Request, urlopen

from tqdm import tqdm

from .serialization import load as _load_checkpoint

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load",
           "load_state_dict_from_url", "set_dir"]

ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
MODULE_HUBCONF = "hubconf.py"
VAR_DEPENDENCY = "dependencies"
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
READ_DATA_CHUNK = 128 * 1024

_hub_dir: str | None = None


def _get_torch_home() -> str:
    return os.path.expanduser(os.getenv(ENV_TORCH_HOME, os.path.join(
        os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR), "torch")))


def get_dir() -> str:
    """The hub cache directory: the one :func:`set_dir` chose, else ``$TORCH_HOME/hub``, where
    ``TORCH_HOME`` defaults to ``$XDG_CACHE_HOME/torch`` and that to ``~/.cache/torch``."""
    if os.getenv("TORCH_HUB"):
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_get_torch_home(), "hub")


def set_dir(d: str | os.PathLike[str]) -> None:
    """Use ``d`` (``~`` expanded) as the hub cache directory from now on."""
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None,
                         progress: bool = True) -> None:
    """Download ``url`` to the path ``dst``, through a temporary file beside it so that an
    interrupted download leaves nothing at ``dst``. With ``hash_prefix``, the file's SHA-256 must
    start with it (``RuntimeError`` otherwise). Network failures raise ``RuntimeError`` naming
    the URL."""
    dst = os.path.expanduser(dst)
    for _ in range(tempfile.TMP_MAX):
        tmp_dst = f"{dst}.{uuid.uuid4().hex}.partial"
        try:
            f = open(tmp_dst, "x+b")  # closed in finally, moved on success
        except FileExistsError:
            continue
        break
    else:
        raise FileExistsError(errno.EEXIST, "No usable temporary file name found")
    try:
        try:
            with urlopen(Request(url, headers={"User-Agent": "torch.hub"})) as u:
                length = u.info().get_all("Content-Length")
                size = int(length[0]) if length else None
                sha256 = hashlib.sha256() if hash_prefix is not None else None
                with tqdm(total=size, disable=not progress, unit="B", unit_scale=True,
                          unit_divisor=1024) as bar:
                    while chunk := u.read(READ_DATA_CHUNK):
                        f.write(chunk)
                        if sha256 is not None:
                            sha256.update(chunk)
                        bar.update(len(chunk))
        except (URLError, OSError) as e:
            if isinstance(e, FileExistsError):
                raise
            raise RuntimeError(f"hub: could not download {url}: {e} (is the network "
                               "reachable? a file already downloaded can be loaded from its "
                               "path)") from e
        f.close()
        if sha256 is not None and hash_prefix is not None:
            digest = sha256.hexdigest()
            if digest[:len(hash_prefix)] != hash_prefix:
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got '
                                   f'"{digest}")')
        shutil.move(f.name, dst)
    finally:
        f.close()
        if os.path.exists(f.name):
            os.remove(f.name)


def _is_legacy_zip_format(filename: str) -> bool:
    # a zip holding one file: how checkpoints were shipped before PyTorch's own zip format
    if zipfile.is_zipfile(filename):
        with zipfile.ZipFile(filename) as zf:
            members = zf.infolist()
        return len(members) == 1 and not members[0].is_dir()
    return False


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location: Any = None,
                             progress: bool = True, check_hash: bool = False,
                             file_name: str | None = None,
                             weights_only: bool = False) -> dict[str, Any]:
    """Load the checkpoint at ``url``, downloading it into ``model_dir`` (default
    ``<get_dir()>/checkpoints``) unless a file of that name (``file_name``, else the URL's last
    path part) is there already. ``check_hash`` checks the download's SHA-256 against the hex
    digits after the last ``-`` of the file name. ``map_location`` and ``weights_only`` are
    :func:`portagrad.load`'s (``weights_only=False``, PyTorch's default here, unpickles anything:
    only for trusted files)."""
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    if not filename:
        raise ValueError(f"hub: no file name in {url!r}; pass file_name=")
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        sys.stderr.write(f'Downloading: "{url}" to {cached}\n')
        hash_prefix = None
        if check_hash:
            m = HASH_REGEX.search(filename)
            hash_prefix = m.group(1) if m else None
        download_url_to_file(url, cached, hash_prefix, progress=progress)
    if _is_legacy_zip_format(cached):
        with zipfile.ZipFile(cached) as zf:
            member = zf.infolist()[0]
            target = os.path.realpath(os.path.join(model_dir, member.filename))
            if not target.startswith(os.path.realpath(model_dir) + os.sep):
                raise ValueError(f"hub: {cached} would extract outside {model_dir}")
            zf.extract(member, model_dir)
        cached = target
    result: dict[str, Any] = _load_checkpoint(cached, map_location=map_location,
                                                weights_only=weights_only)
    return result


# ------------------------------------------------------------------------------ hubconf.py
def _local_dir(repo_or_dir: str, source: str) -> str:
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        raise NotImplementedError(
            f"hub: fetching the GitHub repository {repo_or_dir!r} is not implemented in "
            "portagrad; clone it and pass its directory with source='local'")
    if not os.path.isfile(os.path.join(repo_or_dir, MODULE_HUBCONF)):
        raise FileNotFoundError(f"hub: no {MODULE_HUBCONF} in {repo_or_dir!r}")
    return repo_or_dir


@contextlib.contextmanager
def _on_sys_path(path: str) -> Iterator[None]:
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _import_hubconf(repo_dir: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("hubconf",
                                                  os.path.join(repo_dir, MODULE_HUBCONF))
    assert spec is not None and spec.loader is not None  # a .py path always has both
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _entry(module: types.ModuleType, model: Any) -> Callable[..., Any]:
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    deps = getattr(module, VAR_DEPENDENCY, None)
    if deps is not None:
        missing = [d for d in deps if importlib.util.find_spec(d) is None]
        if missing:
            raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    func = getattr(module, model, None)
    if func is None or not callable(func):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return func  # type: ignore[no-any-return]


def list(github: str, force_reload: bool = False, skip_validation: bool = False,
         trust_repo: Any = None, verbose: bool = True, *,
         source: str = "github") -> builtins.list[str]:
    """The entry points (public callables) of the ``hubconf.py`` in directory ``github`` (with
    ``source="local"``)."""
    repo = _local_dir(github, source)
    with _on_sys_path(repo):
        module = _import_hubconf(repo)
    return [n for n in dir(module) if callable(getattr(module, n)) and not n.startswith("_")]


def help(github: str, model: str, force_reload: bool = False, skip_validation: bool = False,
         trust_repo: Any = None, *, source: str = "github") -> str | None:
    """The docstring of entry point ``model`` of directory ``github``'s ``hubconf.py``."""
    repo = _local_dir(github, source)
    with _on_sys_path(repo):
        return _entry(_import_hubconf(repo), model).__doc__


def load(repo_or_dir: str, model: str, *args: Any, source: str = "github",
         trust_repo: Any = None, force_reload: bool = False, verbose: bool = True,
         skip_validation: bool = False, **kwargs: Any) -> Any:
    """``model(*args, **kwargs)`` from the ``hubconf.py`` of directory ``repo_or_dir``
    (``source="local"``); its ``dependencies`` list must be importable."""
    repo = _local_dir(repo_or_dir, source)
    with _on_sys_path(repo):
        return _entry(_import_hubconf(repo), model)(*args, **kwargs)
