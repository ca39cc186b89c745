"""The tasks the course trains on, generated, never downloaded.

- `numbers`: English number words -> Chinese numerals for 0..9999, the running task
  (notebooks 00, 05–08); its names are importable from `minitf.tasks` directly.
- `referent`: what "it" refers to in the notes' sentence, learned by an encoder (notebook 09).
- `sequence`: the number task as one sequence, `<bos> words <sep> 汉字 <eos>`, for a
  decoder-only model (minitf.gpt; notebook 11).

All three build their vocabularies with `vocab.Vocab`; the special ids are `minitf.tokens`'.
"""

from ..tokens import BOS_ID, EOS_ID, PAD_ID, UNK_ID, pad
from .numbers import (
    CHARACTERS,
    DIGITS,
    MAX_NUMBER,
    NUMBER_WORDS,
    ONES,
    SOURCE_VOCAB,
    TARGET_VOCAB,
    TENS,
    UNITS,
    NumberTask,
    canonical_english,
    chinese,
    decode_source,
    decode_target,
    encode_source,
    encode_target,
    english,
    exact_match,
    make_batch,
    number_shape,
    parse_english,
    require_numbers,
    require_train_test,
    source_words,
    split,
    target_chars,
)
from .vocab import SPECIAL_TOKENS, Vocab

__all__ = [
    "BOS_ID", "CHARACTERS", "DIGITS", "EOS_ID", "MAX_NUMBER", "NUMBER_WORDS", "ONES", "PAD_ID",
    "SOURCE_VOCAB", "SPECIAL_TOKENS", "TARGET_VOCAB", "TENS", "UNITS", "UNK_ID", "NumberTask",
    "Vocab", "canonical_english", "chinese", "decode_source", "decode_target", "encode_source",
    "encode_target", "english", "exact_match", "make_batch", "number_shape", "pad",
    "parse_english", "require_numbers", "require_train_test", "source_words", "split",
    "target_chars",
]
