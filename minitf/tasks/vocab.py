"""A vocabulary: token <-> id, with the four special tokens first (ids in `minitf.tokens`).
Both tasks build theirs with it. Notebook 00 §2."""

from collections import Counter
from collections.abc import Iterable

from ..tokens import BOS_ID, EOS_ID, PAD_ID
from ..validation import require_bool, require_int_array, shorten

SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>")
_N_SPECIAL = len(SPECIAL_TOKENS)


class Vocab:
    """Token <-> id table; the four special tokens take ids 0..3, `tokens` follow in order.
    Notebook 00 §2 (tasks.SOURCE_VOCAB); notebook 09 (referent.VOCAB)."""

    def __init__(self, tokens):
        if isinstance(tokens, bytes) or not isinstance(tokens, Iterable):
            raise TypeError(f"tokens must be a list of str, got {type(tokens).__name__} "
                            f"{shorten(tokens)}")
        tokens = list(tokens)
        wrong = next((t for t in tokens if not isinstance(t, str)), None)
        if wrong is not None:
            raise TypeError(f"tokens must be a list of str; got {type(wrong).__name__} "
                            f"{shorten(wrong)} in it")
        clashes = sorted(set(tokens) & set(SPECIAL_TOKENS))
        if clashes:
            raise ValueError(f"special tokens are added automatically; remove {clashes}")
        duplicates = sorted(t for t, n in Counter(tokens).items() if n > 1)  # O(n), not O(n²)
        if duplicates:
            raise ValueError(f"duplicate tokens: {duplicates}")
        self.tokens = list(SPECIAL_TOKENS) + tokens
        self._ids = {t: i for i, t in enumerate(self.tokens)}

    def __len__(self):
        return len(self.tokens)

    def __contains__(self, token):
        return token in self._ids

    def __repr__(self):
        return f"Vocab({self.tokens[_N_SPECIAL:]!r})"

    def id(self, token):
        """The id of `token`; ValueError if it is not in the vocabulary."""
        try:
            return self._ids[token]
        except (KeyError, TypeError):
            raise ValueError(f"{token!r} is not in the vocabulary") from None

    def encode(self, tokens):
        """List of tokens -> list of ids."""
        if isinstance(tokens, str) or not isinstance(tokens, (list, tuple)):
            raise TypeError(f"tokens must be a list of tokens, got {type(tokens).__name__}")
        return [self.id(t) for t in tokens]

    def decode(self, ids, *, strip_special=True):
        """Ids (1-D) -> tokens. By default stops at <eos> and drops <pad> and <bos>;
        with ``strip_special=False`` every id becomes its token."""
        ids = require_int_array(ids, "ids")
        strip_special = require_bool(strip_special, "strip_special")
        if ids.ndim != 1:
            raise ValueError(f"ids must be a 1-D sequence, got shape {ids.shape}")
        out = []
        for i in ids.tolist():
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self):
                raise ValueError(f"id {i!r} is not in 0..{len(self) - 1}")
            if strip_special:
                if i == EOS_ID:
                    break
                if i in (PAD_ID, BOS_ID):
                    continue
            out.append(self.tokens[i])
        return out
