"""Argument checks shared by the whole package (support code: it teaches nothing by itself).

One rule everywhere: a value of the wrong *type* raises TypeError, a value of the right type
outside the allowed range raises ValueError, and both messages name the argument and say what
is allowed, so a learner never has to read a traceback from deep inside numpy.
"""

import math
import numbers
import operator

import numpy as np


def check_integer(value, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """`value` as an int, after checking it is an integer in [minimum, maximum] (None: no bound).

    Python and numpy integers are accepted (via operator.index); bools, floats, strings and
    arrays are refused with a TypeError, even when they look integral (2.0).
    """
    allowed = describe_integer_range(minimum, maximum)
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be {allowed}, got {value!r}")
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be {allowed}, got {value!r}") from None
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise ValueError(f"{name} must be {allowed}, got {number}")
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
