"""Every argument check of the package (support code: it teaches nothing by itself).

One rule everywhere: a value of the wrong *type* raises TypeError, a value of the right type
outside the allowed range raises ValueError, and both messages name the argument and say what
is allowed, so a learner never has to read a traceback from deep inside numpy. The functions the
notebooks build call one of these first, then run their algorithm: the checks are written once,
here, and the notebooks show what they refuse rather than how. The generic checks come first,
then those of each notebook's functions, in the course's order.
"""

import dataclasses
import functools
import math
import numbers
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # for the annotations only: those modules import this one
    from specdec.pipeline import SamplingParams
    from specdec.protocol import LanguageModel


def check_integer(value, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """`value` as an int, after checking it is an integer in [minimum, maximum] (None: no bound).

    Python and numpy integers are accepted (via operator.index); bools, floats, strings and
    arrays are refused with a TypeError, even when they look integral (2.0).
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be {describe_integer_range(minimum, maximum)}, got {value!r}")
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be {describe_integer_range(minimum, maximum)}, got {value!r}") from None
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise ValueError(f"{name} must be {describe_integer_range(minimum, maximum)}, got {number}")
    return number


def describe_integer_range(minimum: int | None, maximum: int | None) -> str:
    if minimum is not None and maximum is not None:
        return f"an integer in [{minimum}, {maximum}]"
    if minimum is not None:
        return f"an integer >= {minimum}"
    if maximum is not None:
        return f"an integer <= {maximum}"
    return "an integer"


def check_real(
    value,
    name: str,
    low: float = -math.inf,
    high: float = math.inf,
    *,
    low_open: bool = False,
    high_open: bool = False,
    note: str = "",
) -> float:
    """`value` as a float, after checking it is a real number between low and high.

    The interval is closed unless low_open / high_open say otherwise; an infinite bound is
    always open, so infinities are refused, and NaN is in no interval. `note` is added to the
    ValueError message to say what a special value means ("0 means greedy").
    """
    if math.isfinite(low) and high == math.inf:  # a half-line reads better as a condition
        condition = f"{'>' if low_open else '>='} {format_bound(low)}"
        type_message, value_message = f"a real number {condition}", f"finite and {condition}"
    else:
        interval = ("(" if low_open or low == -math.inf else "[") + f"{format_bound(low)}, {format_bound(high)}"
        interval += ")" if high_open or high == math.inf else "]"
        type_message, value_message = f"a real number in {interval}", f"in {interval}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {type_message}, got {value!r}")
    number = float(value)
    above_low = number > low if low_open or low == -math.inf else number >= low
    below_high = number < high if high_open or high == math.inf else number <= high
    if not (above_low and below_high):  # both False for NaN
        raise ValueError(f"{name} must be {value_message}{f' ({note})' if note else ''}, got {value!r}")
    return number


def format_bound(bound: float) -> str:
    if math.isinf(bound):
        return "inf" if bound > 0 else "-inf"
    return f"{bound:g}"


def check_generator(rng, name: str = "rng") -> np.random.Generator:
    """Refuse anything but an explicit np.random.Generator (never a seed, never the global state)."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"{name} must be a np.random.Generator (np.random.default_rng(seed)), got {type(rng).__name__}")
    return rng


def check_optional_token(token, name: str, vocab_size: int) -> int | None:
    """None, or a token id in [0, vocab_size) (text must be encoded first)."""
    if token is None:
        return None
    if isinstance(token, str):
        raise TypeError(f"{name} must be a token id (an integer) or None, got the text {token!r}: encode it first")
    return check_integer(token, name, 0, vocab_size - 1)


def as_array(value, name: str) -> np.ndarray:
    """np.asarray(value), with a message naming `name` for ragged rows (lists of different lengths)."""
    try:
        return np.asarray(value)
    except ValueError as error:
        if "inhomogeneous" not in str(error) and "sequence" not in str(error):
            raise
        raise ValueError(
            f"{name} must be a rectangular array (every row the same length), got rows of different lengths"
        ) from None


# --- Logits and temperature (notebook 01) -----------------------------------------------------


def describe_row(index: tuple, ndim: int) -> str:
    """Name a row of a batch for an error message: '' for a single row, ' in row (2, 5)' otherwise."""
    if ndim == 1:
        return ""
    return f" in row {index[0] if len(index) == 1 else index}"


def maxima_are_finite(row_max: np.ndarray) -> bool:
    """Whether every row of some logits is valid, from the rows' maxima: a row's max is NaN or +inf if the
    row holds one, -inf if the row is all -inf. Read as Python floats: no overflow, no warning, and for the
    few rows of a decoding step cheaper than np.isfinite(row_max).all()."""
    return all(map(math.isfinite, row_max.ravel().tolist()))


def check_logits(logits, name: str = "logits") -> np.ndarray:
    """Return `logits` as an array after checking it can define a distribution.

    Logits are real numbers with the vocabulary on the last axis. -inf is allowed (it means
    "probability zero"), but NaN and +inf are not, and a row that is entirely -inf has no
    token left to draw, so each of those raises a ValueError that says which row.
    """
    arr = as_array(logits, name)  # ragged rows get a message naming the argument, not numpy's
    if arr.dtype.kind not in "fiu":  # float, signed or unsigned int; not bool, complex, text or objects
        raise TypeError(f"{name} must be an array of real numbers, got dtype {arr.dtype}")
    if arr.ndim == 0:
        raise ValueError(f"{name} must have a vocabulary axis, got a scalar")
    if arr.shape[-1] == 0:
        raise ValueError(f"{name} has an empty vocabulary axis (shape {arr.shape})")
    if not maxima_are_finite(arr.max(axis=-1)):  # one cheap pass; diagnose only when something is wrong
        for index in np.ndindex(arr.shape[:-1]):
            row = arr[index]  # (V,)
            where = describe_row(index, arr.ndim)
            if np.isnan(row).any():
                raise ValueError(f"{name} contains NaN{where}")
            if (row == np.inf).any():
                raise ValueError(f"{name} contains +inf{where}")
            if (row == -np.inf).all():
                raise ValueError(f"{name} is entirely -inf{where}: no token is left to draw")
    return arr


def check_temperature(temperature) -> float:
    """Return `temperature` as a float after checking it is a finite number >= 0 (0 means greedy)."""
    return check_real(temperature, "temperature", 0, note="0 means greedy")


def vocabulary_last(logits, axis: int) -> np.ndarray:
    """Move the vocabulary `axis` of `logits` to the end, with a clear error for a bad axis."""
    arr = as_array(logits, "logits")
    if arr.ndim == 0:
        raise ValueError("logits must have a vocabulary axis, got a scalar")
    if not -arr.ndim <= axis < arr.ndim:
        raise ValueError(f"axis {axis} is out of range for logits of shape {arr.shape}")
    return np.moveaxis(arr, axis, -1)


# --- Generators and distributions (notebook 02) -----------------------------------------------


def check_rng(rng) -> np.random.Generator:
    """Refuse anything but an explicit np.random.Generator (never a seed, never the global random state)."""
    return check_generator(rng, "rng")


def check_probs(probs, name: str = "probs") -> np.ndarray:
    """Return `probs` as float64 after checking each row is a distribution.

    Every entry must be >= 0 and not NaN, and each row must sum to 1 within 1e-6
    (1e-4 for float32 or lower precision input, whose rounding is coarser).
    """
    arr = as_array(probs, name)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.number) or np.iscomplexobj(arr):
        raise TypeError(f"{name} must be an array of real numbers, got dtype {arr.dtype}")
    if arr.ndim == 0 or arr.shape[-1] == 0:
        raise ValueError(f"{name} needs a non-empty vocabulary axis, got shape {arr.shape}")
    low_precision = np.issubdtype(arr.dtype, np.floating) and np.finfo(arr.dtype).bits < 64
    tolerance = 1e-4 if low_precision else 1e-6
    arr = arr.astype(np.float64, copy=False)
    row_min = arr.min(axis=-1)  # (...,) NaN propagates
    row_sum = arr.sum(axis=-1)  # (...,)
    bad = ~(row_min >= 0) | ~(np.abs(row_sum - 1.0) <= tolerance)  # (...,) catches NaN too
    if bad.any():
        index = np.argwhere(np.atleast_1d(bad))[0]
        where = "" if arr.ndim == 1 else f" in row {tuple(int(i) for i in index)}"
        value_min, value_sum = np.atleast_1d(row_min)[tuple(index)], np.atleast_1d(row_sum)[tuple(index)]
        if np.isnan(value_min):
            raise ValueError(f"{name} contains NaN{where}")
        if value_min < 0:
            raise ValueError(f"{name} contains a negative probability ({value_min:g}){where}")
        raise ValueError(
            f"{name} must sum to 1 (within {tolerance:g}) along the last axis, got {float(value_sum)!r}{where}"
        )
    return arr


# --- Counts (notebook 03) ---------------------------------------------------------------------


def check_count(value, name: str) -> int:
    """Return `value` as an int after checking it is an integer >= 1 (numpy ints welcome; bools, floats not)."""
    return check_integer(value, name, minimum=1)


# --- Top-p (notebook 04) ----------------------------------------------------------------------


def check_top_p(p, name: str = "p") -> float:
    """Return `p` as a float after checking 0 < p <= 1 (NaN refused; 1 disables the filter)."""
    return check_real(p, name, 0, 1, low_open=True, note="1 disables the filter")


# --- Sampling parameters (notebook 05) --------------------------------------------------------


def check_min_p(min_p) -> float:
    """Return `min_p` as a float after checking 0 <= min_p <= 1 (0 disables the filter)."""
    return check_real(min_p, "min_p", 0, 1, note="0 disables it")


SAMPLING_FIELDS = ("temperature", "top_k", "top_p", "min_p")


@functools.cache
def sampling_params_class() -> type:
    """specdec.pipeline.SamplingParams, imported once, on first use (pipeline.py imports this module).

    An import statement inside check_params would cost about 0.4 µs per call, on decoding's hot path.
    """
    from specdec.pipeline import SamplingParams

    return SamplingParams


def check_params(params) -> "SamplingParams":
    """params must be a SamplingParams (notebook 05), which validated its fields when it was made.

    The package's class, or the one notebook 05 defines in its own cells before it is exported (a
    dataclass of that name with the same fields): the checks run when either is made.
    """
    if type(params) is sampling_params_class():  # the usual case, decided without reading the fields
        return params
    fields = tuple(field.name for field in dataclasses.fields(params)) if dataclasses.is_dataclass(params) else ()
    notebooks = type(params).__name__ == "SamplingParams" and fields == SAMPLING_FIELDS
    if not (isinstance(params, sampling_params_class()) or notebooks):
        raise TypeError(f"params must be a SamplingParams, got {type(params).__name__}")
    return params


# --- Language models and generation (notebook 06) ---------------------------------------------


def check_text(text) -> str:
    """Text to encode: a str (bytes or a list of characters would encode to nonsense)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return text


def check_token_ids(ids, vocab_size: int) -> np.ndarray:
    """Token ids to decode as a 1-D int64 array (empty allowed), after checking each is an integer in [0, V)."""
    array = np.asarray(ids).reshape(-1)  # (n,)
    if array.size and array.dtype.kind not in "iu":  # int64 conversion would silently turn 1.7 into 1
        raise TypeError(f"token ids must be integers, got dtype {array.dtype}")
    if array.size and (array.min() < 0 or array.max() >= vocab_size):
        raise ValueError(f"token ids must be in [0, {vocab_size}), got {array.min()}..{array.max()}")
    return array.astype(np.int64)  # (n,)


def check_score(tokens, state, state_type: type, model, name: str = "state") -> np.ndarray:
    """score(tokens, state)'s arguments: the tokens as a 1-D int64 array, after checking them (check_new_tokens),
    that `state` is a `state_type` from this model's start() (a state that records its model must record this
    one), and that the tokens fit: tokens seen + new <= max_context."""
    if not isinstance(state, state_type) or getattr(state, "model", model) is not model:
        raise TypeError(
            f"{name} must be this model's {state_type.__name__}, from its start(); got {type(state).__name__}"
        )
    tokens = check_new_tokens(tokens, model.vocab_size)  # (n,)
    if state.length + tokens.size > model.max_context:
        raise ValueError(
            f"context overflow: {state.length} tokens seen + {tokens.size} new > max_context {model.max_context}"
        )
    return tokens


def check_new_tokens(tokens, vocab_size: int) -> np.ndarray:
    """The tokens to score as a 1-D int64 array, after checking there is at least one and each is in [0, V)."""
    if type(tokens) is list and tokens and all(type(token) is int for token in tokens):  # decoding's case
        if min(tokens) < 0 or max(tokens) >= vocab_size:  # on Python ints: faster than two array reductions
            raise ValueError(f"token ids must be in [0, {vocab_size}), got {min(tokens)}..{max(tokens)}")
        return np.array(tokens, dtype=np.int64)  # (n,)
    array = as_array(tokens, "tokens")
    if array.size == 0:
        raise ValueError("score needs at least one token")
    if array.dtype.kind not in "iu":
        raise TypeError(f"tokens must be integer token ids, got dtype {array.dtype}")
    array = array.astype(np.int64, copy=False).reshape(-1)  # (n,)
    if array.min() < 0 or array.max() >= vocab_size:
        raise ValueError(f"token ids must be in [0, {vocab_size}), got {array.min()}..{array.max()}")
    return array


def check_rollback(length, seen: int) -> int:
    """The length to roll back to, after checking 0 <= length <= seen: a rollback can only forget."""
    if type(length) is int and 0 <= length <= seen:  # every round's case, without building a message
        return length
    return check_integer(length, f"rollback length (tokens seen: {seen})", 0, seen)


def check_scores(logits, model, n_tokens: int, name: str = "model") -> np.ndarray:
    """What `model.score` returned for `n_tokens` tokens, checked before anything reads it.

    Logits of shape (n_tokens, vocab_size), one row per token scored and one column per token of
    the vocabulary, with no NaN or +inf and no row entirely -inf (check_logits). A model that
    returns one column too many would otherwise let a generator emit a token outside the
    vocabulary, and a NaN would make greedy decoding's argmax silently pick token 0.
    """
    arr = logits if isinstance(logits, np.ndarray) else as_array(logits, f"{name}.score's logits")
    if arr.shape != (n_tokens, model.vocab_size):
        raise ValueError(
            f"{name}.score must return logits of shape (tokens scored, vocab_size) = "
            f"({n_tokens}, {model.vocab_size}) for {model.name}, got {arr.shape}"
        )
    if arr.dtype.kind == "f":  # the hot path: one pass, then explain only if something is wrong
        if maxima_are_finite(arr.max(axis=-1)):
            return arr
    return check_logits(arr, f"{name}.score's logits")  # integers, or a bad row: it says which


def check_on_round(on_round) -> Callable[[np.ndarray], object] | None:
    """on_round is None or a function of one argument, the new tokens of a round."""
    if on_round is not None and not callable(on_round):
        raise TypeError(f"on_round must be a function of the new tokens (an array), or None, got {on_round!r}")
    return on_round


def check_model(model, name: str = "model") -> "LanguageModel":
    """Refuse anything that does not follow the LanguageModel protocol (start, score, vocab_size, max_context, name)."""
    from specdec.protocol import LanguageModel  # here, not at the top: protocol.py imports this module

    if not isinstance(model, LanguageModel):
        raise TypeError(
            f"{name} must be a language model (start(), score(tokens, state), vocab_size, max_context, name),"
            f" got {type(model).__name__}: load one with specdec.load_model()"
        )
    return model


def check_prompt(prompt_tokens, model, name: str = "prompt_tokens") -> np.ndarray:
    """Return the prompt as an int64 array after checking it is a non-empty list of valid token ids."""
    if isinstance(prompt_tokens, str):
        raise TypeError(
            f"{name} must be token ids, got the text {prompt_tokens[:30]!r}: encode it first,"
            " for example specdec.load_tokenizer().encode(text)"
        )
    prompt = as_array(prompt_tokens, name)
    if prompt.ndim != 1 or prompt.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of token ids, got shape {prompt.shape}")
    if prompt.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer token ids, got dtype {prompt.dtype}")
    if prompt.min() < 0 or prompt.max() >= model.vocab_size:
        raise ValueError(
            f"{name} must be token ids in [0, {model.vocab_size}) for {model.name}, got {prompt.min()}..{prompt.max()}"
        )
    return prompt.astype(np.int64)


def check_max_new_tokens(max_new_tokens) -> int:
    return check_integer(max_new_tokens, "max_new_tokens", minimum=0)


def check_sampling_rng(rng, params: "SamplingParams") -> np.random.Generator | None:
    """Greedy decoding draws nothing, so rng may be None; otherwise it must be a np.random.Generator."""
    if rng is None and not params.greedy:
        raise TypeError("rng must be a np.random.Generator when temperature > 0, got None")
    return None if rng is None else check_rng(rng)


def check_room(model, prompt_size: int, max_new_tokens: int) -> None:
    """Every token but the last generated one passes through the model: it must fit its context."""
    needed = prompt_size + max(0, max_new_tokens - 1)
    if needed > model.max_context:
        raise ValueError(
            f"prompt ({prompt_size} tokens) + max_new_tokens ({max_new_tokens}) needs {needed} positions, "
            f"more than {model.name}'s max_context {model.max_context}"
        )


def check_generate(model, prompt_tokens, max_new_tokens, params, rng, end_token, on_round) -> tuple:
    """generate's arguments, each checked: (model, prompt as int64, max_new_tokens, params, rng, end_token, on_round).

    The prompt and max_new_tokens must fit the model's context (check_room); rng may be None only
    for greedy decoding.
    """
    model = check_model(model)
    prompt = check_prompt(prompt_tokens, model)
    max_new_tokens = check_max_new_tokens(max_new_tokens)
    params = check_params(params)
    rng = check_sampling_rng(rng, params)
    end_token = check_optional_token(end_token, "end_token", model.vocab_size)
    check_room(model, prompt.size, max_new_tokens)
    return model, prompt, max_new_tokens, params, rng, end_token, check_on_round(on_round)


# --- The cost model (notebook 07) -------------------------------------------------------------


def check_scoring(model, n_values, repeats, context, number) -> tuple[list[int], int, int, int]:
    """time_scoring's arguments: (distinct n >= 1, repeats >= 1, context >= 0, number >= 1), after checking
    that `context` random tokens plus the largest n fit the model's max_context."""
    n_values = [check_count(n, "each n") for n in n_values]
    if not n_values or len(set(n_values)) != len(n_values):
        raise ValueError(f"n_values must be distinct integers >= 1, got {n_values}")
    repeats, number = check_count(repeats, "repeats"), check_count(number, "number")
    context, most = check_integer(context, "context", minimum=0), max(n_values)
    if context + most > model.max_context:
        raise ValueError(
            f"context {context} + n up to {most} is more than {model.name}'s max_context {model.max_context}"
        )
    return n_values, repeats, context, number


def check_times(times):
    """Median seconds by n for cost_ratios: n = 1 (the unit) present, every time positive and finite."""
    if 1 not in times:
        raise ValueError(f"times must include n = 1 (the unit), got n = {sorted(times)}")
    if not all(math.isfinite(t) and t > 0 for t in times.values()):
        raise ValueError(f"times must be positive and finite, got {dict(times)}")
    return times


def check_alpha(alpha) -> float:
    """Return the acceptance rate `alpha` as a float after checking it is a number in [0, 1]."""
    return check_real(alpha, "alpha", 0, 1)


# --- Speculative decoding (notebook 08) -------------------------------------------------------


def check_gamma(gamma) -> int | str:
    """gamma is a number of drafts per round (an integer >= 1) or "auto" (decided round by round)."""
    message = f'gamma must be an integer >= 1 or "auto", got {gamma!r}'
    if isinstance(gamma, str):
        if gamma != "auto":
            raise ValueError(message)
        return gamma
    try:
        return check_integer(gamma, "gamma", minimum=1)
    except (TypeError, ValueError) as error:  # the same message, "auto" included, whatever is wrong
        raise type(error)(message) from None


VERIFY_RULES = ("token", "block")  # how a sampled round is verified: notebook 09's rule, or notebook 11's


def check_verify(verify) -> str:
    """verify names a verification rule: "token" or "block"."""
    if not isinstance(verify, str) or verify not in VERIFY_RULES:
        raise ValueError(f'verify must be "token" or "block", got {verify!r}')
    return verify


def check_speculative(
    target, draft, prompt_tokens, max_new_tokens, params, gamma, rng, end_token, verify, on_round
) -> tuple:
    """speculative_generate's arguments, each checked, in its order (the prompt as int64, the verify rule).

    As check_generate for the target, and: the draft must be a language model with the target's
    vocabulary, and the prompt and max_new_tokens must fit its context too.
    """
    target, draft = check_model(target, "target"), check_model(draft, "draft")
    if target.vocab_size != draft.vocab_size:
        raise ValueError(
            f"target and draft must share a vocabulary: vocab_size {target.vocab_size} vs {draft.vocab_size}"
        )
    _, prompt, max_new_tokens, params, rng, end_token, on_round = check_generate(
        target, prompt_tokens, max_new_tokens, params, rng, end_token, on_round
    )
    check_room(draft, prompt.size, max_new_tokens)
    return (
        target,
        draft,
        prompt,
        max_new_tokens,
        params,
        check_gamma(gamma),
        rng,
        end_token,
        check_verify(verify),
        on_round,
    )


# --- A verification round (notebook 09) -------------------------------------------------------


def check_pair(p, q) -> tuple[np.ndarray, np.ndarray]:
    """Two distributions over the same vocabulary, as float64 arrays of the same shape (check_probs each)."""
    p, q = check_probs(p, "p"), check_probs(q, "q")
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same shape, got {p.shape} and {q.shape}")
    return p, q


def check_round(draft_tokens, draft_probs, target_probs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The checks of a verification round: (tokens int64 (gamma,), q (gamma, V), p (gamma + 1, V)), float64.

    Each message names the argument and what it must be: one row of q per draft, one more row of p,
    integer ids inside the vocabulary, each drafted token possible under the row it was drawn from.
    """
    q = check_probs(draft_probs, "draft_probs")
    p = check_probs(target_probs, "target_probs")
    tokens = as_array(draft_tokens, "draft_tokens")
    if tokens.ndim != 1:
        raise ValueError(f"draft_tokens must be a 1-D array of token ids, got shape {tokens.shape}")
    if tokens.size == 0:
        tokens = tokens.astype(np.int64)  # no drafts (gamma = 0): np.asarray([]) is float64, but nothing is wrong
    if tokens.dtype.kind not in "iu":
        raise TypeError(f"draft_tokens must hold integer token ids, got dtype {tokens.dtype}")
    gamma = tokens.size
    if q.shape[0] != gamma or q.ndim != 2:
        raise ValueError(f"draft_probs must have one row per draft token: shape ({gamma}, V), got {q.shape}")
    if p.shape != (gamma + 1, q.shape[1]):
        raise ValueError(f"target_probs must have shape (gamma + 1, V) = {(gamma + 1, q.shape[1])}, got {p.shape}")
    if gamma and (tokens.min() < 0 or tokens.max() >= q.shape[1]):
        raise ValueError(f"draft_tokens must be in [0, {q.shape[1]}), got {tokens.min()}..{tokens.max()}")
    rows = np.arange(gamma)  # (gamma,)
    q_drafted = q[rows, tokens]  # (gamma,) q_i(x_i)
    if (q_drafted <= 0).any():
        i = int(np.argmax(q_drafted <= 0))
        raise ValueError(
            f"draft token {i} ({tokens[i]}) has probability 0 under draft_probs row {i}: not drawn from it"
        )
    return tokens.astype(np.int64), q, p


# --- Many texts at once (notebook 12) ---------------------------------------------------------


def one_batch(states, row_type: type) -> bool:
    """True when `states` are distinct rows (`row_type`, with .batch and .slot) of one batch: one call can score them.

    Anything else (other states, rows of two batches) is scored row by row; the same row twice is refused,
    since its tokens would be appended twice.
    """
    if not states or not all(isinstance(state, row_type) for state in states):
        return False
    if any(state.batch is not states[0].batch for state in states):
        return False
    slots = [state.slot for state in states]
    if len(set(slots)) != len(slots):
        twice = next(slot for slot in slots if slots.count(slot) > 1)
        raise ValueError(f"states must be distinct rows of the batch: row {twice} appears more than once")
    return True


def check_prompts(prompts, model) -> list[np.ndarray]:
    """A non-empty list of prompts, each checked by check_prompt (the message names prompts[i])."""
    if isinstance(prompts, str | np.ndarray) or not isinstance(prompts, list | tuple) or not prompts:
        raise TypeError(
            f"prompts must be a non-empty list of prompts (each a list of token ids), got {type(prompts).__name__}"
        )
    return [check_prompt(prompt, model, f"prompts[{i}]") for i, prompt in enumerate(prompts)]


def check_rngs(rngs, params: "SamplingParams", rows: int) -> list:
    """One distinct np.random.Generator per row (None for greedy decoding, which draws nothing).

    Two rows sharing a generator would each draw what the other would have drawn alone: no row would be
    the text it is alone with that generator.
    """
    if rngs is None and params.greedy:
        return [None] * rows
    if not isinstance(rngs, list | tuple) or len(rngs) != rows:
        raise TypeError(
            f"rngs must be a list of {rows} np.random.Generator objects, one per prompt, got {type(rngs).__name__}"
            + (f" of length {len(rngs)}" if isinstance(rngs, list | tuple) else "")
        )
    rngs = [check_sampling_rng(rng, params) for rng in rngs]
    seen = {}
    for i, rng in enumerate(rngs):
        if rng is not None and id(rng) in seen:
            raise ValueError(f"rngs[{seen[id(rng)]}] and rngs[{i}] are the same generator: give each row its own")
        seen[id(rng)] = i
    return rngs


def check_generate_batch(model, prompts, max_new_tokens, params, rngs, end_token) -> tuple:
    """generate_batch's arguments, each checked as generate checks them: (model, prompts int64, ..., end_token)."""
    model = check_model(model)
    prompts = check_prompts(prompts, model)
    max_new_tokens = check_max_new_tokens(max_new_tokens)
    params = check_params(params)
    rngs = check_rngs(rngs, params, len(prompts))
    end_token = check_optional_token(end_token, "end_token", model.vocab_size)
    check_room(model, max(prompt.size for prompt in prompts), max_new_tokens)
    return model, prompts, max_new_tokens, params, rngs, end_token


def check_speculative_batch(target, draft, prompts, max_new_tokens, params, gamma, rngs, end_token, verify) -> tuple:
    """speculative_generate_batch's arguments, as check_speculative checks them, with one prompt and rng per row."""
    draft = check_model(draft, "draft")
    target, prompts, max_new_tokens, params, rngs, end_token = check_generate_batch(
        target, prompts, max_new_tokens, params, rngs, end_token
    )
    if target.vocab_size != draft.vocab_size:
        raise ValueError(
            f"target and draft must share a vocabulary: vocab_size {target.vocab_size} vs {draft.vocab_size}"
        )
    check_room(draft, max(prompt.size for prompt in prompts), max_new_tokens)
    return target, draft, prompts, max_new_tokens, params, check_gamma(gamma), rngs, end_token, check_verify(verify)


def check_time_batch(model, batch_sizes, n_values, context, repeats) -> tuple:
    """time_batch's arguments: distinct batch sizes and n (each >= 1), context >= 1 that fits with the largest n,
    and repeats >= 1; returned in that order."""
    batch_sizes = [check_count(b, "each batch size") for b in batch_sizes]
    n_values = [check_count(n, "each n") for n in n_values]
    for name, values in (("batch_sizes", batch_sizes), ("n_values", n_values)):
        if not values or len(set(values)) != len(values):
            raise ValueError(f"{name} must be distinct integers >= 1, got {values}")
    context = check_integer(context, "context", minimum=1)
    if context + max(n_values) > model.max_context:
        raise ValueError(
            f"context {context} + n up to {max(n_values)} is more than {model.name}'s max_context {model.max_context}"
        )
    return batch_sizes, n_values, context, check_count(repeats, "repeats")
