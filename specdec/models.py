"""Loading the bundled models and the tokenizer by name (support code)."""

import zipfile
from os import PathLike
from pathlib import Path

import numpy as np

from specdec.gpt import GPT, expected_shapes
from specdec.ngram import NGramModel
from specdec.protocol import LanguageModel
from specdec.tokenizer import CharTokenizer

WEIGHTS = Path(__file__).resolve().parent / "weights"
BUNDLED = {"target": WEIGHTS / "target.npz", "draft": WEIGHTS / "draft.npz"}


def read_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of an .npz file, refusing pickled objects (loading a pickle runs code)."""
    if not path.is_file():
        raise ValueError(f"weights file not found: {path}")
    if not zipfile.is_zipfile(path):  # np.load would try to unpickle anything that is not an .npz or .npy
        raise ValueError(f"{path} is not a readable weights file (not an .npz archive: truncated or corrupt?)")
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {key: archive[key] for key in archive.files}
    except ValueError as error:  # numpy's message for object arrays when allow_pickle=False
        if "allow_pickle" in str(error):
            raise ValueError(f"{path} contains pickled objects; refusing to load them") from None
        raise ValueError(f"{path} is not a readable weights file: {error}") from None
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        raise ValueError(f"{path} is not a readable weights file (truncated or corrupt?): {error}") from None


def scalar(arrays: dict[str, np.ndarray], key: str, path: Path):
    if key not in arrays or arrays[key].shape != ():
        raise ValueError(f"{path}: missing scalar '{key}'")
    return arrays[key].item()


def positive_int(arrays: dict[str, np.ndarray], key: str, path: Path) -> int:
    value = scalar(arrays, key, path)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{path}: '{key}' must be an integer >= 1, got {value!r}")
    return value


def gpt_from_arrays(arrays: dict[str, np.ndarray], path: Path, name: str) -> GPT:
    """Check every array is present with the right shape, then build the model."""
    n_head, n_layer = positive_int(arrays, "n_head", path), positive_int(arrays, "n_layer", path)
    if f"h{n_layer}.ln1.gain" in arrays:
        raise ValueError(f"{path}: holds more layers than n_layer = {n_layer}")
    if "wte" not in arrays or "wpe" not in arrays or arrays["wte"].ndim != 2 or arrays["wpe"].ndim != 2:
        raise ValueError(f"{path}: missing or misshaped embedding arrays 'wte' / 'wpe'")
    (vocab_size, d_model), max_context = arrays["wte"].shape, arrays["wpe"].shape[0]
    if d_model % n_head:
        raise ValueError(f"{path}: d_model {d_model} is not a multiple of n_head {n_head}")
    for key, shape in expected_shapes(vocab_size, max_context, d_model, n_layer).items():
        if key not in arrays:
            raise ValueError(f"{path}: missing array '{key}'")
        if arrays[key].shape != shape:
            raise ValueError(f"{path}: array '{key}' has shape {arrays[key].shape}, expected {shape}")
        if arrays[key].dtype.kind != "f" or not np.isfinite(arrays[key]).all():
            raise ValueError(f"{path}: array '{key}' must hold finite floats")
    weights = {key: arrays[key] for key in expected_shapes(vocab_size, max_context, d_model, n_layer)}
    return GPT(weights, n_head=n_head, name=name)


def check_ngram_arrays(arrays: dict[str, np.ndarray], order: int, path: Path) -> int:
    """Check an n-gram file as strictly as a GPT file: every table present, well-formed and in range.

    Returns the vocabulary size (the length of the unigram distribution). Without these checks a
    corrupt file would load and then fail, or silently give wrong probabilities, deep inside score.
    """
    unigram = arrays.get("unigram")
    if unigram is None or unigram.ndim != 1 or unigram.size < 2 or unigram.dtype.kind != "f":
        raise ValueError(f"{path}: missing or misshaped array 'unigram' (a float vector of the vocabulary size)")
    if not np.isfinite(unigram).all() or (unigram <= 0).any() or abs(float(unigram.sum()) - 1) > 1e-6:
        raise ValueError(f"{path}: 'unigram' must hold positive finite probabilities that sum to 1")
    vocab = unigram.size
    for k in range(1, order):
        names = [f"{table}{k}" for table in ("contexts", "offsets", "next", "counts")]
        for key in names:
            if key not in arrays:
                raise ValueError(f"{path}: missing array '{key}'")
            if arrays[key].ndim != 1 or arrays[key].dtype.kind not in "iu":
                raise ValueError(f"{path}: array '{key}' must be a 1-D integer array")
        contexts, offsets, next_tokens, counts = (arrays[key] for key in names)
        if offsets.size != contexts.size + 1 or next_tokens.size != counts.size:
            raise ValueError(f"{path}: tables of order {k + 1} disagree in size (contexts, offsets, next, counts)")
        if offsets[0] != 0 or offsets[-1] != next_tokens.size or (np.diff(offsets) <= 0).any():
            raise ValueError(f"{path}: 'offsets{k}' must rise strictly from 0 to the number of (context, next) pairs")
        if contexts.size and (contexts[0] < 0 or contexts[-1] >= vocab**k or (np.diff(contexts) <= 0).any()):
            raise ValueError(f"{path}: 'contexts{k}' must be sorted distinct context ids in [0, {vocab}**{k})")
        if next_tokens.size and int(next_tokens.max()) >= vocab:
            raise ValueError(f"{path}: 'next{k}' holds a token id >= vocab_size {vocab}")
        if counts.size and int(counts.min()) < 1:
            raise ValueError(f"{path}: 'counts{k}' must be >= 1")
    return vocab


def load_model(name: str = "target") -> LanguageModel:
    """A bundled model by name ("target" or "draft"), or a model from a path to an .npz file."""
    if not isinstance(name, (str, PathLike)):
        raise TypeError(f"name must be one of {sorted(BUNDLED)} or a path to an .npz file, got {name!r}")
    path = BUNDLED.get(name, Path(name))
    if name not in BUNDLED and path.suffix != ".npz":
        raise ValueError(f"name must be one of {sorted(BUNDLED)} or a path to an .npz file, got {name!r}")
    arrays = read_npz(path)
    kind = str(scalar(arrays, "kind", path))
    if kind == "gpt":
        return gpt_from_arrays(arrays, path, name=Path(name).stem)
    if kind == "ngram":
        order = positive_int(arrays, "order", path)
        vocab = check_ngram_arrays(arrays, order, path)
        return NGramModel(order, vocab, arrays, name=Path(name).stem)
    raise ValueError(f"{path}: unknown model kind {kind!r}")


def load_tokenizer() -> CharTokenizer:
    """The tokenizer both bundled models use."""
    return CharTokenizer()
