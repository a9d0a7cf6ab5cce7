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
MAX_ARRAY_BYTES = 1 << 28  # 256 MiB per array: the bundled models' largest is under 1 MiB
MAX_CONTEXT = 4096  # a GPT's causal mask is max_context^2 floats: 64 MiB here, 6 GiB at 40,000
MAX_MODEL_BYTES = 1 << 30  # a GPT's weights, its mask and one KV cache together


def check_array_sizes(path: Path) -> None:
    """Read every array's header (not its data) and refuse one larger than MAX_ARRAY_BYTES.

    A compressed archive can hold a huge array in a few bytes; this refuses it before numpy
    allocates it.
    """
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            with archive.open(info) as member:
                try:
                    version = np.lib.format.read_magic(member)
                    fmt = np.lib.format
                    read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
                    shape, _, dtype = read(member)
                except ValueError as error:
                    raise ValueError(f"{path}: '{info.filename}' is not a readable array: {error}") from None
            size = int(np.prod(shape, dtype=np.float64)) * dtype.itemsize  # float64: no overflow for absurd shapes
            if size > MAX_ARRAY_BYTES:
                raise ValueError(
                    f"{path}: array '{info.filename.removesuffix('.npy')}' of shape {shape} would take "
                    f"{size / 2**30:.1f} GiB, more than the {MAX_ARRAY_BYTES >> 20} MiB a model array may take"
                )


def read_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of an .npz file, refusing pickled objects (loading a pickle runs code)."""
    if not path.is_file():
        raise ValueError(f"weights file not found: {path}")
    if not zipfile.is_zipfile(path):  # np.load would try to unpickle anything that is not an .npz or .npy
        raise ValueError(f"{path} is not a readable weights file (not an .npz archive: truncated or corrupt?)")
    try:
        check_array_sizes(path)
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
    if max_context > MAX_CONTEXT:
        raise ValueError(
            f"{path}: max_context {max_context} (the rows of 'wpe') is more than {MAX_CONTEXT}: its causal mask "
            f"alone would take {4 * max_context**2 / 2**30:.1f} GiB"
        )
    shapes = expected_shapes(vocab_size, max_context, d_model, n_layer)
    needed = 4 * (
        sum(int(np.prod(shape)) for shape in shapes.values()) + max_context**2 + 2 * n_layer * max_context * d_model
    )
    if needed > MAX_MODEL_BYTES:
        raise ValueError(
            f"{path}: a model of these sizes (vocab {vocab_size}, d_model {d_model}, {n_layer} layers, "
            f"max_context {max_context}) would take {needed / 2**30:.1f} GiB, more than {MAX_MODEL_BYTES >> 30} GiB"
        )
    for key, shape in shapes.items():
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
        if next_tokens.size and (int(next_tokens.min()) < 0 or int(next_tokens.max()) >= vocab):
            raise ValueError(
                f"{path}: 'next{k}' must hold token ids in [0, {vocab}), got {next_tokens.min()}..{next_tokens.max()}"
            )
        pairs = np.repeat(np.arange(contexts.size, dtype=np.int64), np.diff(offsets)) * vocab + next_tokens  # (E,)
        if np.unique(pairs).size != pairs.size:
            raise ValueError(f"{path}: 'next{k}' repeats a next token within one context (each must appear once)")
        if counts.size and int(counts.min()) < 1:
            raise ValueError(f"{path}: 'counts{k}' must be >= 1")
    return vocab


def check_ngram_rows(model: NGramModel, path: Path, samples: int = 64) -> None:
    """Rows of the loaded n-gram sum to 1: the longest contexts of the file, `samples` of them spread evenly."""
    if model.order < 2:
        rows = [model.unigram]
    else:
        k = model.order - 1
        contexts = model.tables[k][0]  # (C,) context ids, the oldest token most significant
        picks = contexts[np.linspace(0, contexts.size - 1, min(samples, contexts.size)).astype(np.int64)]
        digits = [[int(c) // model.vocab_size**i % model.vocab_size for i in reversed(range(k))] for c in picks]
        rows = [model.distribution(tuple(context)) for context in digits]  # each context, oldest token first
    sums = np.array([row.sum() for row in rows])
    worst = float(sums[np.argmax(np.abs(sums - 1))]) if sums.size else 1.0
    if abs(worst - 1) > 1e-9:
        raise ValueError(f"{path}: the n-gram's distributions must sum to 1, one sums to {worst!r}")


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
        model = NGramModel(order, vocab, arrays, name=Path(name).stem)
        check_ngram_rows(model, path)
        return model
    raise ValueError(f"{path}: unknown model kind {kind!r}")


def load_tokenizer() -> CharTokenizer:
    """The tokenizer both bundled models use."""
    return CharTokenizer()
