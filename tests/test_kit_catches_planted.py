"""The conformance kit catches each bug planted in ``tests/planted_backends.py``, and passes the
correct backends there.

One subprocess runs the kit (``pytest.main`` in a loop, one session per backend) against every
planted backend, restricted with ``-k`` to the kit tests of the bug's family and stopping at the
first failure, and against the correct ones in full; the tests below read its results."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from planted_backends import CLEAN, PLANTED

ROOT = Path(__file__).resolve().parents[1]

_DRIVER = r"""
import contextlib, io, json, sys
import pytest
from planted_backends import CLEAN, PLANTED

pytestmark = pytest.mark.backend_independent

results = {}
runs = [(name, None) for name in CLEAN] + list(PLANTED.items())
for name, expr in runs:
    args = ["-q", "-p", "no:cacheprovider", "-p", "portagrad.testing.plugin", "--pyargs",
            "portagrad.testing.conformance", "--portagrad-backend-object",
            f"{sys.argv[2]}:{name}", "-W", "ignore::RuntimeWarning"]
    if expr is not None:
        args += ["-x", "-k", expr]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = int(pytest.main(args))
    lines = out.getvalue().splitlines()
    results[name] = {"code": code, "summary": lines[-1] if lines else "",
                     "failed": [ln for ln in lines if ln.startswith("FAILED")][:3]}
with open(sys.argv[1], "w") as f:
    json.dump(results, f)
"""


@pytest.fixture(scope="module")
def kit_results(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("kit") / "results.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests"), str(ROOT)])
    env["PORTAGRAD_DISABLE_PLUGINS"] = "opencl"  # not needed here: a faster, quieter start
    env.pop("PORTAGRAD_VISIBLE_DEVICES", None)
    env.pop("PORTAGRAD_TEST_DEVICES", None)  # the suite's device list is not the kit's business
    r = subprocess.run([sys.executable, "-c", _DRIVER, str(out), str(ROOT / "tests" /
                                                                     "planted_backends.py")],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.mark.parametrize("name", CLEAN)
def test_kit_passes_a_correct_backend(kit_results: dict, name: str) -> None:
    res = kit_results[name]
    assert res["code"] == 0, f"{name}: {res['summary']}\n" + "\n".join(res["failed"])
    assert " passed" in res["summary"] and "failed" not in res["summary"]


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_kit_catches_the_planted_bug(kit_results: dict, name: str) -> None:
    res = kit_results[name]
    assert res["code"] == 1, (f"the kit ({PLANTED[name]!r}) did not catch {name}: "
                              f"{res['summary']}")
    assert res["failed"], res["summary"]


def test_every_planted_backend_has_one_bug_family() -> None:
    import planted_backends as pb

    assert len(PLANTED) >= 25
    for name in PLANTED:
        cls = getattr(pb, name)
        assert issubclass(cls, pb.Clean) and cls.__doc__, name
        # one bug: each class overrides one primitive (or one private hook) of its base
        own = [n for n in vars(cls) if not n.startswith("__")]
        assert len(own) == 1, f"{name} overrides {own}"
