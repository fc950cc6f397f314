"""Plugin discovery: throw-away distributions with entry points, checked in fresh interpreters.

Each scenario writes distributions (a ``*.dist-info`` with ``entry_points.txt`` plus a module) into
a temporary folder put on ``PYTHONPATH``, then runs Python in a subprocess so that discovery starts
from scratch, as it does for a user.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.backend_independent

GOOD = '''
from portagrad.plugins import BackendSpec, hookimpl

def _load():
    from portagrad.backends.numpy import NumpyBackend

    class Good(NumpyBackend):
        device_type = "good"

        def host_array(self, src):
            return None

    return Good()

@hookimpl
def portagrad_backends():
    return [BackendSpec(name="good", device_type="good", loader=_load)]
'''

BROKEN_IMPORT = '''
raise ImportError("the vendor SDK libfoo.so is missing")
'''

BROKEN_HOOK = '''
from portagrad.plugins import hookimpl

@hookimpl
def portagrad_backends():
    raise RuntimeError("hook exploded")
'''

INCOMPLETE = '''
from portagrad.backends.interface import Backend
from portagrad.plugins import BackendSpec, hookimpl

class Half(Backend):
    device_type = "half"
    def device_count(self):
        return 1

@hookimpl
def portagrad_backends():
    return [BackendSpec(name="half", device_type="half", loader=Half)]
'''

MISSPELT = '''
from portagrad.plugins import hookimpl

@hookimpl
def portagrad_backendz():
    return []
'''


def _dist(root: Path, name: str, module_src: str) -> None:
    mod = f"pg_test_{name}"
    (root / f"{mod}.py").write_text(textwrap.dedent(module_src))
    info = root / f"{mod}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {mod}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[portagrad.backends]\n{name} = {mod}\n")


def _run(root: Path, code: str, **env: str) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join([str(root), str(Path(__file__).parents[1]),
                                              full_env.get("PYTHONPATH", "")])
    full_env.pop("PORTAGRAD_DISABLE_PLUGINS", None)
    full_env.update(env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=full_env, timeout=120)


@pytest.fixture
def plugin_root(tmp_path: Path) -> Path:
    _dist(tmp_path, "good", GOOD)
    _dist(tmp_path, "brokenimport", BROKEN_IMPORT)
    _dist(tmp_path, "brokenhook", BROKEN_HOOK)
    _dist(tmp_path, "half", INCOMPLETE)
    return tmp_path


def test_discovery_and_isolation(plugin_root: Path) -> None:
    r = _run(plugin_root, """
        import json
        import portagrad as pg                      # broken plugins must not break the import
        from portagrad.plugins.manager import get_state
        x = pg.ones(3, device="good") * 2           # the working plugin's device type works
        s = get_state()
        print(json.dumps({"value": x.tolist(), "device": str(x.device),
                          "loaded": sorted(s.loaded), "failed": s.failed}))
    """)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["value"] == [2.0, 2.0, 2.0] and out["device"] == "good:0"
    assert {"numpy", "opencl", "good", "half"} <= set(out["loaded"])
    assert "libfoo.so is missing" in out["failed"]["brokenimport"]
    assert "hook exploded" in out["failed"]["brokenhook"]


def test_a_plugin_device_refuses_dlpack_naming_its_own_memory(plugin_root: Path) -> None:
    # a plugin's memory is its backend's, not "an OpenCL buffer"; DLPack calls it an extension
    # device, and a host copy asked for explicitly still works
    proc = _run(plugin_root, """
        import numpy as np
        import portagrad as pg
        t = pg.arange(3.0, device="good:0")
        print(int(t.__dlpack_device__()[0]))
        try:
            t.__dlpack__()
        except BufferError as exc:
            print(exc)
        print(np.from_dlpack(t, device="cpu", copy=True).tolist())
    """)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "12"  # kDLExtDev
    assert "its memory belongs to the 'good' backend" in lines[1] and "OpenCL" not in lines[1]
    assert lines[2] == "[0.0, 1.0, 2.0]"


def test_failed_plugin_raises_only_when_used(plugin_root: Path) -> None:
    r = _run(plugin_root, """
        import portagrad as pg
        try:
            pg.zeros(1, device="brokenimport")
        except RuntimeError as exc:
            print("ERR", exc)
    """)
    assert r.returncode == 0, r.stderr
    assert "ERR" in r.stdout and "brokenimport" in r.stdout and "libfoo.so" in r.stdout


def test_incomplete_backend_reported_with_missing_methods(plugin_root: Path) -> None:
    r = _run(plugin_root, """
        import portagrad as pg
        try:
            pg.zeros(1, device="half")
        except RuntimeError as exc:
            print("ERR", exc)
    """)
    assert r.returncode == 0, r.stderr
    assert "does not implement the required method(s)" in r.stdout
    for meth in ("allocate", "matmul", "binary", "fill"):
        assert meth in r.stdout
    # methods with a default on Backend (a subclass inherits them) are not reported missing
    missing = r.stdout.partition("required method(s):")[2]
    for meth in ("sort", "where", "synchronize", "memory_stats", "random"):
        assert meth not in missing


def test_blocklist(plugin_root: Path) -> None:
    r = _run(plugin_root, """
        import portagrad as pg
        from portagrad.plugins.manager import get_state
        s = get_state()
        print(sorted(s.blocked), "good" in s.loaded)
        try:
            pg.zeros(1, device="good")
        except RuntimeError as exc:
            print("ERR", exc)
    """, PORTAGRAD_DISABLE_PLUGINS="good,brokenimport")
    assert r.returncode == 0, r.stderr
    first = r.stdout.splitlines()[0]
    assert first == "['brokenimport', 'good'] False"
    assert "ERR" in r.stdout and "'good'" in r.stdout


def test_misspelt_hook_is_reported(tmp_path: Path) -> None:
    _dist(tmp_path, "typo", MISSPELT)
    r = _run(tmp_path, """
        import portagrad as pg
        from portagrad.plugins.manager import get_state
        print(get_state().failed)
    """)
    assert r.returncode == 0, r.stderr
    assert "portagrad_backendz" in r.stdout


def test_info_lists_plugins_and_devices(plugin_root: Path) -> None:
    r = _run(plugin_root, "import sys, portagrad.__main__ as m; sys.exit(m.main(['info']))")
    assert r.returncode == 0, r.stderr
    text = r.stdout
    assert "loaded   numpy" in text and "cpu (plugin numpy)" in text
    assert "FAILED   brokenimport" in text and "libfoo.so" in text
    assert "good:0" in text
    r = _run(plugin_root, "import sys, portagrad.__main__ as m; sys.exit(m.main(['info', '--json']))",
             PORTAGRAD_DISABLE_PLUGINS="good")
    info = json.loads(r.stdout)
    assert info["plugins_blocked"] == ["good"]
    assert info["backends"]["cpu"]["devices"][0]["device"] == "cpu"


def test_unknown_device_type_names_available() -> None:
    import portagrad as pg

    with pytest.raises(RuntimeError, match=r"no backend for device type 'nosuch'.*available "
                                           r"device types: .*cpu"):
        pg.zeros(2, device="nosuch:0")


def test_validate_backend_direct() -> None:
    from portagrad.backends.interface import Backend
    from portagrad.plugins.manager import BackendValidationError, validate_backend

    class Empty(Backend):
        device_type = "empty"

    with pytest.raises(BackendValidationError, match="allocate.*matmul") as info:
        validate_backend(Empty(), "empty")
    from portagrad.backends.interface import REQUIRED_METHODS

    assert info.value.missing == list(REQUIRED_METHODS)  # the core only: the rest has defaults

    class Duck:  # not a Backend subclass: it has no defaults to inherit
        device_type = "duck"

    with pytest.raises(BackendValidationError) as info:
        validate_backend(Duck(), "duck")
    assert "where" in info.value.missing and "synchronize" in info.value.missing


# ------------------------------------------------------------------ who serves a device type
FAKE_CPU_BROKEN = '''
from portagrad.plugins import BackendSpec, hookimpl

def _load():
    raise ImportError("the fake cpu backend cannot load")

@hookimpl
def portagrad_backends():
    return [BackendSpec(name="fakecpu", device_type="cpu", priority=100, loader=_load)]
'''

FAKE_CPU_WORKING = '''
from portagrad.plugins import BackendSpec, hookimpl

def _load():
    from portagrad.backends.numpy import NumpyBackend

    class Mine(NumpyBackend):
        pass

    return Mine()

@hookimpl
def portagrad_backends():
    return [BackendSpec(name="mycpu", device_type="cpu", priority=10**6, loader=_load)]
'''


def _claim(device_type: str, priority: int, label: str) -> str:
    return f'''
from portagrad.plugins import BackendSpec, hookimpl

def _load():
    from portagrad.backends.numpy import NumpyBackend

    class B(NumpyBackend):
        device_type = {device_type!r}
        label = {label!r}

        def host_array(self, src):
            return None

    return B()

@hookimpl
def portagrad_backends():
    return [BackendSpec(name={label!r}, device_type={device_type!r}, priority={priority},
                        loader=_load)]
'''


_CPU_REPORT = """
    import json
    import portagrad as pg
    from portagrad.plugins.manager import get_backend, get_state
    x = pg.ones(3) * 2
    s = get_state()
    print(json.dumps({"value": x.tolist(), "backend": type(get_backend("cpu")).__name__,
                      "plugin": s.spec_plugin["cpu"], "shadowed": s.shadowed,
                      "failed": s.failed}))
"""


@pytest.mark.parametrize("src", [FAKE_CPU_BROKEN, FAKE_CPU_WORKING], ids=["broken", "working"])
def test_third_party_cannot_replace_cpu(tmp_path: Path, src: str) -> None:
    _dist(tmp_path, "fakecpu", src)
    r = _run(tmp_path, _CPU_REPORT)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["value"] == [2.0, 2.0, 2.0]
    assert out["backend"] == "NumpyBackend" and out["plugin"] == "numpy"
    [(plugin, device_type, reason)] = out["shadowed"]
    assert (plugin, device_type) == ("fakecpu", "cpu")
    assert "reserved for the built-in numpy backend" in reason
    # info lists the refused claim with its reason
    r = _run(tmp_path, "import sys, portagrad.__main__ as m; sys.exit(m.main(['info']))")
    assert r.returncode == 0, r.stderr
    assert "cpu (plugin numpy)" in r.stdout
    assert "loaded   fakecpu" in r.stdout  # the plugin loaded; only its cpu claim is refused
    line = next(ln for ln in r.stdout.splitlines() if ln.lstrip().startswith("unused"))
    assert "fakecpu" in line and "'cpu'" in line
    assert "refused" in line and "reserved for the built-in numpy backend" in line


def test_cpu_is_not_claimable_even_when_numpy_is_blocked(tmp_path: Path) -> None:
    _dist(tmp_path, "fakecpu", FAKE_CPU_WORKING)
    r = _run(tmp_path, """
        import portagrad as pg
        try:
            pg.zeros(1, device="cpu")
        except RuntimeError as exc:
            print("ERR", exc)
    """, PORTAGRAD_DISABLE_PLUGINS="numpy")
    assert r.returncode == 0, r.stderr
    assert "ERR no backend for device type 'cpu'" in r.stdout
    assert "reserved for the built-in numpy backend" in r.stdout


def test_highest_priority_wins_and_losers_are_listed(tmp_path: Path) -> None:
    _dist(tmp_path, "low", _claim("dup", 1, "low"))
    _dist(tmp_path, "high", _claim("dup", 5, "high"))
    _dist(tmp_path, "tie", _claim("dup", 5, "tie"))
    r = _run(tmp_path, """
        import json
        import portagrad as pg
        from portagrad.plugins.manager import get_backend, get_state
        s = get_state()
        print(json.dumps({"label": get_backend("dup").label, "plugin": s.spec_plugin["dup"],
                          "shadowed": sorted(s.shadowed)}))
    """)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["label"] in ("high", "tie") and out["plugin"] == out["label"]
    losers = {p: why for p, dt, why in out["shadowed"] if dt == "dup"}
    assert set(losers) == {"low", "high", "tie"} - {out["plugin"]}
    assert all(f"shadowed by plugin '{out['plugin']}'" in why for why in losers.values())
    r = _run(tmp_path, "import sys, portagrad.__main__ as m; sys.exit(m.main(['info', '--json']))")
    info = json.loads(r.stdout)
    assert {(d["plugin"], d["device_type"]) for d in info["plugins_shadowed"]} == {
        (p, "dup") for p in losers}


def test_a_failing_hook_registers_none_of_its_specs(tmp_path: Path) -> None:
    _dist(tmp_path, "partial", '''
from portagrad.plugins import BackendSpec, hookimpl

@hookimpl
def portagrad_backends():
    return [BackendSpec(name="p", device_type="partial", loader=object), "not a spec"]
''')
    r = _run(tmp_path, """
        from portagrad.plugins.manager import get_state
        s = get_state()
        print("partial" in s.specs, "BackendSpec" in s.failed["partial"])
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "True"]


# ------------------------------------------------------------------ SystemExit is a failure
@pytest.mark.parametrize("where", ["import", "hook", "loader"])
def test_system_exit_in_plugin_is_reported(tmp_path: Path, where: str) -> None:
    src = {
        "import": 'raise SystemExit("vendor SDK says bye")\n',
        "hook": '''
from portagrad.plugins import hookimpl

@hookimpl
def portagrad_backends():
    raise SystemExit("vendor SDK says bye")
''',
        "loader": '''
from portagrad.plugins import BackendSpec, hookimpl

def _load():
    raise SystemExit("vendor SDK says bye")

@hookimpl
def portagrad_backends():
    return [BackendSpec(name="quitter", device_type="quitter", loader=_load)]
''',
    }[where]
    _dist(tmp_path, "quitter", src)
    r = _run(tmp_path, """
        import portagrad as pg
        from portagrad.plugins.manager import get_state
        print("FAILED", get_state().failed.get("quitter"))
        print("VALUE", (pg.ones(2) + 1).tolist())
        try:
            pg.zeros(1, device="quitter")
        except RuntimeError as exc:
            print("ERR", exc)
        print("STILL RUNNING")
    """)
    assert r.returncode == 0, r.stderr
    assert "VALUE [2.0, 2.0]" in r.stdout and "STILL RUNNING" in r.stdout
    assert "ERR" in r.stdout and "SystemExit: vendor SDK says bye" in r.stdout
    if where != "loader":
        assert "FAILED SystemExit: vendor SDK says bye" in r.stdout
    r = _run(tmp_path, "import sys, portagrad.__main__ as m; sys.exit(m.main(['info']))")
    assert r.returncode == 0, r.stderr
    assert "SystemExit: vendor SDK says bye" in r.stdout


def test_keyboard_interrupt_in_plugin_propagates(tmp_path: Path) -> None:
    _dist(tmp_path, "ctrlc", "raise KeyboardInterrupt\n")
    r = _run(tmp_path, "import portagrad as pg; pg.zeros(1); print('SWALLOWED')")
    assert r.returncode != 0 and "SWALLOWED" not in r.stdout
    assert "KeyboardInterrupt" in r.stderr


@pytest.mark.parametrize("fields", ['device_type="bad:0"', 'device_type=""',
                                    'device_type="ok", priority="high"'])
def test_malformed_spec_fails_its_plugin(tmp_path: Path, fields: str) -> None:
    _dist(tmp_path, "malformed", f'''
from portagrad.plugins import BackendSpec, hookimpl

@hookimpl
def portagrad_backends():
    return [BackendSpec(name="m", loader=object, {fields})]
''')
    r = _run(tmp_path, """
        import portagrad as pg
        from portagrad.plugins.manager import get_state
        print((pg.ones(1) + 1).tolist(), sorted(get_state().specs))
        print(get_state().failed["malformed"])
    """)
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.splitlines()[:2]
    assert first.startswith("[2.0] ") and "ok" not in first and "bad" not in first
    assert "BackendSpec 'm'" in second


# ------------------------------------------------------------------ names, blocking and info
RENAMED = '''
from portagrad.plugins import BackendSpec, hookimpl

def _load():
    from portagrad.backends.numpy import NumpyBackend

    class R(NumpyBackend):
        device_type = "renamed"

        def host_array(self, src):
            return None

    return R()

@hookimpl
def portagrad_backends():
    return [BackendSpec(name="specname", device_type="renamed", loader=_load)]
'''

_TRY_RENAMED = """
    import warnings
    warnings.simplefilter("always")
    import portagrad as pg
    from portagrad.plugins.manager import get_state
    s = get_state()
    print("BLOCKED", sorted(s.blocked), "epname" in s.loaded)
    try:
        print("VALUE", pg.ones(1, device="renamed").tolist())
    except RuntimeError as exc:
        print("ERR", exc)
"""


@pytest.mark.parametrize("name", ["epname", "specname"])
def test_blocklist_accepts_entry_point_or_spec_name(tmp_path: Path, name: str) -> None:
    _dist(tmp_path, "epname", RENAMED)  # entry point "epname" provides BackendSpec "specname"
    r = _run(tmp_path, _TRY_RENAMED)
    assert r.returncode == 0, r.stderr
    assert "VALUE [1.0]" in r.stdout and "BLOCKED [] True" in r.stdout
    r = _run(tmp_path, _TRY_RENAMED, PORTAGRAD_DISABLE_PLUGINS=name)
    assert r.returncode == 0, r.stderr
    # an entry-point name blocks the plugin before import; a spec name only drops its backend
    assert f"BLOCKED ['{name}'] {name == 'specname'}" in r.stdout
    err = next(ln for ln in r.stdout.splitlines() if ln.startswith("ERR"))
    assert "no backend for device type 'renamed'" in err
    assert f"'{name}'" in err and "blocked by PORTAGRAD_DISABLE_PLUGINS" in err  # the hint stays
    assert "RuntimeWarning" not in r.stderr  # both names are known


def test_blocklist_unknown_name_warns(plugin_root: Path) -> None:
    r = _run(plugin_root, """
        import warnings
        warnings.simplefilter("always")
        import portagrad as pg
        print((pg.ones(1) + 1).tolist())
    """, PORTAGRAD_DISABLE_PLUGINS="good,nosuchplugin")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[2.0]"
    [line] = [ln for ln in r.stderr.splitlines() if "RuntimeWarning" in ln]
    assert "'nosuchplugin'" in line and "'good'" not in line.split("known names")[0]
    known = line.split("known names: ")[1]
    for name in ("numpy", "opencl", "good", "half", "brokenimport"):
        assert name in known


def test_info_lists_failed_backends_apart_and_who_wins(tmp_path: Path) -> None:
    _dist(tmp_path, "low", _claim("dup", 1, "low"))
    _dist(tmp_path, "high", _claim("dup", 5, "high"))
    _dist(tmp_path, "noload", '''
from portagrad.plugins import BackendSpec, hookimpl

def _load():
    raise ImportError("libnoload.so: cannot open shared object file")

@hookimpl
def portagrad_backends():
    return [BackendSpec(name="noload", device_type="noload", loader=_load)]
''')
    r = _run(tmp_path, "import sys, portagrad.__main__ as m; sys.exit(m.main(['info', '--json']))")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert "noload" not in info["backends"]  # a failed backend is not available
    assert info["backends_failed"]["noload"]["plugin"] == "noload"
    assert "libnoload.so" in info["backends_failed"]["noload"]["error"]
    assert info["backends"]["dup"]["plugin"] == "high" and info["backends"]["dup"]["shadows"] == ["low"]
    r = _run(tmp_path, "import sys, portagrad.__main__ as m; sys.exit(m.main(['info']))")
    assert r.returncode == 0, r.stderr
    text = r.stdout
    available = text.split("backends and devices:")[1].split("failed backends")[0]
    assert "noload" not in available and "dup (plugin high; wins over low" in available
    failed = text.split("failed backends (not available):")[1]
    assert "FAILED   noload (plugin noload)" in failed and "libnoload.so" in failed
    unused = next(ln for ln in text.splitlines() if ln.lstrip().startswith("unused"))
    assert "low" in unused and "shadowed by plugin 'high'" in unused


# ------------------------------------------------------------------ the conformance kit
def _kit(root: Path, backend: str) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join([str(root), str(Path(__file__).parents[1])])
    full_env.pop("PORTAGRAD_DISABLE_PLUGINS", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
         "portagrad.testing.plugin", "--pyargs", "portagrad.testing.conformance",
         "--portagrad-backend", backend, "-rfs"],
        capture_output=True, text=True, env=full_env, timeout=300, cwd=root)


def test_kit_reports_an_incomplete_backend_once(plugin_root: Path) -> None:
    r = _kit(plugin_root, "half")
    assert r.returncode == 1, r.stdout + r.stderr
    tail = r.stdout.strip().splitlines()[-1]
    assert tail.startswith("1 failed, ") and "skipped" in tail and "error" not in tail, tail
    failed = [ln for ln in r.stdout.splitlines() if ln.startswith("FAILED")]
    assert len(failed) == 1 and "test_contract_is_complete" in failed[0]
    problem = next(ln for ln in r.stdout.splitlines()
                   if "backend 'half' lacks required method(s) of the contract: " in ln)
    listed = problem.split("contract: ")[1].split(", ")
    for meth in ("allocate", "matmul", "binary", "fill"):
        assert meth in listed
    assert "device_count" not in listed  # Half implements it
    assert "sort" not in listed and "where" not in listed  # inherited defaults
    assert "SKIPPED" in r.stdout and "reported by test_contract_is_complete" in r.stdout


def test_kit_reports_a_backend_that_cannot_load_once(plugin_root: Path) -> None:
    r = _kit(plugin_root, "brokenimport")
    assert r.returncode == 1, r.stdout + r.stderr
    tail = r.stdout.strip().splitlines()[-1]
    assert tail.startswith("1 failed, ") and "error" not in tail, tail
    assert "backend 'brokenimport' failed to load" in r.stdout and "libfoo.so" in r.stdout


def test_info_names_a_backend_whose_spec_name_differs(tmp_path: Path) -> None:
    _dist(tmp_path, "epname", RENAMED)
    r = _run(tmp_path, "import sys, portagrad.__main__ as m; sys.exit(m.main(['info']))")
    assert r.returncode == 0, r.stderr
    assert "loaded   epname" in r.stdout
    assert "renamed (plugin epname, backend specname):" in r.stdout
    assert "cpu (plugin numpy):" in r.stdout  # equal names are not repeated


def test_example_plugin_honours_visible_devices(tmp_path: Path) -> None:
    example = Path(__file__).parents[1] / "examples" / "portagrad-example-backend"
    info = tmp_path / "portagrad_example_backend-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: portagrad-example-backend\n"
                                   "Version: 0.1.0\n")
    (info / "entry_points.txt").write_text(
        "[portagrad.backends]\nexample = portagrad_example_backend.plugin\n")
    code = """
        import portagrad as pg
        print(pg.example.device_count(), pg.example.get_device_name(0),
              (pg.ones(2, device="example:0") * 2).tolist())
    """
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(example), str(Path(__file__).parents[1])])}
    r = _run(tmp_path, code, **env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "2 Example virtual device 0 [2.0, 2.0]"
    r = _run(tmp_path, code, PORTAGRAD_VISIBLE_DEVICES="example:1", **env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "1 Example virtual device 1 [2.0, 2.0]"
