"""The README's example runs as written."""
import re
from pathlib import Path


def test_readme_example_runs(tmp_path, monkeypatch):
    text = (Path(__file__).parents[1] / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    assert (tmp_path / "model.safetensors").exists()
    assert scope["loss"].item() > 0
