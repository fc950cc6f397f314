"""The names PyTorch libraries reach for at import: ``torch.jit``, the curated ``torch._C``,
``torch._dynamo``/``torch.compiler``, ``torch.utils._pytree``, ``torch.futures``; each against
PyTorch where it is installed and against literal expectations otherwise."""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
import types
import warnings
from collections import OrderedDict, defaultdict, deque, namedtuple
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import portagrad as pg
from portagrad import _C, _dynamo, compat, compiler, futures, jit
from portagrad.utils import _pytree as pytree

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def hooked() -> Iterator[types.ModuleType]:
    compat.install()
    try:
        yield importlib.import_module("torch")
    finally:
        compat.uninstall()


# ------------------------------------------------------------------------------------ torch.jit
def test_jit_script_and_trace_return_the_object_and_warn_once(monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    monkeypatch.setattr(jit, "_warned", False)
    lin = pg.nn.Linear(2, 3)
    with pytest.warns(UserWarning, match="no TorchScript compiler"):
        assert jit.script(lin) is lin
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # the second call does not say it again
        assert jit.script(lin) is lin
    with pytest.warns(DeprecationWarning, match="`torch.jit.script` is deprecated"):
        jit.script(lin)  # as PyTorch 2.13, every call

    calls: list[Any] = []

    def f(x: Any, y: Any = 0) -> Any:
        calls.append((x, y))
        return x

    assert jit.trace(f, (1, 2)) is f and calls == [(1, 2)]  # the example ran once
    assert jit.trace(f, 5) is f and calls[-1] == (5, 0)  # a single input is one argument
    assert jit.trace(f, example_kwarg_inputs={"x": 7}) is f and calls[-1] == (7, 0)
    with pytest.raises(RuntimeError, match="example_kwarg_inputs or example_inputs"):
        jit.trace(f)
    out = jit.trace_module(lin, {"forward": pg.ones(1, 2)})
    assert out is lin
    with pytest.raises(RuntimeError, match="cannot be multiplied"):  # fails as eagerly
        jit.trace(lin, pg.ones(1, 5))
    with pytest.raises(RuntimeError, match="cannot be compiled"):
        jit.script(3)


def test_jit_flags_and_decorators(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jit, "_warned", True)  # the warning is the test above's subject
    assert jit.is_scripting() is False and jit.is_tracing() is False

    def f() -> int:
        return 1

    for deco in (jit.unused, jit.export, jit.ignore, jit._overload_method,
                 jit._overload, jit.script_if_tracing, jit.script_method):
        assert deco(f) is f

    class Iface:
        pass

    with pytest.warns(DeprecationWarning, match="interface` is deprecated"):
        assert jit.interface(Iface) is Iface
    with pytest.raises(RuntimeError, match="interface must be applied to a class"), \
            pytest.warns(DeprecationWarning):
        jit.interface(f)
    assert jit.ignore(drop=True)(f) is f
    with pytest.raises(RuntimeError, match="must be a bool or a function"):
        jit.ignore("x")
    assert jit.annotate(list[int], [1]) == [1]
    assert jit.Attribute(3, int) == (3, int) and jit.Attribute(3, int).value == 3
    assert jit.Final is __import__("typing").Final
    assert jit.annotations.Optional is __import__("typing").Optional
    assert jit.annotations.BroadcastingList2[int] is None  # annotation only, as in PyTorch
    assert issubclass(jit.ScriptModule, pg.nn.Module)
    with pytest.raises(TypeError, match="No constructor defined"):
        jit.ScriptFunction()
    assert not isinstance(jit.script(f), jit.ScriptFunction)


def test_jit_save_load_name_torchscript_archives(tmp_path: Path) -> None:
    with pytest.raises(NotImplementedError, match="TorchScript archives"):
        jit.save(pg.nn.Linear(1, 1), str(tmp_path / "m.pt"))
    with pytest.raises(NotImplementedError, match="TorchScript archives"):
        jit.load(str(tmp_path / "m.pt"))


@pytest.mark.filterwarnings("ignore:`torch.jit:DeprecationWarning")
def test_jit_fork_runs_eagerly_and_wait_returns() -> None:
    fut = jit.fork(lambda a, b=0: a + b, 1, b=2)
    assert isinstance(fut, futures.Future) and fut.done()
    assert jit.wait(fut) == 3

    def boom() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):  # raised at fork, as in PyTorch's eager mode
        jit.fork(boom)
    with pytest.raises(TypeError, match="expected a Future"):
        jit.wait(3)


def test_futures_then_collect_and_errors() -> None:
    f: futures.Future[int] = futures.Future()
    chained = f.then(lambda fut: fut.wait() * 10)
    assert not f.done() and not chained.done()
    with pytest.raises(RuntimeError, match="not completed"):
        f.value()
    f.set_result(4)
    assert chained.wait() == 40 and f.value() == 4
    with pytest.raises(RuntimeError, match="only be marked completed once"):
        f.set_result(5)
    g: futures.Future[int] = futures.Future()
    g.set_exception(KeyError("k"))
    with pytest.raises(KeyError):
        g.wait()
    with pytest.raises(KeyError):
        g.then(lambda fut: fut.wait()).wait()
    both = futures.collect_all([f, chained])
    assert both.done() and futures.wait_all(both.wait()) == [4, 40]


@pytest.mark.filterwarnings("ignore:`torch.jit:DeprecationWarning")
def test_jit_matches_torch_where_installed() -> None:
    torch = pytest.importorskip("torch")
    assert torch.jit.is_scripting() == jit.is_scripting()
    assert torch.jit.is_tracing() == jit.is_tracing()
    assert torch.jit.wait(torch.jit.fork(lambda a: a + 1, 1)) == jit.wait(jit.fork(lambda a: a + 1,
                                                                               1))
    assert tuple(torch.jit.Attribute(3, int)) == tuple(jit.Attribute(3, int))
    assert torch.jit.Final is jit.Final
    assert torch.jit.annotations.BroadcastingList2[int] is jit.annotations.BroadcastingList2[int]


# ------------------------------------------------------------------------------------ torch._C
def test_c_private_names() -> None:
    assert _C._log_api_usage_once("python.nn_module") is None
    with pytest.raises(TypeError):
        _C._log_api_usage_once(3)  # type: ignore[arg-type]
    assert _C._get_tracing_state() is None
    assert _C._get_privateuse1_backend_name() == "privateuseone"
    assert _C._get_cpu_capability() in ("AVX512", "AVX2", "NO AVX", "DEFAULT")
    try:
        _C._set_grad_enabled(False)
        assert not pg.is_grad_enabled() and not _C.is_grad_enabled()
    finally:
        _C._set_grad_enabled(True)
    assert pg.is_grad_enabled()
    with pytest.raises(TypeError, match="must be bool, not int"):
        _C._set_grad_enabled(1)
    a = pg.ones(4)
    assert _C._is_alias_of(a, a[1:]) and _C._is_alias_of(a.view(2, 2), a)
    assert not _C._is_alias_of(a, a.clone())
    assert _C._disabled_torch_function_impl(pg.add, (), (pg.ones(1), 1)).tolist() == [2.0]


def test_parse_to(device: str) -> None:
    p = _C._nn._parse_to
    assert p("cpu", pg.float16) == (pg.device("cpu"), pg.float16, False, None)
    assert p(pg.float64) == (None, pg.float64, False, None)
    assert p(pg.float64, True) == (None, pg.float64, True, None)
    assert p() == (None, None, False, None)
    assert p(dtype=pg.int64, memory_format=pg.channels_last) == (None, pg.int64, False,
                                                                  pg.channels_last)
    t = pg.zeros(1, dtype=pg.int32, device=device)
    assert p(t, non_blocking=True) == (t.device, pg.int32, True, None)
    with pytest.raises(RuntimeError, match="does not accept copy argument"):
        p("cpu", pg.float16, True, True)
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        p("cpu", "float")
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        p(device="cpu", bogus=1)
    with pytest.raises(RuntimeError, match="Invalid device string"):
        p("no/pe")


def test_c_matches_torch_where_installed() -> None:
    torch = pytest.importorskip("torch")
    assert torch._C._get_tracing_state() is _C._get_tracing_state()
    assert torch._C._get_privateuse1_backend_name() == _C._get_privateuse1_backend_name()
    assert torch._C._get_cpu_capability() == _C._get_cpu_capability()
    got = torch._C._nn._parse_to("cpu", torch.float16, True)
    mine = _C._nn._parse_to("cpu", pg.float16, True)
    assert (str(got[0]), str(got[1]).split(".")[-1], got[2], got[3]) == (
        str(mine[0]), str(mine[1]).split(".")[-1], mine[2], mine[3])


# --------------------------------------------------------------------- torch._dynamo, .compiler
def test_dynamo_and_compiler() -> None:
    def f(x: Any) -> Any:
        return x

    assert _dynamo.is_compiling() is False and compiler.is_compiling() is False
    assert compiler.is_dynamo_compiling() is False and compiler.is_exporting() is False
    assert _dynamo.disable(f) is f and _dynamo.disable(recursive=False)(f) is f
    assert compiler.disable(f) is f
    assert _dynamo.allow_in_graph(f) is f and _dynamo.assume_constant_result(f) is f
    assert _dynamo.reset() is None
    assert compiler.compile is pg.compile
    with pytest.raises(TypeError, match="expected a Tensor"):
        _dynamo.mark_dynamic(3, 0)  # type: ignore[arg-type]
    assert _dynamo.mark_dynamic(pg.ones(2), 0) is None
    # compile returns the model itself, so nothing is an OptimizedModule (no _orig_mod to unwrap)
    lin = pg.nn.Linear(2, 2)
    assert not isinstance(pg.compile(lin), _dynamo.OptimizedModule)
    wrapped = _dynamo.OptimizedModule(lin)
    x = pg.ones(1, 2)
    assert pg.equal(wrapped(x), lin(x)) and wrapped.in_features == 2
    assert list(wrapped.state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]


def test_dynamo_config_patch_restores() -> None:
    cfg = _dynamo.config
    assert cfg.cache_size_limit == 8 and cfg.suppress_errors is False
    with cfg.patch(suppress_errors=True, cache_size_limit=64):
        assert cfg.suppress_errors is True and cfg.cache_size_limit == 64
    assert cfg.suppress_errors is False and cfg.cache_size_limit == 8

    @cfg.patch("verbose", True)
    def inside() -> bool:
        return cfg.verbose

    assert inside() is True and cfg.verbose is False
    with pytest.raises(AttributeError, match="no setting 'nope'"), cfg.patch(nope=1):
        pass


def test_dynamo_matches_torch_where_installed() -> None:
    pytest.importorskip("torch")
    torch = importlib.import_module("torch")
    importlib.import_module("torch._dynamo")  # a submodule torch does not import eagerly

    assert torch.compiler.is_compiling() == compiler.is_compiling()
    for name in ("cache_size_limit", "accumulated_cache_size_limit", "recompile_limit",
                 "suppress_errors", "verbose", "optimize_ddp", "capture_scalar_outputs",
                 "automatic_dynamic_shapes", "assume_static_by_default"):
        assert getattr(torch._dynamo.config, name) == getattr(_dynamo.config, name), name


# ------------------------------------------------------------------------ torch.utils._pytree
P = namedtuple("P", "x y")

TREES: list[Any] = [
    {"b": 1, "a": [2, (3, 4)], "c": None},  # keys in insertion order, None a leaf
    OrderedDict(b=1, a=2), [1, None, {"x": 2}], P(1, [2]), defaultdict(list, {"k": [1, 2]}),
    deque([1, (2,)], maxlen=3), 5, (), {"a": {}},
]


@pytest.mark.parametrize("tree", TREES, ids=[type(t).__name__ for t in TREES])
def test_pytree_round_trip(tree: Any) -> None:
    leaves, spec = pytree.tree_flatten(tree)
    back = pytree.tree_unflatten(leaves, spec)
    assert back == tree and type(back) is type(tree)
    assert spec.num_leaves == len(leaves) == len(pytree.tree_leaves(tree))
    assert pytree.tree_structure(tree) == spec


def test_pytree_order_and_specs() -> None:
    leaves, spec = pytree.tree_flatten({"b": 1, "a": [2, (3, 4)], "c": None})
    assert leaves == [1, 2, 3, 4, None]
    assert repr(spec) == ("TreeSpec(dict, ['b', 'a', 'c'], [*,\n  TreeSpec(list, None, [*,\n"
                          "    TreeSpec(tuple, None, [*,\n      *])]),\n  *])")
    assert pytree.tree_map(lambda x, y: [x] + y, [5, 6], [[7, 9], [1, 2]]) == [[5, 7, 9],
                                                                              [6, 1, 2]]
    assert pytree.tree_map_only(int, lambda x: x * 10, {"a": 1, "b": "s"}) == {"a": 10, "b": "s"}
    assert pytree.tree_map_only((int, str), str, [1, "a", 2.0]) == ["1", "a", 2.0]
    assert pytree.tree_all(lambda x: x > 0, [1, (2,)]) and not pytree.tree_any(bool, [0, (0,)])
    assert pytree.tree_leaves([1, [2]], is_leaf=lambda x: isinstance(x, list) and len(x) == 1
                              ) == [1, [2]]

    class Sub(dict):  # unregistered subclasses are leaves, as in PyTorch
        pass

    assert pytree.tree_leaves([Sub(a=1)]) == [Sub(a=1)]
    with pytest.raises(ValueError, match="has length 1"):
        pytree.tree_unflatten([1], spec)
    with pytest.raises(ValueError, match="keys mismatch"):
        pytree.tree_map(lambda a, b: a, {"a": 1}, {"b": 1})
    assert pytree.treespec_pprint(pytree.tree_structure([1, {"a": 2}])) == "[*, {'a': *}]"


def test_pytree_register_node() -> None:
    class Pair:
        def __init__(self, a: Any, b: Any) -> None:
            self.a, self.b = a, b

    pytree.register_pytree_node(Pair, lambda p: ([p.a, p.b], None),
                                lambda v, c: Pair(*v))
    try:
        leaves, spec = pytree.tree_flatten([Pair(1, (2, 3))])
        assert leaves == [1, 2, 3]
        back = pytree.tree_unflatten([4, 5, 6], spec)
        assert back[0].a == 4 and back[0].b == (5, 6)
        with pytest.raises(ValueError, match="already registered"):
            pytree.register_pytree_node(Pair, lambda p: ([], None), lambda v, c: Pair(0, 0))
    finally:
        del pytree.SUPPORTED_NODES[Pair]

    class Other:
        pass

    with pytest.warns(FutureWarning, match="deprecated"):
        pytree._register_pytree_node(Other, lambda o: ([], None), lambda v, c: Other())
    try:
        assert Other in pytree.SUPPORTED_NODES
    finally:
        del pytree.SUPPORTED_NODES[Other]


def test_pytree_matches_torch_where_installed() -> None:
    pytest.importorskip("torch")
    import torch.utils._pytree as ref

    for tree in TREES:
        l1, s1 = pytree.tree_flatten(tree)
        l2, s2 = ref.tree_flatten(tree)
        assert l1 == l2 and repr(s1) == repr(s2), tree
        assert pytree.treespec_pprint(s1) == ref.treespec_pprint(s2)


# -------------------------------------------------------------------------- under compat
def test_private_modules_are_portagrads_under_compat(hooked: types.ModuleType) -> None:
    assert importlib.import_module("torch._C") is hooked._C
    assert hooked._C._log_api_usage_once is _C._log_api_usage_once
    assert importlib.import_module("torch._C._nn")._parse_to is _C._nn._parse_to
    assert importlib.import_module("torch._dynamo").is_compiling is _dynamo.is_compiling
    assert importlib.import_module("torch.utils._pytree").tree_flatten is pytree.tree_flatten
    assert hooked.jit.script is jit.script and hooked.compiler.disable is _dynamo.disable
    with pytest.raises(AttributeError, match=r"torch\._C\._nope is not implemented"):
        _ = hooked._C._nope
    with pytest.raises(ModuleNotFoundError, match="torch._tensor"):
        importlib.import_module("torch._tensor")


def test_library_style_imports_under_python_m_compat(tmp_path: Path) -> None:
    script = tmp_path / "lib_imports.py"
    script.write_text(textwrap.dedent("""
        import torch
        from torch._C import _log_api_usage_once, _get_tracing_state
        from torch._C._nn import _parse_to
        import torch._dynamo
        from torch._dynamo.eval_frame import OptimizedModule
        import torch.utils._pytree as pytree
        from torch.jit.annotations import Optional, Tuple
        _log_api_usage_once("lib")

        class Block(torch.nn.Module):
            @torch.jit.unused
            def extra(self):
                return 1

            def forward(self, x):
                if torch.jit.is_scripting() or torch.compiler.is_compiling():
                    raise AssertionError("never compiling")
                return x * 2

        @torch._dynamo.disable
        def helper(x):
            return x + 1

        m = torch.jit.script(Block())
        t = torch.jit.trace(m, torch.ones(2))
        print("same", m is t, isinstance(m, OptimizedModule), _get_tracing_state())
        print("out", m(torch.ones(2)).tolist(), helper(1))
        print("parse", _parse_to("cpu", torch.float64)[1])
        print("leaves", pytree.tree_leaves({"b": 1, "a": [2, 3]}))
    """))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "portagrad.compat", str(script)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "same True False None" in proc.stdout
    assert "out [2.0, 2.0] 2" in proc.stdout
    assert "parse portagrad.float64" in proc.stdout
    assert "leaves [1, 2, 3]" in proc.stdout
    assert proc.stderr.count("no TorchScript compiler") == 1  # warned once for script + trace


# ------------------------------------------------------------------------- versions
def test_version_module_and_torch_version_compare() -> None:
    from portagrad import version
    from portagrad.torch_version import TorchVersion

    v = version.__version__
    assert v == f"2.13.0+portagrad{pg.__version__}" and isinstance(v, str)
    assert version.cuda is None and version.hip is None and version.debug is False
    # version order, not string order: "2.13" is newer than "2.2"
    assert v >= "2.2" and v > (2, 1) and v >= (2, 13) and v < "2.14.0.dev20250101"
    assert v > "2.13.0" and v > "2.13.0rc1" and v == "2.13.0+portagrad" + pg.__version__
    assert TorchVersion("2.13") == "2.13.0" and hash(v) == hash(str(v))
    assert (TorchVersion("parrot") < "zebra") is True  # not a version: string order
    assert v.startswith("2.13")


def test_version_matches_torchs_comparisons_where_installed() -> None:
    pytest.importorskip("torch")
    import operator

    from torch.torch_version import TorchVersion as Ref

    from portagrad.torch_version import TorchVersion

    for text in ("2.13.0+portagrad0.1.0", "2.13.0", "1.10.0a0", "2.1.0.dev3", "2.0.post1"):
        for other in ("2.1", "2.13", "2.13.0", "2.14.0.dev20250101", "2.13.0rc1", (2, 1),
                      (2, 13, 0), (3,), "2.13.0+cpu", "parrot", "1.10.0", "2.0"):
            for op in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq):
                assert op(TorchVersion(text), other) == op(Ref(text), other), (text, other, op)


def test_torch_version_and_metadata_under_compat(tmp_path: Path) -> None:
    script = tmp_path / "versions.py"
    script.write_text(textwrap.dedent("""
        import importlib.metadata, importlib.util
        import torch
        import torch.version
        print("v", torch.__version__, importlib.metadata.version("torch"),
              torch.version.__version__, torch.version.cuda)
        print("ge", torch.__version__ >= "2.2", importlib.util.find_spec("torch") is not None)
        print("dist", importlib.metadata.distribution("torch").metadata["Name"])
    """))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "portagrad.compat", str(script)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    want = f"2.13.0+portagrad{pg.__version__}"
    assert f"v {want} {want} {want} None" in proc.stdout
    assert "ge True True" in proc.stdout and "dist torch" in proc.stdout


def test_metadata_finder_leaves_with_uninstall() -> None:
    import importlib.metadata

    before = [type(f) for f in sys.meta_path]
    compat.install()
    try:
        assert importlib.metadata.version("torch").startswith("2.13.0+portagrad")
        assert importlib.import_module("torch").__version__ == importlib.metadata.version("torch")
    finally:
        compat.uninstall()
    assert [type(f) for f in sys.meta_path] == before
    try:
        assert "portagrad" not in importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        pass  # no PyTorch installed: nothing answers after uninstall


# ------------------------------------------------------------------------------- torch.hub
def test_hub_dir_rules(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from portagrad import hub

    monkeypatch.setattr(hub, "_hub_dir", None)
    monkeypatch.delenv("TORCH_HOME", raising=False)
    monkeypatch.delenv("TORCH_HUB", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hub.get_dir() == str(tmp_path / "xdg" / "torch" / "hub")
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "th"))
    assert hub.get_dir() == str(tmp_path / "th" / "hub")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.delenv("TORCH_HOME")
    assert hub.get_dir() == os.path.expanduser("~/.cache/torch/hub")
    hub.set_dir("~/elsewhere")
    assert hub.get_dir() == os.path.expanduser("~/elsewhere")


def test_hub_matches_torch_dir_rules_where_installed(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from portagrad import hub

    monkeypatch.setattr(hub, "_hub_dir", None)
    monkeypatch.setattr(torch.hub, "_hub_dir", None)
    for env in ({"XDG_CACHE_HOME": str(tmp_path)}, {"TORCH_HOME": str(tmp_path / "t")}, {}):
        for k in ("XDG_CACHE_HOME", "TORCH_HOME"):
            monkeypatch.delenv(k, raising=False)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        assert hub.get_dir() == torch.hub.get_dir()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A local HTTP server over a fresh directory (no network needed)."""
    import functools
    import http.server
    import threading

    root = tmp_path / "www"
    root.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", root
    finally:
        server.shutdown()
        server.server_close()


def _checkpoint(root: Path, stem: str) -> tuple[str, dict[str, Any]]:
    import hashlib

    state = {"w": pg.arange(6, dtype=pg.float32).reshape(2, 3), "b": pg.ones(2)}
    tmp = root / "tmp.pth"
    pg.save(state, str(tmp), format="pytorch")
    digest = hashlib.sha256(tmp.read_bytes()).hexdigest()
    name = f"{stem}-{digest[:8]}.pth"
    tmp.rename(root / name)
    return name, state


def test_hub_load_state_dict_from_url(served: tuple[str, Path], tmp_path: Path) -> None:
    from portagrad import hub

    base, root = served
    name, state = _checkpoint(root, "weights")
    cache = tmp_path / "cache"
    got = hub.load_state_dict_from_url(f"{base}/{name}", model_dir=str(cache), progress=False,
                                       check_hash=True, map_location="cpu")
    assert set(got) == {"w", "b"} and pg.equal(got["w"], state["w"])
    assert (cache / name).is_file() and not list(cache.glob("*.partial"))
    (root / name).unlink()  # cached: a second call does not download
    again = hub.load_state_dict_from_url(f"{base}/{name}", model_dir=str(cache), progress=False)
    assert pg.equal(again["b"], state["b"])
    # file_name picks the cached name; file:// URLs work too
    other = hub.load_state_dict_from_url((cache / name).as_uri(), model_dir=str(tmp_path / "c2"),
                                         file_name="renamed.pth", progress=False)
    assert pg.equal(other["w"], state["w"]) and (tmp_path / "c2" / "renamed.pth").is_file()


def test_hub_hash_and_network_errors(served: tuple[str, Path], tmp_path: Path) -> None:
    from portagrad import hub

    base, root = served
    name, _ = _checkpoint(root, "weights")
    bad = name.replace(name.split("-")[1][:8], "00000000")
    (root / name).rename(root / bad)
    with pytest.raises(RuntimeError, match='invalid hash value \\(expected "00000000"'):
        hub.load_state_dict_from_url(f"{base}/{bad}", model_dir=str(tmp_path / "c"),
                                     check_hash=True, progress=False)
    assert not list((tmp_path / "c").iterdir())  # nothing left behind
    with pytest.raises(RuntimeError, match="could not download .*missing.pth"):
        hub.load_state_dict_from_url(f"{base}/missing.pth", model_dir=str(tmp_path / "c"),
                                     progress=False)
    with pytest.raises(RuntimeError, match="could not download"):
        hub.download_url_to_file("http://127.0.0.1:1/x.pth", str(tmp_path / "x"), progress=False)


def test_hub_local_hubconf(tmp_path: Path) -> None:
    from portagrad import hub

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "helper_mod.py").write_text("SCALE = 3\n")
    (repo / "hubconf.py").write_text(textwrap.dedent('''
        dependencies = ["math"]
        from helper_mod import SCALE  # the repo directory is on sys.path while loading

        def tiny(n=2, scale=1):
            """A tiny model."""
            import portagrad as pg
            return pg.nn.Linear(n, n * SCALE * scale)

        def _private():
            pass
    '''))
    m = hub.load(str(repo), "tiny", 2, source="local", scale=2)
    assert isinstance(m, pg.nn.Linear) and m.out_features == 12
    assert hub.list(str(repo), source="local") == ["tiny"]
    assert hub.help(str(repo), "tiny", source="local") == "A tiny model."
    with pytest.raises(RuntimeError, match="Cannot find callable nope in hubconf"):
        hub.load(str(repo), "nope", source="local")
    with pytest.raises(NotImplementedError, match="GitHub repository .*source='local'"):
        hub.load("owner/repo", "tiny")
    with pytest.raises(ValueError, match='Unknown source: "svn"'):
        hub.load(str(repo), "tiny", source="svn")
    (repo / "hubconf.py").write_text("dependencies = ['no_such_pkg_xyz']\ndef tiny():\n    pass\n")
    with pytest.raises(RuntimeError, match="Missing dependencies: no_such_pkg_xyz"):
        hub.load(str(repo), "tiny", source="local")
    assert str(repo) not in sys.path


# ------------------------------------------------------------------ smaller module paths
def test_module_utils_and_paths() -> None:
    from portagrad.nn.modules import instancenorm
    from portagrad.nn.modules import utils as mutils
    from portagrad.utils import hooks
    from portagrad.utils.data import Sampler
    from portagrad.utils.data import dataloader as dl

    assert mutils._pair(3) == (3, 3) and mutils._single(2) == (2,)
    assert mutils._triple([1, 2]) == (1, 2) and mutils._quadruple(0) == (0, 0, 0, 0)
    assert mutils._ntuple(2, "_p").__name__ == "_p"
    assert mutils._reverse_repeat_tuple((1, 2), 2) == (2, 2, 1, 1)
    sd: Any = OrderedDict([("module.w", 1), ("module.b", 2), ("other", 3)])
    sd._metadata = OrderedDict([("", {}), ("module", {"v": 1}), ("module.sub", {})])
    mutils.consume_prefix_in_state_dict_if_present(sd, "module.")
    assert list(sd) == ["other", "w", "b"]
    # "module" (the prefix without its dot) becomes "" (the wrapper's entry is replaced)
    assert list(sd._metadata.items()) == [("", {"v": 1}), ("sub", {})]
    assert instancenorm.InstanceNorm2d is pg.nn.InstanceNorm2d
    assert isinstance(pg.nn.Linear(1, 1).register_forward_hook(lambda *a: None),
                      hooks.RemovableHandle)
    assert Sampler[int] is not None and issubclass(pg.utils.data.RandomSampler, Sampler)
    loader = pg.utils.data.DataLoader(pg.utils.data.TensorDataset(pg.ones(4)), batch_size=2)
    assert isinstance(iter(loader), dl._BaseDataLoaderIter)
    assert isinstance(iter(loader), dl._SingleProcessDataLoaderIter)
    assert issubclass(dl._MultiProcessingDataLoaderIter, dl._BaseDataLoaderIter)
    assert pg.backend_flags.cpu.get_cpu_capability() == _C._get_cpu_capability()
    from portagrad import types as pgtypes
    assert pgtypes._dtype is pg.dtype and pgtypes._device is pg.device
    assert isinstance(3, pgtypes._Number)


def test_module_utils_match_torch_where_installed() -> None:
    pytest.importorskip("torch")
    from torch.nn.modules import utils as ref

    from portagrad.nn.modules import utils as mutils

    for f in ("_single", "_pair", "_triple", "_quadruple"):
        for x in (3, [1, 2], (4,), "ab"):
            assert getattr(mutils, f)(x) == getattr(ref, f)(x)
    for prefix in ("module.", "m."):
        a: Any = OrderedDict([("module.w", 1), ("m.x", 2), ("other", 3)])
        a._metadata = OrderedDict([("", {}), ("module", {}), ("module.sub", {}), ("m", {})])
        b: Any = OrderedDict(a)
        b._metadata = OrderedDict(a._metadata)
        mutils.consume_prefix_in_state_dict_if_present(a, prefix)
        ref.consume_prefix_in_state_dict_if_present(b, prefix)
        assert list(a.items()) == list(b.items()) and list(a._metadata) == list(b._metadata)
    import torch

    assert torch.backends.cpu.get_cpu_capability() == pg.backend_flags.cpu.get_cpu_capability()


# ----------------------------------------------------------------- torch.utils.checkpoint
def _block(device: str) -> pg.nn.Module:
    pg.manual_seed(0)
    return pg.nn.Sequential(pg.nn.Linear(4, 8), pg.nn.Tanh(), pg.nn.Dropout(0.5),
                            pg.nn.Linear(8, 3)).to(device)


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_gradients_equal_direct(device: str, reentrant: bool) -> None:
    from portagrad.utils.checkpoint import checkpoint

    model = _block(device)
    x = pg.randn(5, 4, device=device, requires_grad=True)
    pg.manual_seed(7)
    direct = model(x)
    direct.sum().backward()
    want_x, want_w = x.grad.clone(), model[0].weight.grad.clone()
    x.grad = None
    model.zero_grad()
    pg.manual_seed(7)  # the same dropout mask as the direct run, replayed in backward
    out = checkpoint(model, x, use_reentrant=reentrant)
    assert pg.equal(out, direct)
    pg.rand(3)  # draws between forward and backward must not change the recomputation
    out.sum().backward()
    assert pg.allclose(x.grad, want_x) and pg.allclose(model[0].weight.grad, want_w)


def test_checkpoint_variants_and_errors(device: str) -> None:
    from portagrad.utils.checkpoint import checkpoint, checkpoint_sequential

    model = _block(device).eval()
    x = pg.randn(2, 4, device=device)  # no input requires grad
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed"):
        checkpoint(model, x)
    # non-reentrant: the parameters inside still get gradients
    checkpoint(model, x, use_reentrant=False).sum().backward()
    assert model[0].weight.grad is not None
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad"):
        out = checkpoint(model, x, use_reentrant=True)
    assert not out.requires_grad
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(lambda t, scale: t * scale, x, scale=2, use_reentrant=True)
    y = checkpoint(lambda t, scale: t * scale, x, scale=2, use_reentrant=False)
    assert pg.equal(y, x * 2)
    model.zero_grad()
    xs = pg.randn(2, 4, device=device, requires_grad=True)
    seq = checkpoint_sequential(model, 2, xs, use_reentrant=True)
    assert pg.allclose(seq, model(xs))
    seq.sum().backward()
    got = xs.grad.clone()
    xs.grad = None
    model(xs).sum().backward()
    assert pg.allclose(got, xs.grad)


def test_checkpoint_non_reentrant_keeps_no_intermediates_and_acts_as_a_graph(device: str
                                                                              ) -> None:
    """Non-reentrant checkpointing records ``fn`` but keeps none of the tensors its ops save (a
    tensor made inside is freed after the forward); backward recomputes them. Second
    derivatives (PyTorch 2.13's values), dict outputs, and ``autograd.grad`` leaving the
    parameters' ``.grad`` alone, as without checkpointing."""
    import gc
    import weakref

    from portagrad.utils.checkpoint import checkpoint

    inner: list[weakref.ref[pg.Tensor]] = []

    def f(t: pg.Tensor) -> pg.Tensor:
        h = t ** 3
        inner.append(weakref.ref(h))
        return h.sin()

    x = pg.tensor([0.5, 1.0], device=device, requires_grad=True)
    y = checkpoint(f, x, use_reentrant=False)
    gc.collect()
    assert inner[0]() is None  # sin's saved input was not kept
    direct = f(x)
    assert inner[1]() is not None  # (without checkpointing it is)
    (g,) = pg.autograd.grad(y.sum(), x, create_graph=True)
    (g2,) = pg.autograd.grad(g.sum(), x)
    assert pg.allclose(g, pg.tensor([0.7441482543945312, 1.6209070682525635], device=device))
    assert pg.allclose(g2, pg.tensor([2.906463384628296, -4.331424236297607], device=device))
    assert pg.equal(y, direct)

    out = checkpoint(lambda t: {"a": t * 2, "b": [t.sin(), "tag"]}, x, use_reentrant=False)
    assert out["b"][1] == "tag"
    (out["a"].sum() + out["b"][0].sum()).backward()
    assert pg.allclose(x.grad, 2 + x.detach().cos())

    model = _block(device).eval()
    xi = pg.randn(3, 4, device=device, requires_grad=True)
    (gx,) = pg.autograd.grad(checkpoint(model, xi, use_reentrant=False).sum(), xi)
    assert model[0].weight.grad is None  # grad() of the input only
    (want,) = pg.autograd.grad(model(xi).sum(), xi)
    assert pg.allclose(gx, want)


def test_reentrant_checkpoint_refuses_restricted_backward(device: str) -> None:
    """The reentrant node's inner backward accumulates into every leaf inside, so it cannot
    serve ``autograd.grad`` or ``backward(inputs=...)``: PyTorch's error, not a silent ``.grad``
    on the parameters inside."""
    from portagrad.utils.checkpoint import checkpoint

    lin = pg.nn.Linear(2, 2).to(device)
    x = pg.ones(1, 2, device=device, requires_grad=True)
    msg = "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad()"
    with pytest.raises(RuntimeError, match=msg):
        pg.autograd.grad(checkpoint(lin, x, use_reentrant=True).sum(), x)
    with pytest.raises(RuntimeError, match=msg):
        checkpoint(lin, x, use_reentrant=True).sum().backward(inputs=[x])
    assert lin.weight.grad is None
    checkpoint(lin, x, use_reentrant=True).sum().backward()  # a plain backward still runs
    assert lin.weight.grad is not None and x.grad is not None


def test_checkpoint_recomputation_must_match(device: str) -> None:
    """A function that saves fewer tensors when recomputed is refused at backward, not
    differentiated with the wrong tensors."""
    from portagrad.utils.checkpoint import checkpoint

    calls = [0]

    def f(t: pg.Tensor) -> pg.Tensor:
        calls[0] += 1
        return (t * t).exp() if calls[0] == 1 else t * 1.0

    x = pg.tensor([0.5], device=device, requires_grad=True)
    y = checkpoint(f, x, use_reentrant=False)
    with pytest.raises(RuntimeError, match="recomputation saved 0 tensors for backward where "
                       "the forward saved"):
        y.sum().backward()


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpoint_recomputes_under_the_forwards_autocast(device: str, reentrant: bool) -> None:
    """The recomputation runs in the autocast state of the forward, whatever is in force at
    backward: the saved values are the forward's (bfloat16 products here)."""
    from portagrad.utils.checkpoint import checkpoint

    dev_type = pg.device(device).type
    lin = pg.nn.Linear(4, 4).to(device)
    x = pg.randn(3, 4, device=device, requires_grad=True)
    try:
        with pg.autocast(dev_type, dtype=pg.bfloat16):
            direct = lin(x).float().tanh()
            y = checkpoint(lambda t: lin(t).float().tanh(), x, use_reentrant=reentrant)
    except pg.errors.DTypeError:
        pytest.skip("this backend has no bfloat16")
    direct.sum().backward()
    want = x.grad
    x.grad = None
    y.sum().backward()  # autocast off here
    assert x.grad is not None and want is not None and pg.equal(x.grad, want)


# ------------------------------------------------------------ torch.library, .ops (torch.fx: test_fx.py)
def test_custom_op_runs_and_differentiates(device: str) -> None:
    from portagrad import library, ops

    @library.custom_op("pgtest::scale", mutates_args=())
    def scale(x: pg.Tensor, k: float = 2.0) -> pg.Tensor:
        return x * k

    try:
        x = pg.arange(3, dtype=pg.float32, device=device)
        assert pg.equal(scale(x), x * 2) and pg.equal(ops.pgtest.scale(x, 3.0), x * 3)
        assert ops.pgtest.scale.default(x).tolist() == [0.0, 2.0, 4.0]

        @scale.register_fake
        def _(x: pg.Tensor, k: float = 2.0) -> pg.Tensor:
            return pg.empty_like(x)

        def setup(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
            ctx.k = inputs[1]

        def backward(ctx: Any, g: pg.Tensor) -> tuple[Any, None]:
            return g * ctx.k * 10, None  # deliberately not the true derivative: it must be used

        scale.register_autograd(backward, setup_context=setup)
        xr = x.clone().requires_grad_()
        out = scale(xr, k=3.0)
        assert out.grad_fn is not None
        out.sum().backward()
        assert xr.grad.tolist() == [30.0, 30.0, 30.0]
        with pytest.raises(RuntimeError, match="already defined"):
            library.custom_op("pgtest::scale", scale._fn, mutates_args=())
    finally:
        ops._REGISTRY.pop("pgtest::scale", None)
    with pytest.raises(AttributeError, match="no attribute 'scale'"):
        _ = ops.pgtest.scale
    with pytest.raises(ValueError, match="namespace"):
        library.custom_op("noscope", lambda x: x, mutates_args=())
    with pytest.raises(TypeError):
        library.custom_op("pgtest::y", lambda x: x)  # type: ignore[call-arg]  (required)


def test_library_define_impl_and_load_library(tmp_path: Path) -> None:
    from portagrad import library, ops

    lib = library.Library("pgtest2", "DEF")
    try:
        assert lib.define("twice(Tensor x) -> Tensor") == "twice"
        with pytest.raises(NotImplementedError, match="no implementation"):
            ops.pgtest2.twice(pg.ones(1))
        lib.impl("twice", lambda x: x + x, "CPU")
        assert ops.pgtest2.twice(pg.ones(2)).tolist() == [2.0, 2.0]
        library.define("pgtest2::thrice", "(Tensor x) -> Tensor")

        @library.impl("pgtest2::thrice", "default")
        def thrice(x: pg.Tensor) -> pg.Tensor:
            return x * 3

        assert ops.pgtest2.thrice(pg.ones(1)).tolist() == [3.0]
        library.register_fake("pgtest2::thrice")(lambda x: x)
        with pytest.raises(NotImplementedError, match="only operators made with"):
            library.register_autograd("pgtest2::thrice", lambda ctx, g: g)
        with pytest.raises(ValueError, match="Unsupported kind"):
            library.Library("pgtest2", "NOPE")
    finally:
        lib._destroy()
        ops._REGISTRY.pop("pgtest2::thrice", None)
    with pytest.raises(NotImplementedError, match="compiled PyTorch extensions"):
        ops.load_library(str(tmp_path / "ext.so"))
    with pytest.raises(OSError, match="Could not load this library"):  # PyTorch's failure type
        ops.load_library(str(tmp_path / "ext.so"))


# ------------------------------------------------------------ dtypes named at import
DECLARED = ["complex64", "complex128", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
            "float8_e5m2fnuz", "float8_e8m0fnu", "complex32"]


def test_declared_dtypes_answer_and_refuse_tensors(device: str) -> None:
    from portagrad.errors import DTypeError

    assert pg.complex64.is_complex and not pg.complex64.is_floating_point
    assert pg.cfloat is pg.complex64 and pg.cdouble is pg.complex128
    assert pg.float8_e4m3fn.is_floating_point and pg.float8_e4m3fn.itemsize == 1
    assert not pg.float8_e8m0fnu.is_signed and not pg.float32.is_complex
    assert pg.float32.to_complex() is pg.complex64 and pg.complex128.to_real() is pg.float64
    assert pg.finfo(pg.complex64).eps == pg.finfo(pg.float32).eps
    assert pg.finfo(pg.float8_e4m3fn).max == 448.0 and pg.finfo(pg.float8_e5m2).max == 57344.0
    assert pg.finfo(pg.float8_e4m3fn).resolution == 1.0
    with pytest.raises(DTypeError, match="no float8 tensors"):
        pg.ones(2, device=device).to(pg.float8_e4m3fn)
    with pytest.raises(DTypeError, match="no float8 tensors"):
        pg.promote_types(pg.float8_e5m2, pg.float32)
    with pytest.raises(DTypeError):
        pg.nn.Linear(1, 1).to(device).to(pg.float8_e4m3fn)
    # complex64/complex128 are real tensor dtypes now: tests/test_complex.py
    assert pg.promote_types(pg.complex64, pg.float64) is pg.complex128
    # complex32 (chalf) is named, with float16 parts, but has no tensors
    assert pg.chalf is pg.complex32 and pg.complex32.is_complex and pg.complex32.itemsize == 4
    assert pg.complex32.to_real() is pg.float16
    assert pg.finfo(pg.complex32).eps == pg.finfo(pg.float16).eps
    for make in (lambda: pg.ones(2, device=device).chalf(),
                 lambda: pg.zeros(2, dtype=pg.complex32, device=device),
                 lambda: pg.ones(2, device=device).to(pg.chalf)):
        with pytest.raises(DTypeError, match="no complex32"):
            make()


def test_declared_dtypes_match_torch_where_installed() -> None:
    torch = pytest.importorskip("torch")
    for name in DECLARED + ["float16", "bfloat16", "float32", "float64"]:
        mine, ref = getattr(pg, name), getattr(torch, name)
        assert repr(pg.finfo(mine)) == repr(torch.finfo(ref)), name
        assert (mine.is_complex, mine.is_floating_point, mine.is_signed, mine.itemsize) == (
            ref.is_complex, ref.is_floating_point, ref.is_signed, ref.itemsize), name


# ------------------------------------------------------------ nn.utils.fusion, overrides
def _trained_bn(bn: pg.nn.Module, shape: tuple[int, ...], device: str) -> None:
    bn.train()
    with pg.no_grad():
        for _ in range(3):
            bn(pg.randn(*shape, device=device) * 3 + 1)
        if bn.weight is not None:
            bn.weight.copy_(pg.rand(bn.num_features, device=device) + 0.5)
            bn.bias.copy_(pg.randn(bn.num_features, device=device))
    bn.eval()


def test_fusion_matches_the_two_layers(device: str) -> None:
    from portagrad.nn.utils import fusion

    pg.manual_seed(0)
    conv = pg.nn.Conv2d(3, 4, 3).to(device).eval()
    bn = pg.nn.BatchNorm2d(4).to(device)
    _trained_bn(bn, (2, 4, 5, 5), device)
    x = pg.randn(2, 3, 7, 7, device=device)
    fused = fusion.fuse_conv_bn_eval(conv, bn)
    assert fused is not conv and isinstance(fused.weight, pg.nn.Parameter)
    assert pg.allclose(fused(x), bn(conv(x)), atol=1e-5)
    tconv = pg.nn.ConvTranspose2d(4, 2, 3, bias=False).to(device).eval()
    tbn = pg.nn.BatchNorm2d(2).to(device)
    _trained_bn(tbn, (2, 2, 5, 5), device)
    y = pg.randn(1, 4, 4, 4, device=device)
    assert pg.allclose(fusion.fuse_conv_bn_eval(tconv, tbn, transpose=True)(y), tbn(tconv(y)),
                       atol=1e-5)
    lin = pg.nn.Linear(5, 6).to(device).eval()
    lbn = pg.nn.BatchNorm1d(6).to(device)
    _trained_bn(lbn, (8, 6), device)
    z = pg.randn(3, 5, device=device)
    assert pg.allclose(fusion.fuse_linear_bn_eval(lin, lbn)(z), lbn(lin(z)), atol=1e-5)
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        fusion.fuse_linear_bn_eval(lin.train(), lbn)
    with pytest.raises(AssertionError, match="out_features == bn.num_features"):
        fusion.fuse_linear_bn_eval(pg.nn.Linear(5, 3).eval(), lbn)


def test_overrides_detect_but_do_not_dispatch() -> None:
    from portagrad import overrides

    class Like:
        @classmethod
        def __torch_function__(cls, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            return "mine"

    t = pg.ones(1)
    assert not overrides.has_torch_function((t, 1)) and overrides.has_torch_function((t, Like()))
    assert overrides.has_torch_function_unary(Like()) and not overrides.has_torch_function_unary(t)
    assert overrides.has_torch_function_variadic(t, Like())
    assert overrides.is_tensor_like(t) and overrides.is_tensor_like(Like())
    assert not overrides.is_tensor_like(3)
    with pytest.raises(NotImplementedError, match="__torch_function__"):
        overrides.handle_torch_function(pg.add, (Like(),), Like(), 1)

    class Off:  # PyTorch's way of declaring "no override" in a class body
        __torch_function__ = _C._disabled_torch_function_impl

    assert not overrides.has_torch_function((Off(),))

    class Mode(overrides.TorchFunctionMode):  # subclassing at import works
        pass

    with pytest.raises(NotImplementedError, match="would never be called"), Mode():
        pass


# ------------------------------------------------------------------- nn.utils.prune
def test_prune_masks_reparametrize_and_remove(device: str) -> None:
    from portagrad.nn.utils import prune

    m = pg.nn.Linear(4, 3).to(device)
    with pg.no_grad():
        m.weight.copy_(pg.arange(12, dtype=pg.float32, device=device).reshape(3, 4) - 5.4)
    prune.l1_unstructured(m, "weight", amount=0.25)  # the 3 smallest |w|: -0.4, 0.6, -1.4
    assert sorted(n for n, _ in m.named_parameters()) == ["bias", "weight_orig"]
    assert m.weight_mask.sum().item() == 9 and prune.is_pruned(m)
    assert m.weight_mask.tolist()[1] == [0.0, 0.0, 0.0, 1.0]
    x = pg.ones(2, 4, device=device)
    m(x).sum().backward()  # the gradient reaches weight_orig through the mask
    assert pg.equal(m.weight_orig.grad, m.weight_mask * 2)
    prune.ln_structured(m, "weight", amount=1, n=2, dim=0)  # combined: row 1 has the least norm
    assert isinstance(next(iter(m._forward_pre_hooks.values())), prune.PruningContainer)
    assert m.weight_mask.sum(dim=1).tolist() == [4.0, 0.0, 4.0]
    prune.remove(m, "weight")
    assert isinstance(m.weight, pg.nn.Parameter) and not prune.is_pruned(m)
    assert m.weight.tolist()[1] == [0.0, 0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="has to be pruned before"):
        prune.remove(m, "weight")
    with pytest.raises(ValueError, match="should be smaller than"):
        prune.random_unstructured(m, "bias", amount=10)
    assert "bias" in dict(m.named_parameters())  # a failed prune puts the parameter back
    with pytest.raises(ValueError, match="float in the range"):
        prune.L1Unstructured(amount=1.5)
    with pytest.raises(ValueError, match="multidimensional"):
        prune.random_structured(m, "bias", amount=1, dim=0)
    prune.random_unstructured(m, "bias", amount=1)
    assert m.bias_mask.sum().item() == 2
    prune.custom_from_mask(m, "bias", pg.tensor([1.0, 0.0, 1.0], device=device))
    assert m.bias_mask.sum().item() <= 1


def test_prune_matches_torch_where_installed() -> None:
    torch = pytest.importorskip("torch")
    import numpy as np
    import torch.nn.utils.prune as ref

    from portagrad.nn.utils import prune

    pg.manual_seed(0)
    a, b = pg.nn.Linear(4, 3), pg.nn.Linear(3, 2)
    ta, tb = torch.nn.Linear(4, 3), torch.nn.Linear(3, 2)
    with torch.no_grad():
        for mine, theirs in ((a, ta), (b, tb)):
            theirs.weight.copy_(torch.tensor(mine.weight.detach().numpy()))
    for fn, kw in ((prune.l1_unstructured, {"amount": 0.5}),
                   (prune.ln_structured, {"amount": 1, "n": 2, "dim": 0}),
                   (prune.l1_unstructured, {"amount": 2})):
        fn(a, "weight", **kw)
        getattr(ref, fn.__name__)(ta, "weight", **kw)
        assert np.array_equal(a.weight_mask.numpy(), ta.weight_mask.numpy()), fn.__name__
    prune.global_unstructured([(a, "weight"), (b, "weight")], prune.L1Unstructured, amount=0.4)
    ref.global_unstructured([(ta, "weight"), (tb, "weight")], ref.L1Unstructured, amount=0.4)
    assert np.array_equal(a.weight_mask.numpy(), ta.weight_mask.numpy())
    assert np.array_equal(b.weight_mask.numpy(), tb.weight_mask.numpy())


def test_jit_isinstance_refines_containers() -> None:
    cases: list[tuple[Any, Any, bool]] = [
        ([1, 2], list[int], True), ([1, "a"], list[int], False), ({"a": 1}, dict[str, int], True),
        ({"a": "b"}, dict[str, int], False), (None, int | None, True), (1.5, int | None, False),
        ((1, "x"), tuple[int, str], True), ((1, 2, 3), tuple[int, ...], False),
        ([pg.ones(1)], list[pg.Tensor], True), (3, int, True), ("3", int, False)]
    for obj, target, want in cases:
        assert jit.isinstance(obj, target) is want, (obj, target)
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for obj, target, want in cases:
            if "portagrad" not in repr(target):
                assert torch.jit.isinstance(obj, target) is want, (obj, target)


def test_torch_version_against_non_versions() -> None:
    from portagrad.torch_version import TorchVersion

    v = TorchVersion("2.13.0")
    assert (v == None) is False and (v != 5) is True  # noqa: E711  (the operator is the subject)
    with pytest.raises(TypeError):
        _ = v < None  # type: ignore[operator]
    with pytest.raises(TypeError):
        _ = v > 2  # not a version: string order, which an int does not have


def test_checkpoint_module_helpers() -> None:
    """torch.utils.checkpoint's helper names that libraries import."""
    import contextlib
    import warnings

    from portagrad.utils import checkpoint as ck

    assert issubclass(ck.CheckpointError, RuntimeError)
    fwd, rec = ck.noop_context_fn()
    assert isinstance(fwd, contextlib.nullcontext) and isinstance(rec, contextlib.nullcontext)
    x = pg.ones(2, requires_grad=True)
    d, n = ck.detach_variable((x, 3))
    assert d is not x and d.requires_grad and d.grad_fn is None and n == 3
    with pytest.raises(RuntimeError, match="^Only tuple of tensors is supported. Got Unsupported "
                       "input type: list$"):
        ck.detach_variable([x])  # type: ignore[arg-type]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ck.check_backward_validity((pg.ones(1),))
    assert any("None of the inputs have requires_grad=True" in str(w.message) for w in caught)
    assert ck.get_device_states(x) == ([], [])
    with ck.set_checkpoint_early_stop(False), ck.set_checkpoint_debug_enabled(None):
        pass


def test_invert_permutation_and_thread_safe_generator(device: str) -> None:
    from portagrad.nn.utils.rnn import invert_permutation

    inv = invert_permutation(pg.tensor([2, 0, 1], device=device))
    assert inv is not None and inv.tolist() == [1, 2, 0]
    assert invert_permutation(None) is None
    assert pg.random.thread_safe_generator is pg.thread_safe_generator
