"""``nn.utils.rnn``: ``pad_sequence`` (and a minimal ``PackedSequence`` path for RNNs)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ... import _creation, _dtype
from ..._ops.joining import cat, stack
from ..._tensor import Tensor

__all__ = ["pad_sequence", "unpad_sequence", "PackedSequence", "pack_padded_sequence",
           "pad_packed_sequence", "pack_sequence"]


def pad_sequence(sequences: Sequence[Tensor] | Tensor, batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Stack variable-length tensors (L_i, *) into (L_max, B, *) or (B, L_max, *), padded with
    ``padding_value`` on ``padding_side`` ("right" or "left")."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    max_len = max(s.shape[0] for s in sequences)
    trailing = tuple(sequences[0].shape[1:])
    padded = []
    for s in sequences:
        n = max_len - s.shape[0]
        if n:
            pad = _creation.full((n,) + trailing, padding_value, dtype=s.dtype, device=s.device)
            s = cat([s, pad] if padding_side == "right" else [pad, s], 0)
        padded.append(s)
    return stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Any, batch_first: bool = False
                   ) -> list[Tensor]:
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    lens = lengths.tolist() if isinstance(lengths, Tensor) else list(lengths)
    return [padded_sequences[i, :int(n)] for i, n in enumerate(lens)]


class PackedSequence(NamedTuple):
    """Here a padded batch plus its lengths (``data`` is time-major padded, not packed)."""

    data: Tensor
    batch_sizes: Tensor | None = None
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None
    lengths: Any = None


def pack_padded_sequence(input: Tensor, lengths: Any, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    lens = lengths.tolist() if isinstance(lengths, Tensor) else list(lengths)
    if enforce_sorted and any(a < b for a, b in zip(lens, lens[1:])):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                           "`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                           "pack_padded_sequence and/or pack_sequence to sidestep this "
                           "requirement if you do not need ONNX exportability.")
    data = input.transpose(0, 1) if batch_first else input
    return PackedSequence(data, None, None, None, [int(n) for n in lens])


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None
                        ) -> tuple[Tensor, Tensor]:
    data = sequence.data
    lens = sequence.lengths
    T = max(lens)
    seqs = [data[:n, i] for i, n in enumerate(lens)]
    out = pad_sequence(seqs, batch_first, padding_value)
    if total_length is not None and total_length > T:
        extra = total_length - T
        shape = list(out.shape)
        shape[1 if batch_first else 0] = extra
        pad = _creation.full(tuple(shape), padding_value, dtype=out.dtype, device=out.device)
        out = cat([out, pad], 1 if batch_first else 0)
    return out, _creation.tensor(lens, dtype=_dtype.int64)
