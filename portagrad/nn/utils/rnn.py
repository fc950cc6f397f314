"""``nn.utils.rnn``: packed variable-length batches (``PackedSequence``, ``pack_padded_sequence``,
``pad_packed_sequence``, ``pack_sequence``, ``unpack_sequence``) and ``pad_sequence`` /
``unpad_sequence``, laid out as PyTorch's.

Packing and unpacking are a single ``index_select`` of rows each (the packed layout is a
permutation of the padded batch's valid rows), so gradients flow through them with no op of
their own."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from ... import _creation, _dtype
from ..._ops.joining import cat, stack
from ..._tensor import Tensor

__all__ = ["pad_sequence", "unpad_sequence", "PackedSequence", "pack_padded_sequence",
           "pad_packed_sequence", "pack_sequence", "unpack_sequence", "invert_permutation"]


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a permutation of ``0..n-1`` (``None`` stays ``None``)."""
    if permutation is None:
        return None
    out = _creation.empty_like(permutation)
    out.scatter_(0, permutation, _creation.arange(permutation.numel(), device=permutation.device))
    return out


def _index(values: Iterable[int], device: Any) -> Tensor:
    """An int64 index tensor on ``device``."""
    return _creation.tensor(list(values), dtype=_dtype.int64, device=device)


def _padded_to_packed(padded: Tensor, batch_sizes: Sequence[int]) -> Tensor:
    """The packed rows of a time-major ``(T, B, *)`` batch already in sorted (decreasing length)
    order: step by step, the first ``batch_sizes[t]`` entries of step ``t``."""
    T, B = padded.shape[0], padded.shape[1]
    flat = padded.reshape((T * B,) + tuple(padded.shape[2:]))
    rows = [t * B + b for t, n in enumerate(batch_sizes) for b in range(n)]
    return flat.index_select(0, _index(rows, padded.device))


def _packed_to_padded(data: Tensor, batch_sizes: Sequence[int], total_length: int,
                      padding_value: float) -> Tensor:
    """The inverse of :func:`_padded_to_packed`: a time-major ``(total_length, B, *)`` batch in
    sorted order, ``padding_value`` past each sequence's end. One gather from the packed rows
    plus one padding row appended at the end (index ``N``)."""
    B = batch_sizes[0] if batch_sizes else 0
    N = data.shape[0]
    trailing = tuple(data.shape[1:])
    pad = _creation.full((1,) + trailing, padding_value, dtype=data.dtype, device=data.device)
    ext = cat([data, pad], 0)
    rows: list[int] = []
    offset = 0
    for t in range(total_length):
        n = batch_sizes[t] if t < len(batch_sizes) else 0
        rows.extend(offset + b if b < n else N for b in range(B))
        offset += n
    return ext.index_select(0, _index(rows, data.device)).reshape((total_length, B) + trailing)


def _lengths_from_batch_sizes(batch_sizes: Sequence[int]) -> list[int]:
    """Each sequence's length, in sorted order (the number of steps it is still running)."""
    B = batch_sizes[0] if batch_sizes else 0
    return [sum(1 for n in batch_sizes if n > b) for b in range(B)]


class _PackedSequenceBase(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedSequenceBase):
    """A batch of variable-length sequences in PyTorch's packed layout.

    ``data`` is ``(sum(lengths), *)``: the sequences' steps interleaved time step by time step
    (longest sequence first); ``batch_sizes`` (int64, on the CPU) counts the sequences still
    running at each step; ``sorted_indices`` maps the sorted order to the original batch and
    ``unsorted_indices`` back (both ``None`` when the batch was packed already sorted). Build one
    with :func:`pack_padded_sequence` or :func:`pack_sequence`, not by hand."""

    def __new__(cls, data: Any, batch_sizes: Any = None, sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        # as PyTorch: ``PackedSequence((data, batch_sizes))`` is accepted too
        if batch_sizes is None:
            data, batch_sizes = data
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """``data`` converted as ``Tensor.to``; the index tensors follow it to its device
        (``batch_sizes`` stays on the CPU). ``self`` when nothing changes."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        # the indices keep their int64 type: only the device (and flags) carry over
        kwargs = {k: v for k, v in kwargs.items() if k not in ("device", "dtype")}
        sorted_indices = (None if self.sorted_indices is None
                          else self.sorted_indices.to(data.device, **kwargs))
        unsorted_indices = (None if self.unsorted_indices is None
                            else self.unsorted_indices.to(data.device, **kwargs))
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def cpu(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """The packed batch on the CPU."""
        return self.to(*args, device="cpu", **kwargs)

    def double(self) -> PackedSequence:
        """``data`` as float64."""
        return self.to(dtype=_dtype.float64)

    def float(self) -> PackedSequence:
        """``data`` as float32."""
        return self.to(dtype=_dtype.float32)

    def half(self) -> PackedSequence:
        """``data`` as float16."""
        return self.to(dtype=_dtype.float16)

    def long(self) -> PackedSequence:
        """``data`` as int64."""
        return self.to(dtype=_dtype.int64)

    def int(self) -> PackedSequence:
        """``data`` as int32."""
        return self.to(dtype=_dtype.int32)

    def short(self) -> PackedSequence:
        """``data`` as int16."""
        return self.to(dtype=_dtype.int16)

    def char(self) -> PackedSequence:
        """``data`` as int8."""
        return self.to(dtype=_dtype.int8)

    def byte(self) -> PackedSequence:
        """``data`` as uint8."""
        return self.to(dtype=_dtype.uint8)

    @property
    def is_cuda(self) -> bool:
        """Whether ``data`` is on a CUDA device (never here)."""
        return bool(self.data.is_cuda)

    def is_pinned(self) -> bool:
        """Whether ``data`` is in pinned memory."""
        return bool(self.data.is_pinned())


def _invert_permutation(permutation: Tensor) -> Tensor:
    """The inverse permutation (``out[permutation[i]] = i``), on ``permutation``'s device."""
    perm = [int(i) for i in permutation.tolist()]
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return _index(inverse, permutation.device)


def _lengths_dim(lengths: Any) -> int:
    """The number of dimensions of ``lengths`` (a tensor or nested lists)."""
    if isinstance(lengths, Tensor):
        return lengths.dim()
    dim = 0
    while isinstance(lengths, (list, tuple)):
        dim += 1
        lengths = lengths[0] if lengths else None
    return dim


def _lengths_list(lengths: Any) -> list[int]:
    """``lengths`` (a list or a tensor, converted to int64 as PyTorch's) as Python ints."""
    if not isinstance(lengths, Tensor):
        lengths = _creation.tensor(lengths, dtype=_dtype.int64)
    if lengths.dim() != 1:
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got "
                           f"{lengths.dim()}D {lengths.device.type} Long tensor")
    return [int(n) for n in lengths.tolist()]


def pack_padded_sequence(input: Tensor, lengths: Any, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) of sequences of
    ``lengths`` (a list or a 1-D CPU int64 tensor). With ``enforce_sorted`` the lengths must be
    decreasing; otherwise the batch is sorted here and the permutation kept in the result."""
    if not enforce_sorted and _lengths_dim(lengths) != 1:
        # PyTorch sorts the lengths and gathers the batch with the order: no vector, no gather
        raise IndexError("index_select(): Index is supposed to be a vector")
    lens = _lengths_list(lengths)
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if input.dim() < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[-{max(input.dim(), 1)}, {max(input.dim(), 1) - 1}], but got 1)")
    sorted_indices = None
    if not enforce_sorted:
        # a stable sort: what PyTorch's sort gives on ties for small batches
        order = sorted(range(len(lens)), key=lambda i: -lens[i])
        lens = [lens[i] for i in order]
        sorted_indices = _index(order, input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
        if input.numel() == 0:  # no lengths: nothing gathered
            raise RuntimeError("Cannot pack empty tensors.")
    x = input.transpose(0, 1) if batch_first else input  # time-major from here
    B = x.shape[1]
    if len(lens) != B:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(lens)} (batch_size={B})")
    # the same checks, in the same order, as ATen's _pack_padded_sequence (the smallest length
    # is the last one once sorted)
    if lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element "
                           "in 'lengths' that is <= 0")
    if any(a < b for a, b in zip(lens, lens[1:])):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                           "`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                           "pack_padded_sequence and/or pack_sequence to sidestep this "
                           "requirement if you do not need ONNX exportability.")
    if lens[0] > x.shape[0]:
        # PyTorch reads past the end of the input here; an error is the only safe answer
        raise RuntimeError(f"pack_padded_sequence: a length ({lens[0]}) exceeds the padded "
                           f"sequence length ({x.shape[0]})")
    batch_sizes = [sum(1 for n in lens if n > t) for t in range(lens[0])]
    data = _padded_to_packed(x, batch_sizes)
    return PackedSequence(data, _index(batch_sizes, "cpu"), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None
                        ) -> tuple[Tensor, Tensor]:
    """The inverse of :func:`pack_padded_sequence`: ``(padded, lengths)``, ``padded`` time-major
    (batch-major with ``batch_first``) and padded with ``padding_value`` to the longest length
    (or ``total_length``), ``lengths`` an int64 CPU tensor; both in the original batch order."""
    batch_sizes = [int(n) for n in sequence.batch_sizes.tolist()]
    max_seq_length = len(batch_sizes)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {max_seq_length}")
        max_seq_length = total_length
    padded = _packed_to_padded(sequence.data, batch_sizes, max_seq_length, padding_value)
    lens = _lengths_from_batch_sizes(batch_sizes)
    if sequence.unsorted_indices is not None:
        order = [int(i) for i in sequence.unsorted_indices.tolist()]
        padded = padded.index_select(1, sequence.unsorted_indices)
        lens = [lens[i] for i in order]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, _index(lens, "cpu")


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of ``(L_i, *)`` tensors (decreasing lengths unless not ``enforce_sorted``)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of ``(L_i, *)`` tensors a :class:`PackedSequence` holds, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


def pad_sequence(sequences: Sequence[Tensor] | Tensor, batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Stack variable-length tensors (L_i, *) into (L_max, B, *) or (B, L_max, *), padded with
    ``padding_value`` on ``padding_side`` ("right" or "left"); the result has the first tensor's
    dtype and device, as PyTorch's."""
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    if sequences[0].dim() == 0:
        # PyTorch's message (its slicing of the missing sequence dimension fails)
        raise RuntimeError("ArrayRef: invalid slice, N = 1; size = 0")
    if any(s.dim() == 0 for s in sequences):
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    first = sequences[0]
    max_len = max(s.shape[0] for s in sequences)
    trailing = tuple(first.shape[1:])
    padded = []
    for s in sequences:
        s = _fit_trailing(s.to(device=first.device, dtype=first.dtype), trailing)
        n = max_len - s.shape[0]
        if n:
            pad = _creation.full((n,) + trailing, padding_value, dtype=first.dtype,
                                 device=first.device)
            s = cat([s, pad] if padding_side == "right" else [pad, s], 0)
        padded.append(s)
    return stack(padded, 0 if batch_first else 1)


def _fit_trailing(seq: Tensor, trailing: tuple[int, ...]) -> Tensor:
    """``seq`` broadcast into its slot ``(len(seq), *trailing)`` of the padded batch (the
    first sequence's trailing shape), as PyTorch's copy into that slot broadcasts it: sizes 1
    and missing leading dimensions stretch, other mismatches fail with its copy's errors."""
    slot = (seq.shape[0],) + trailing
    shape = tuple(seq.shape)
    if shape == slot:
        return seq
    ndim = max(len(slot), len(shape))
    a_shape = (1,) * (ndim - len(slot)) + slot  # right-aligned, as broadcasting
    b_shape = (1,) * (ndim - len(shape)) + shape
    for i, (a, b) in enumerate(zip(a_shape, b_shape)):
        if a != b and 1 not in (a, b):
            raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b "
                               f"({b}) at non-singleton dimension {i}")
    broadcast = tuple(max(a, b) if 1 in (a, b) else a for a, b in zip(a_shape, b_shape))
    if broadcast != slot:
        raise RuntimeError(f"output with shape {list(slot)} doesn't match the broadcast shape "
                           f"{list(broadcast)}")
    aligned = b_shape[ndim - len(slot):]
    return seq.reshape(aligned).expand(slot)


def unpad_sequence(padded_sequences: Tensor, lengths: Any, batch_first: bool = False
                   ) -> list[Tensor]:
    """The list of ``(L_i, *)`` tensors of a padded batch and its ``lengths`` (the inverse of
    :func:`pad_sequence`). Unlike PyTorch's, the padded tensor is not transposed in place."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    lens = _lengths_list(lengths)
    return [padded_sequences[i, :n] for i, n in enumerate(lens)]
