"""Token ids every vocabulary shares, and padding a batch of id rows.

    <pad> = 0, <bos> = 1, <eos> = 2, <unk> = 3

Padding is id 0 so that `padding_mask(tokens)` finds it without being told; generation starts
from <bos> and stops at <eos>. Notebook 00 §2.
"""

import numpy as np

from .validation import require_int, require_int_array

PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3


def pad(sequences, pad_id=PAD_ID):
    """List of B 1-D int sequences -> `(B, max_len)` int64, shorter rows filled with `pad_id`.
    Notebook 00 §2."""
    if not isinstance(sequences, (list, tuple, np.ndarray)):
        raise TypeError(f"sequences must be a list of id sequences, got "
                        f"{type(sequences).__name__}")
    pad_id = require_int(pad_id, "pad_id")
    rows = [require_int_array(s, f"sequences[{i}]") for i, s in enumerate(sequences)]
    for i, row in enumerate(rows):
        if row.ndim != 1:
            raise ValueError(f"sequences[{i}] is not 1-D (shape {row.shape})")
    out = np.full((len(rows), max((len(r) for r in rows), default=0)), pad_id, dtype=np.int64)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row  # (B, max_len)
    return out
