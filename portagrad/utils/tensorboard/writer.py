"""``SummaryWriter``: scalars, histograms, images, text and hyper-parameters as TensorBoard events.

The records are the ``tensorboard`` package's protocol buffers (``Summary``, ``HistogramProto``,
the text and hparams plugins' metadata) written by its ``EventFileWriter``: nothing here encodes
protobuf by hand. Values may be tensors on any device (read back to the host once per call),
numpy arrays or Python numbers.
"""
from __future__ import annotations

import io
import os
import socket
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import numpy as np

__all__ = ["SummaryWriter"]


def _tb() -> Any:
    """The ``tensorboard`` modules this writer uses (imported on first use: optional)."""
    try:
        from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2
        from tensorboard.plugins.hparams import summary_v2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError as exc:
        raise ImportError("TensorBoard logging requires the tensorboard package: "
                          "pip install tensorboard") from exc
    return event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, summary_v2, EventFileWriter


def _numpy(x: Any) -> np.ndarray:
    """``x`` (a tensor on any device, an array, a number or a list) as a numpy array."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):
        x = x.detach().cpu()
        if str(getattr(x, "dtype", "")).endswith(("bfloat16", "float16")):
            x = x.float()
        return np.asarray(x.numpy())
    return np.asarray(x)


def _scalar(x: Any) -> float:
    a = _numpy(x)
    if a.size != 1:
        raise ValueError(f"scalar should be 0D, got an array of shape {list(a.shape)}")
    return float(a.reshape(()))


def _tf_bucket_limits() -> np.ndarray:
    """TensorFlow's default histogram bucket limits (``bins="tensorflow"``): exponentially
    spaced from 1e-12 to 1e20 by a factor 1.1, mirrored below zero."""
    v, pos = 1e-12, []
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    pos_arr = np.array(pos)
    return np.concatenate([-pos_arr[::-1], [0.0], pos_arr])


class SummaryWriter:
    """Writes TensorBoard event files into ``log_dir`` (``runs/<date>_<host><comment>`` when not
    given), as ``torch.utils.tensorboard.SummaryWriter``. Use it as a context manager, or call
    :meth:`close` (or :meth:`flush`) to make sure everything is on disk."""

    def __init__(self, log_dir: str | None = None, comment: str = "", purge_step: int | None = None,
                 max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:
        if log_dir is None:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self._writer: Any = None
        self._subwriters: dict[str, SummaryWriter] = {}
        self._closed = False
        self._file_writer()  # the directory and the event file exist from here on, as in PyTorch

    # -------------------------------------------------------------------- files
    def get_logdir(self) -> str:
        """The directory the event files are written into."""
        return self.log_dir

    def _file_writer(self) -> Any:
        if self._closed:
            raise RuntimeError("the SummaryWriter is closed")
        if self._writer is None:
            *_, EventFileWriter = _tb()
            self._writer = EventFileWriter(self.log_dir, self.max_queue, self.flush_secs,
                                           self.filename_suffix)
            event_pb2 = _tb()[0]
            if self.purge_step is not None:
                # TensorBoard drops the events from a crashed run's later steps on this marker
                self._writer.add_event(event_pb2.Event(
                    step=self.purge_step, wall_time=time.time(),
                    session_log=event_pb2.SessionLog(status=event_pb2.SessionLog.START)))
                self.purge_step = None
        return self._writer

    def _add(self, summary: Any, step: Any, walltime: float | None) -> None:
        event_pb2 = _tb()[0]
        event = event_pb2.Event(summary=summary, wall_time=time.time() if walltime is None
                                else float(walltime))
        if step is not None:
            event.step = int(_scalar(step))
        self._file_writer().add_event(event)

    def flush(self) -> None:
        """Write every pending event to disk."""
        if self._writer is not None:
            self._writer.flush()
        for w in self._subwriters.values():
            w.flush()

    def close(self) -> None:
        """Flush and close the event files (further calls raise)."""
        if self._writer is not None:
            self._writer.flush()
            self._writer.close()
            self._writer = None
        for w in self._subwriters.values():
            w.close()
        self._subwriters = {}
        self._closed = True

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ records
    def add_scalar(self, tag: str, scalar_value: Any, global_step: Any = None,
                   walltime: float | None = None, new_style: bool = False,
                   double_precision: bool = False) -> None:
        """One value of the series ``tag`` at ``global_step``."""
        _, summary_pb2, tensor_pb2, *_ = _tb()
        value = _scalar(scalar_value)
        if new_style:  # a tensor summary of the scalars plugin, as PyTorch's new_style
            dt = "DT_DOUBLE" if double_precision else "DT_FLOAT"
            t = tensor_pb2.TensorProto(dtype=dt, **({"double_val": [value]} if double_precision
                                                    else {"float_val": [value]}))
            meta = summary_pb2.SummaryMetadata(
                plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))
            v = summary_pb2.Summary.Value(tag=tag, tensor=t, metadata=meta)
        else:
            v = summary_pb2.Summary.Value(tag=tag, simple_value=value)
        self._add(summary_pb2.Summary(value=[v]), global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: Mapping[str, Any],
                    global_step: Any = None, walltime: float | None = None) -> None:
        """Several series under one chart: each ``tag`` is written by a writer of its own in
        ``<log_dir>/<main_tag>_<tag>`` (PyTorch's layout), as the value ``main_tag``."""
        walltime = time.time() if walltime is None else walltime
        for tag, value in tag_scalar_dict.items():
            name = os.path.join(self.log_dir, f"{main_tag}_{tag}".replace("/", "_"))
            w = self._subwriters.get(name)
            if w is None:
                w = self._subwriters[name] = SummaryWriter(name, max_queue=self.max_queue,
                                                           flush_secs=self.flush_secs,
                                                           filename_suffix=self.filename_suffix)
            w.add_scalar(main_tag, value, global_step, walltime)

    def add_histogram(self, tag: str, values: Any, global_step: Any = None,
                      bins: Any = "tensorflow", walltime: float | None = None,
                      max_bins: int | None = None) -> None:
        """The distribution of ``values`` (``bins``: ``"tensorflow"``, a count, edges, or any of
        numpy's bin rules such as ``"auto"``)."""
        _, summary_pb2, *_ = _tb()
        a = _numpy(values).astype(np.float64).reshape(-1)
        if a.size == 0:
            raise ValueError("The input has no element.")
        edges = _tf_bucket_limits() if isinstance(bins, str) and bins == "tensorflow" else bins
        counts, limits = np.histogram(a, bins=edges)
        if max_bins is not None and len(counts) > max_bins:  # merge neighbours, as PyTorch
            k = -(-len(counts) // max_bins)
            pad = (-len(counts)) % k
            counts = np.pad(counts, (0, pad)).reshape(-1, k).sum(1)
            limits = np.concatenate([limits[:-1:k], limits[-1:]])
        nz = np.nonzero(counts)[0]  # TensorBoard needs no empty buckets beyond the data's range
        lo, hi = (nz[0], nz[-1] + 1) if len(nz) else (0, len(counts))
        lo = max(lo - 1, 0)
        hi = min(hi + 1, len(counts))
        hist = summary_pb2.HistogramProto(
            min=float(a.min()), max=float(a.max()), num=int(a.size), sum=float(a.sum()),
            sum_squares=float((a * a).sum()), bucket_limit=limits[1:][lo:hi].tolist(),
            bucket=counts[lo:hi].astype(np.float64).tolist())
        v = summary_pb2.Summary.Value(tag=tag, histo=hist)
        self._add(summary_pb2.Summary(value=[v]), global_step, walltime)

    def add_image(self, tag: str, img_tensor: Any, global_step: Any = None,
                  walltime: float | None = None, dataformats: str = "CHW") -> None:
        """One image: floats in [0, 1] or uint8, laid out as ``dataformats`` (``CHW``, ``HWC``,
        ``HW``), 1, 3 or 4 channels; stored as PNG."""
        self._image(tag, _to_hwc(_numpy(img_tensor), dataformats.upper()), global_step,
                    walltime)

    def add_images(self, tag: str, img_tensor: Any, global_step: Any = None,
                   walltime: float | None = None, dataformats: str = "NCHW") -> None:
        """A batch of images tiled into one grid (``dataformats`` ``NCHW`` or ``NHWC``)."""
        a = _numpy(img_tensor)
        fmt = dataformats.upper()
        if fmt not in ("NCHW", "NHWC") or a.ndim != 4:
            raise ValueError(f"add_images expects a 4-D batch in NCHW or NHWC, got shape "
                             f"{list(a.shape)} as {dataformats}")
        if fmt == "NHWC":
            a = a.transpose(0, 3, 1, 2)
        n, c, h, w = a.shape
        cols = int(np.ceil(np.sqrt(n)))
        rows = int(np.ceil(n / cols))
        grid = np.zeros((c, rows * h, cols * w), a.dtype)
        for i in range(n):
            r, q = divmod(i, cols)
            grid[:, r * h:(r + 1) * h, q * w:(q + 1) * w] = a[i]
        self._image(tag, _to_hwc(grid, "CHW"), global_step, walltime)

    def _image(self, tag: str, hwc: np.ndarray, step: Any, walltime: float | None) -> None:
        _, summary_pb2, *_ = _tb()
        from PIL import Image  # tensorboard's own dependency

        h, w, c = hwc.shape
        buf = io.BytesIO()
        Image.fromarray(hwc if c > 1 else hwc[:, :, 0]).save(buf, format="PNG")
        img = summary_pb2.Summary.Image(height=h, width=w, colorspace=c,
                                        encoded_image_string=buf.getvalue())
        self._add(summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, image=img)]),
                  step, walltime)

    def add_text(self, tag: str, text_string: str, global_step: Any = None,
                 walltime: float | None = None) -> None:
        """A piece of text (markdown) for the text dashboard."""
        _, summary_pb2, tensor_pb2, tensor_shape_pb2, *_ = _tb()
        meta = summary_pb2.SummaryMetadata(
            plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="text"))
        shape = tensor_shape_pb2.TensorShapeProto(
            dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=1)])
        t = tensor_pb2.TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf-8")],
                                   tensor_shape=shape)
        v = summary_pb2.Summary.Value(tag=tag + "/text_summary", metadata=meta, tensor=t)
        self._add(summary_pb2.Summary(value=[v]), global_step, walltime)

    def add_hparams(self, hparam_dict: Mapping[str, Any], metric_dict: Mapping[str, Any],
                    hparam_domain_discrete: Mapping[str, list] | None = None,
                    run_name: str | None = None, global_step: Any = None) -> None:
        """One trial for the hparams dashboard: its hyper-parameters and final metrics, written
        (as PyTorch does) into a run of its own, ``<log_dir>/<run_name or the time>``."""
        *_, summary_v2, _ = _tb()
        if not isinstance(hparam_dict, Mapping) or not isinstance(metric_dict, Mapping):
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        hparams = {k: (v if isinstance(v, (bool, int, float, str)) else str(v))
                   for k, v in hparam_dict.items()}
        domains = hparam_domain_discrete or {}
        hp_defs = [summary_v2.HParam(k, summary_v2.Discrete(domains[k])) if k in domains
                   else summary_v2.HParam(k) for k in hparams]
        metrics = [summary_v2.Metric(k) for k in metric_dict]
        run = os.path.join(self.log_dir, run_name or str(time.time()))
        with SummaryWriter(run) as w:
            w._add(summary_v2.hparams_config_pb(hparams=hp_defs, metrics=metrics), None, None)
            w._add(summary_v2.hparams_pb({h: hparams[h.name] for h in hp_defs}), None, None)
            for k, v in metric_dict.items():
                w.add_scalar(k, v, global_step)

    def add_graph(self, model: Any, input_to_model: Any = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """Not available: PyTorch records the graph with its JIT tracer, which portagrad has
        not; the other records work without it."""
        raise NotImplementedError("SummaryWriter.add_graph needs a traced graph (torch.jit.trace), "
                                  "which portagrad does not produce; the scalars, histograms, "
                                  "images, text and hparams records work")


def _to_hwc(a: np.ndarray, fmt: str) -> np.ndarray:
    """An image array in layout ``fmt`` as uint8 HWC with 1, 3 or 4 channels (floats are taken
    as [0, 1] and scaled to 0-255, as PyTorch does)."""
    if fmt not in ("CHW", "HWC", "HW") or a.ndim != len(fmt):
        raise ValueError(f"an image of shape {list(a.shape)} does not match dataformats {fmt!r}")
    if fmt == "HW":
        a = a[None]
        fmt = "CHW"
    if fmt == "CHW":
        a = a.transpose(1, 2, 0)
    if a.shape[2] not in (1, 3, 4):
        raise ValueError(f"an image needs 1, 3 or 4 channels, got {a.shape[2]}")
    if a.dtype != np.uint8:
        a = (np.clip(a.astype(np.float64), 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    return np.ascontiguousarray(a)
