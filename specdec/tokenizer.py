# Generated from notebooks/06_language_models.ipynb by tools/export.py: edit the notebook, not this file.
"""A character-level tokenizer for Python source code."""

import numpy as np

END = 0  # end of a file: generation stops here
UNKNOWN = 1  # any character outside the vocabulary
CHARACTERS = "\n" + "".join(chr(code) for code in range(32, 127))  # newline + printable ASCII


class CharTokenizer:
    """Maps text to token ids, one per character (0: end of file, 1: unknown, 2..: newline and printable ASCII)."""

    def __init__(self, characters: str = CHARACTERS):
        self.characters = characters
        self.vocab_size = len(characters) + 2
        self.index = {char: i + 2 for i, char in enumerate(characters)}
        self.table = np.array(["", "\ufffd", *characters])  # (V,) text of each id

    def encode(self, text: str) -> list[int]:
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return [self.index.get(char, UNKNOWN) for char in text]

    def decode(self, ids) -> str:
        ids = np.asarray(ids).reshape(-1)  # (n,)
        if ids.size and ids.dtype.kind not in "iu":  # int64 conversion would silently turn 1.7 into 1
            raise TypeError(f"token ids must be integers, got dtype {ids.dtype}")
        if ids.size and (ids.min() < 0 or ids.max() >= self.vocab_size):
            raise ValueError(f"token ids must be in [0, {self.vocab_size}), got {ids.min()}..{ids.max()}")
        return "".join(self.table[ids.astype(np.int64)])
