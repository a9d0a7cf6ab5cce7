# Generated from notebooks/06_language_models.ipynb by tools/export.py: edit the notebook, not this file.
"""A character-level tokenizer for Python source code."""

import numpy as np

from specdec.validation import check_text, check_token_ids

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
        return [self.index.get(char, UNKNOWN) for char in check_text(text)]

    def decode(self, ids) -> str:
        return "".join(self.table[check_token_ids(ids, self.vocab_size)])
