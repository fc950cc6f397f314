"""``python -m portagrad demo``: train a small CNN on the shipped handwritten digits.

It exercises the whole stack: tensors on the best device, autograd, ``nn`` layers, ``optim.SGD``
with momentum, ``utils.data`` (split, shuffled loader), ``pg.save``/``pg.load`` of a checkpoint (the
test accuracy at the end is measured with the *reloaded* model), and prints the device it used and
how long it took. A fixed seed gives the same run on every device. With ``--amp`` the forward
passes run under ``pg.autocast``: bfloat16 on the CPU, float16 with a ``GradScaler`` on other
devices that compute in float16 (bfloat16 on those that do not).

Started on several MPI ranks (``mpiexec -n 2 python -m portagrad demo`` or
``python -m portagrad.distributed.run --nproc-per-node 2 -m portagrad demo``) it trains with
``DistributedDataParallel``: each rank a ``DistributedSampler`` shard of the training set, its
share of the (global) batch size and a device of its own, rank 0 printing the progress and saving
the checkpoint.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import Any

import portagrad as pg
from portagrad import distributed as dist, nn, optim
from portagrad.distributed.run import assign_device
from portagrad.errors import DTypeError
from portagrad.nn.parallel import DistributedDataParallel
from portagrad.utils.data import DataLoader, DistributedSampler, TensorDataset, random_split

from .digits import load_digits

__all__ = ["main", "run", "build_model", "best_device", "load_digits", "amp_dtype"]


def best_device() -> str:
    """``"opencl:0"`` when an OpenCL device is available, else ``"cpu"``."""
    try:
        if pg.opencl.is_available():
            return "opencl:0"
    except Exception:  # a broken OpenCL install must not stop the demo
        pass
    return "cpu"


# what MPI launchers (MPICH's Hydra, Open MPI, the portagrad launcher) put in each rank's
# environment: the job is distributed when one of them says more than one rank
_WORLD_SIZE_VARS = ("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE")
_LOCAL_RANK_VARS = ("LOCAL_RANK", "MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK")


def launched_distributed() -> bool:
    """Whether this process is one of several ranks started by an MPI launcher."""
    for var in _WORLD_SIZE_VARS:
        v = os.environ.get(var)
        if v and v.isdigit():
            return int(v) > 1 and dist.is_available()
    return False


def _local_rank() -> int:
    for var in _LOCAL_RANK_VARS:
        v = os.environ.get(var)
        if v and v.isdigit():
            return int(v)
    return dist.get_rank()


def build_model() -> Any:
    """The demo CNN: two 3x3 conv + ReLU + 2x2 max-pool stages (8x8 -> 2x2), then a linear layer."""
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 2 * 2, 10),
    )


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run numpy's BLAS on one thread when threadpoolctl is installed: the demo's matrices are
    small, and a multi-threaded BLAS on a busy machine is several times slower than one thread."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _accuracy(model: Any, x: Any, y: Any, batch: int = 512) -> float:
    model.eval()
    correct = 0
    with pg.no_grad():
        for i in range(0, x.shape[0], batch):
            pred = model(x[i:i + batch]).argmax(dim=1)
            correct += int((pred == y[i:i + batch]).sum().item())
    model.train()
    return correct / x.shape[0]


def amp_dtype(dev: pg.device) -> pg.dtype:
    """The autocast dtype of the demo on ``dev``: bfloat16 on cpu; float16 (trained with a
    ``GradScaler``) where the device stores it, which every OpenCL device does (computed in
    float32, with or without ``cl_khr_fp16``); else bfloat16 (a backend that declines float16)."""
    if dev.type == "cpu":
        return pg.bfloat16
    try:
        (pg.ones(2, device=dev, dtype=pg.float16) * 2.0).sum().item()
    except DTypeError:
        return pg.bfloat16
    return pg.float16


def run(epochs: int = 12, batch_size: int = 32, lr: float = 0.05, seed: int = 0,
        device: str | None = None, checkpoint: str | None = None, progress: bool = True,
        out: Any = None, amp: bool = False) -> dict[str, Any]:
    """Train and evaluate; returns ``{"device", "test_accuracy", "seconds", "history", ...}``.
    ``amp``: train under ``pg.autocast`` (:func:`amp_dtype`), with a ``GradScaler`` for
    float16."""
    out = out or sys.stdout
    distributed = launched_distributed()
    if distributed and not dist.is_initialized():
        dist.init_process_group("mpi")
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    lead = rank == 0  # the rank that prints and saves

    def say(*a: Any) -> None:
        if lead:
            print(*a, file=out, flush=True)

    if device is None and distributed:  # one device per rank of a host
        device = os.environ.get("PORTAGRAD_DEVICE") or assign_device(_local_rank())
    device = device or best_device()
    dev = pg.device(device)
    t0 = time.perf_counter()
    pg.manual_seed(seed)
    images, labels = load_digits()
    x = (images / 16.0).unsqueeze(1).to(dev)  # (N, 1, 8, 8) in [0, 1]
    y = labels.to(dev)
    train_set, test_set = random_split(TensorDataset(x, y), [0.8, 0.2],
                                       generator=pg.Generator().manual_seed(seed))
    test_idx = pg.tensor(test_set.indices, dtype=pg.int64, device=dev)
    x_test, y_test = x[test_idx], y[test_idx]
    sampler = None
    per_rank = batch_size
    if distributed:
        # batch_size stays the global batch: each rank takes its share, so a step averages the
        # gradient of as many images as one process would, and the same lr fits
        per_rank = max(1, batch_size // world)
        sampler = DistributedSampler(train_set, world, rank, shuffle=True, seed=seed)
        loader = DataLoader(train_set, batch_size=per_rank, sampler=sampler)
    else:
        loader = DataLoader(train_set, batch_size=batch_size, shuffle=True,
                            generator=pg.Generator().manual_seed(seed))
    model = build_model().to(dev)
    net = model  # the model itself (what is evaluated and saved)
    if distributed:
        model = DistributedDataParallel(net)
    opt = optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    loss_fn = nn.CrossEntropyLoss()
    fast = amp_dtype(dev) if amp else None
    # loss scaling keeps float16's small gradients from flushing to zero; bfloat16 has float32's
    # range and needs none (a disabled scaler passes everything through)
    scaler = pg.amp.GradScaler(dev.type, enabled=fast == pg.float16)
    name = dev.type if dev.type == "cpu" else getattr(pg, dev.type).get_device_name(dev.index or 0)
    say(f"portagrad demo: CNN on handwritten digits ({len(train_set)} train / {len(test_set)} test"
        f" images, 8x8) on {dev} ({name})")
    if fast is not None:
        say(f"mixed precision: autocast({fast})" + (" with a GradScaler" if scaler.is_enabled()
                                                    else ""))
    if distributed:
        say(f"data parallel on {world} MPI ranks: {len(loader)} batches of {per_rank} per rank "
            f"and epoch (a global batch of {per_rank * world})")
    bar_cls = _tqdm() if progress and lead else None
    history = []
    for epoch in range(1, epochs + 1):
        te = time.perf_counter()
        total, seen, correct = 0.0, 0, 0
        if sampler is not None:
            sampler.set_epoch(epoch)
        batches = loader
        bar = None
        if bar_cls is not None:
            bar = bar_cls(loader, desc=f"epoch {epoch}/{epochs}", leave=False, unit="batch",
                          file=out, dynamic_ncols=True)
            batches = bar
        for xb, yb in batches:
            opt.zero_grad()
            with pg.autocast(dev.type, dtype=fast, enabled=fast is not None):
                logits = model(xb)
                loss = loss_fn(logits, yb)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            n = yb.shape[0]
            total += loss.item() * n
            seen += n
            correct += int((logits.argmax(dim=1) == yb).sum().item())
            if bar is not None:
                bar.set_postfix(loss=f"{total / seen:.4f}")
        if bar is not None:
            bar.close()
        sched.step()
        if distributed:  # the epoch's figures over every rank's shard
            sums = pg.tensor([total, float(seen), float(correct)], dtype=pg.float64)
            dist.all_reduce(sums)
            total, seen, correct = sums[0].item(), int(sums[1].item()), int(sums[2].item())
        test_acc = _accuracy(net, x_test, y_test)
        history.append({"epoch": epoch, "loss": total / seen, "train_accuracy": correct / seen,
                        "test_accuracy": test_acc})
        say(f"epoch {epoch:2d}/{epochs}: loss {total / seen:.4f}  train acc "
            f"{100 * correct / seen:5.1f}%  test acc {100 * test_acc:5.1f}%  "
            f"({time.perf_counter() - te:.1f} s)")
    if not lead:  # rank 0 saves and checks the checkpoint
        dist.barrier()
        dist.destroy_process_group()
        return {"device": str(dev), "device_name": name, "test_accuracy": history[-1][
            "test_accuracy"], "seconds": time.perf_counter() - t0, "history": history,
            "checkpoint_bytes": 0, "rank": rank, "world_size": world}
    # checkpoint: model + optimizer + scheduler state, saved and re-loaded into fresh objects
    tmpdir = None
    if checkpoint is None:
        tmpdir = tempfile.mkdtemp(prefix="portagrad-demo-")
        checkpoint = os.path.join(tmpdir, "digits-cnn.safetensors")
    pg.save({"epoch": epochs, "seed": seed, "model": net.state_dict(),
             "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
             "test_accuracy": history[-1]["test_accuracy"] if history else None}, checkpoint)
    size = os.path.getsize(checkpoint)
    ck = pg.load(checkpoint, map_location=dev)
    restored = build_model().to(dev)
    restored.load_state_dict(ck["model"])
    opt2 = optim.SGD(restored.parameters(), lr=lr, momentum=0.9)
    opt2.load_state_dict(ck["optimizer"])
    final = _accuracy(restored, x_test, y_test)
    if tmpdir is not None:
        os.remove(checkpoint)
        os.rmdir(tmpdir)
        where = "a temporary file"
    else:
        where = checkpoint
    say(f"checkpoint (model + optimizer, epoch {ck['epoch']}) saved to {where} "
        f"({size / 1024:.0f} KiB) and re-loaded")
    seconds = time.perf_counter() - t0
    say(f"test accuracy of the re-loaded model: {100 * final:.2f}%")
    say(f"device: {dev} ({name}); total time {seconds:.1f} s")
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    return {"device": str(dev), "device_name": name, "test_accuracy": final, "seconds": seconds,
            "history": history, "checkpoint_bytes": size, "rank": rank, "world_size": world,
            "amp_dtype": fast}


def _tqdm() -> Any:
    try:
        from tqdm import tqdm
    except ImportError:  # tqdm is a dependency, but the demo runs without it
        return None
    return tqdm


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point of ``python -m portagrad demo``."""
    p = argparse.ArgumentParser(prog="python -m portagrad demo",
                                description="Train a small CNN on the bundled handwritten digits.")
    p.add_argument("--device", default=None,
                   help="device to train on (default: opencl:0 if available, else cpu)")
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint", default=None,
                   help="where to save the checkpoint (default: a temporary file, removed after)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--amp", action="store_true",
                   help="mixed precision: autocast (bfloat16 on cpu; float16 and a GradScaler "
                        "on devices with float16, else bfloat16)")
    args = p.parse_args(list(argv) if argv is not None else None)
    if args.epochs < 1:
        p.error("--epochs must be at least 1")
    with single_threaded_blas():
        res = run(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed,
                  device=args.device, checkpoint=args.checkpoint, progress=not args.no_progress,
                  amp=args.amp)
    return 0 if res["test_accuracy"] > 0 else 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
