"""``portagrad.utils.tensorboard.SummaryWriter``: every record is read back with TensorBoard's own
event loader (``EventAccumulator``), so the files are what TensorBoard shows."""
from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.utils.tensorboard import SummaryWriter

event_accumulator = pytest.importorskip(
    "tensorboard.backend.event_processing.event_accumulator",
    reason="tensorboard is not installed (pip install tensorboard; the test extra has it)")


def _load(path: str) -> Any:
    ea = event_accumulator.EventAccumulator(
        str(path), size_guidance={"images": 0, "histograms": 0, "tensors": 0, "scalars": 0})
    ea.Reload()
    return ea


def test_scalars_from_any_device(tmp_path: Any, device: Any) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        assert w.get_logdir() == str(tmp_path)
        for i in range(4):
            w.add_scalar("loss", pg.tensor(1.0 / (i + 1), device=device), i)
        w.add_scalar("lr", 0.1, pg.tensor(7, device=device), walltime=123.0)
        try:
            half = pg.tensor(0.5, dtype=pg.bfloat16, device=device)
        except pg.errors.DTypeError:  # a device that declines bfloat16 (array_api_strict's)
            half = pg.tensor(0.5, device=device)
        w.add_scalar("bf16", half, 0)
    ea = _load(tmp_path)
    assert [(e.step, e.value) for e in ea.Scalars("loss")] == [
        (0, 1.0), (1, 0.5), (2, pytest.approx(1 / 3)), (3, 0.25)]
    lr = ea.Scalars("lr")[0]
    assert (lr.step, lr.wall_time, lr.value) == (7, 123.0, pytest.approx(0.1))
    assert ea.Scalars("bf16")[0].value == 0.5
    with pytest.raises(ValueError, match="scalar should be 0D"):
        SummaryWriter(str(tmp_path / "x")).add_scalar("bad", pg.ones(2), 0)


def test_scalars_grouped_in_sub_runs(tmp_path: Any) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        w.add_scalars("acc", {"train": 0.9, "test": pg.tensor(0.8)}, 3)
    assert {"acc_train", "acc_test"} <= set(os.listdir(tmp_path))
    train = _load(tmp_path / "acc_train").Scalars("acc")[0]
    assert (train.step, train.value) == (3, pytest.approx(0.9))


def test_histogram(tmp_path: Any) -> None:
    x = pg.tensor(np.random.default_rng(0).normal(size=1000))
    with SummaryWriter(str(tmp_path)) as w:
        w.add_histogram("w", x, 2)
        w.add_histogram("auto", x, 3, bins="auto")
    h = _load(tmp_path).Histograms("w")[0]
    hv = h.histogram_value
    a = x.numpy()
    assert h.step == 2 and hv.num == 1000 and sum(hv.bucket) == 1000
    assert hv.min == pytest.approx(a.min()) and hv.max == pytest.approx(a.max())
    assert hv.sum == pytest.approx(a.sum()) and hv.sum_squares == pytest.approx((a * a).sum())
    assert sum(_load(tmp_path).Histograms("auto")[0].histogram_value.bucket) == 1000
    with pytest.raises(ValueError, match="no element"):
        SummaryWriter(str(tmp_path / "e")).add_histogram("empty", pg.zeros(0))


def test_images(tmp_path: Any) -> None:
    img = pg.zeros(3, 4, 6)
    img[0] = 1.0  # red
    with SummaryWriter(str(tmp_path)) as w:
        w.add_image("red", img, 1)
        w.add_image("hwc", img.permute(1, 2, 0), 1, dataformats="HWC")
        w.add_images("grid", pg.rand(5, 1, 4, 4), 2)
        with pytest.raises(ValueError, match="does not match dataformats"):
            w.add_image("bad", pg.zeros(4, 6), 1)
    ea = _load(tmp_path)
    from PIL import Image
    import io
    for tag in ("red", "hwc"):
        ev = ea.Images(tag)[0]
        assert (ev.width, ev.height) == (6, 4)
        px = np.asarray(Image.open(io.BytesIO(ev.encoded_image_string)))
        assert px.shape == (4, 6, 3) and (px[..., 0] == 255).all() and not px[..., 1:].any()
    grid = ea.Images("grid")[0]
    assert (grid.width, grid.height) == (12, 8)  # 5 images: a 2 x 3 grid of 4 x 4


def test_text_and_hparams(tmp_path: Any) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        w.add_text("note", "hello **world**", 7)
        w.add_hparams({"lr": 0.1, "bs": 32, "opt": "sgd", "obj": [1]}, {"hparam/acc": 0.9},
                      run_name="trial")
    t = _load(tmp_path).Tensors("note/text_summary")[0]
    assert t.step == 7 and t.tensor_proto.string_val == [b"hello **world**"]
    trial = _load(tmp_path / "trial")
    assert {"_hparams_/experiment", "_hparams_/session_start_info"} <= set(trial.Tags()["tensors"])
    assert trial.Scalars("hparam/acc")[0].value == pytest.approx(0.9)
    from tensorboard.plugins.hparams import plugin_data_pb2
    data = trial.summary_metadata["_hparams_/session_start_info"].plugin_data.content
    info = plugin_data_pb2.HParamsPluginData.FromString(data).session_start_info
    assert info.hparams["lr"].number_value == 0.1 and info.hparams["opt"].string_value == "sgd"
    assert info.hparams["obj"].string_value == "[1]"  # other values as text, as PyTorch


def test_closed_writer_and_graph(tmp_path: Any) -> None:
    w = SummaryWriter(str(tmp_path))
    assert any(f.startswith("events.out.tfevents") for f in os.listdir(tmp_path))
    w.close()
    with pytest.raises(RuntimeError, match="closed"):
        w.add_scalar("x", 1.0, 0)
    with pytest.raises(NotImplementedError, match="add_graph"):
        SummaryWriter(str(tmp_path / "g")).add_graph(pg.nn.Linear(2, 2))


def test_default_log_dir(tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_exp1") as w:
        assert w.get_logdir().startswith("runs" + os.sep) and w.get_logdir().endswith("_exp1")
    assert os.path.isdir(tmp_path / w.get_logdir())
