"""Checkers for the exercises in notebooks/01_logits_softmax_temperature.ipynb (support code)."""

import numpy as np

import specdec
import specdec.logits
import specdec.validation
from checkers import attempt, located, namesakes, result_problem, show, verdict, without_input
from specdec.logits import log_softmax, softmax

INF = np.inf
NAN = np.nan


TOLERANCE = {"float64": (1e-9, 1e-12), "loose": (1e-6, 1e-9)}  # (rtol, atol): float64 digits, or about 6


def close(got, expected, tolerance: str = "loose") -> bool:
    """Same shape and the same numbers to the tolerance's digits (the dtype is checked apart)."""
    try:
        got = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    rtol, atol = TOLERANCE[tolerance]
    return got.shape == np.shape(expected) and bool(np.allclose(got, expected, rtol=rtol, atol=atol))


def show_difference(got, expected) -> tuple[str, str, str]:
    """expected and got as text; with more digits, and the gap, when 6 decimals would print them alike."""
    if isinstance(got, np.generic):
        got = np.asarray(got)  # np.float64(nan) prints as nan
    try:
        values = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return show(expected), show(got), ""
    if values.shape != np.shape(expected):
        return show(expected), show(got), ""
    with np.errstate(invalid="ignore"):  # inf - inf: those entries are equal, and counted as no gap
        same = (values == expected) | (np.isnan(values) & np.isnan(expected))
        gap = np.where(same, 0.0, np.abs(values - expected))  # (...,) NaN where only one side is NaN
    if not (gap < 1e-6).all():
        return show(expected), show(got), ""
    with np.printoptions(formatter={"float_kind": "{:.10g}".format}):
        digits = [np.array2string(np.asarray(v, dtype=np.float64), separator=", ") for v in (expected, got)]
    return *digits, f" (they differ by {gap.max():.1e}, too little to show at 6 decimals)"


def describe(args: tuple, noun: str = "logits") -> str:
    """show(args), plus the dtype of any array that is not float64 (float16 overflows where float64 does not)."""
    dtypes = [str(a.dtype) for a in args if isinstance(a, np.ndarray) and a.dtype != np.float64]
    return show(args) + (f" with {', '.join(dtypes)} {noun}" if dtypes else "")


def attempt_on(fn, args: tuple, refused: dict) -> tuple[object, str | None]:
    """Call the learner's function under the course's policy (checkers.attempt): result, or what went wrong.

    An overflow in (x - m) / T at a subnormal T is right (exp then gives 0), so numpy's warning is
    silenced; a function that changes the caller's array, or calls a refused package function, is
    refused by name. An exception is said without its input (the caller places the input after it).
    """
    with np.errstate(over="ignore"):
        outcome = attempt(fn, args, refused=refused, why=NUMPY_ONLY)
    if outcome.failure is not None and outcome.failure.startswith("raised"):
        return None, without_input(outcome.failure)
    return outcome.result, outcome.failure


NUMPY_ONLY = "a function of the package, and this exercise asks for numpy, without the package's functions"


def first_wrong(
    fn, cases, expected, *, what: str, float64: bool, refused: dict, per: str = "token", validates: bool = False
) -> str | None:
    """The first case where fn disagrees with the expected answer, diagnosis first; None when all agree.

    `expected` holds the reference's answers, computed before the check. A list for an array, a dtype
    other than float64 (when float64=True) or a shape other than the reference's is said first, in
    words; then the values: the likeliest mistake when the result is what that mistake gives (see
    `mistake`), which rows of a batch are wrong, and more digits when 6 decimals would print them
    alike. `per` says what one value is (one probability per token; one entropy per row).
    `validates`: the exercise refuses bad input, so a ValueError on a valid case is named as such.
    """
    for args, answer in zip(cases, expected, strict=True):
        got, error = attempt_on(fn, args, refused)
        where = f"for input {describe(args)}"
        if error is not None:
            if not error.startswith("raised"):
                return error  # a policy failure (an input changed in place, a call to the package): said already
            return located(raised_problem(error, args, validates), where)
        asked = answer
        if not float64 and isinstance(got, (np.ndarray, np.generic)) and got.dtype.kind == "f":
            asked = answer.astype(got.dtype)  # any float dtype will do here
        kind = result_problem(got, asked, what, shape=False)
        if kind is None and np.shape(got) != answer.shape:
            return located(shape_problem(np.shape(got), answer.shape, np.shape(args[0]), what, per), where)
        if not close(got, answer, "float64" if float64 else "loose"):
            shown_answer, shown_got, gap = show_difference(got, answer)
            wrong = value_problem(got, answer, what, float64, per)
            if per == "token" and "float64 precision" not in wrong:
                wrong = mistake(args, got, answer, log=what.startswith("log")) or wrong
                rows = rows_said(got, answer)
                wrong = f"{wrong}. {rows[0].upper()}{rows[1:]}" if rows else wrong
            if kind is not None:  # the dtype first; the values' problem after, unless float32 digits are all it is
                wrong = kind if "float64 precision" in wrong else f"{kind}; and {wrong.replace('your function', 'it')}"
            return located(wrong, f"{where} expected {shown_answer}, got {shown_got}{gap}")
        if kind is not None:
            said = "values are right" in kind  # result_problem may have said so already
            return located(kind if said else f"{kind}; the values themselves are right", where)
    return None


def shape_problem(got: tuple, asked: tuple, given: tuple, what: str, per: str) -> str:
    """What a result of the wrong shape says about the code that made it, the mistake named first.

    For one value per row (an entropy): a single number for a batch means everything was summed
    together (a sum without axis=-1, or a mask such as p[p > 0] that flattens the rows); the input's
    shape without its first axis means a sum over axis 0.
    """
    shapes = f"it returned shape {got} for an input of shape {given}, where shape {asked} is asked"
    if per == "row" and got == () and asked != ():
        return (
            "your function summed over the whole array, all the rows together (a `.sum()` without `axis=-1`, or a"
            " mask such as `p[p > 0]`, which flattens the rows into one list): one entropy per row is asked, so"
            f" keep the rows apart and sum over the last axis only; {shapes}"
        )
    if per == "row" and len(given) >= 2 and got == given[1:]:
        return (
            "your function summed over the first axis (axis=0, across the rows), not over each row: one entropy"
            f" per row is asked, so sum over the last axis, axis=-1; {shapes}"
        )
    if per == "row" and got == given:
        return (
            "your function returned one value per probability: one entropy per row is asked, so sum the terms"
            f" over the last axis; {shapes}"
        )
    return (
        f"your function returned {what} of shape {got} where shape {asked} is asked: one value per {per}"
        f" (the input has shape {given})"
    )


def value_problem(got, answer: np.ndarray, what: str, float64: bool, per: str) -> str:
    """What is wrong with the values, in words: NaN, -inf where the answer is finite, float32 digits, nats, a sign."""
    try:
        values = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return f"wrong {what}"
    if np.isnan(values).any() and not np.isnan(answer).any():
        return f"your function returned NaN where the {what} are all numbers"
    if values.shape == answer.shape and ((values == -INF) & np.isfinite(answer)).any():
        return f"your function returned -inf where the right {what} are finite numbers"
    if float64 and close(got, answer, "loose"):
        return "close, but not to float64 precision, as float32 arithmetic gives: compute in float64"
    if per == "row" and answer.any() and close(got, answer * np.log(2)):
        return "these are entropies in nats (natural logarithm): bits are asked, so take np.log2"
    if per == "row" and answer.any() and close(got, -answer):
        return "the sign is flipped: the entropy is minus the sum of p log2 p, never negative"
    return f"wrong {what}"


# --- what a wrong result says about the code that made it ----------------------------------------


def raised_problem(error: str, args: tuple, validates: bool) -> str:
    """An exception on a valid input, with its likeliest cause first: a missing keepdims, or a refused valid input."""
    x, error = np.asarray(args[0]), error.rstrip()  # numpy's broadcasting message ends with a space
    if "could not be broadcast" in error and x.ndim >= 2:
        rows = x.shape[:-1]
        return (
            f"a row maximum or sum without keepdims=True has one value per row, shape {rows}, which numpy lines up"
            f" with the last axis (the tokens), not with the rows: keep the axis, x.max(axis=-1, keepdims=True) has"
            f" shape {rows + (1,)}; your function {error}"
        )
    if validates and error.startswith("raised ValueError"):
        return f"your function refused a valid input: {why_valid(args)}; {REFUSED_ONLY} (it {error})"
    return error


REFUSED_ONLY = "only NaN, +inf and rows entirely -inf are refused, and a negative, NaN or infinite temperature"


def why_valid(args: tuple) -> str:
    """Why a valid case of fixed_softmax is valid, in the words of the statement."""
    x, temperature = np.asarray(args[0]), args[1]
    if (x == -INF).any():
        return "-inf logits are allowed (probability 0)"
    if temperature == 0:
        return "T = 0 is allowed (greedy)"
    if x.dtype != np.float64:
        return f"{x.dtype} logits are allowed (the probabilities are float64)"
    return f"every temperature > 0 is allowed, even T = {temperature:g}"


def mistaken(x: np.ndarray, temperature, log: bool) -> list[tuple[str, np.ndarray]]:
    """What the likeliest wrong versions of the exercise return for (x, T): (the mistake's name, its result) pairs.

    Each is the right code with one mistake: a shift by the whole array's maximum; a row maximum or
    sum without keepdims=True (only a square batch broadcasts it; elsewhere numpy's own error says
    so); multiplying by 1 / T; dividing by T before the shift, in the logits' own float dtype or in
    float64. At a subnormal T the last two both give NaN: the product comes first, since dividing
    first already fails at a larger T. The greedy mistakes are `greedy_problem`'s.
    """
    x64 = x.astype(np.float64)  # (..., V)
    t = 1.0 if log else temperature

    def finish(shifted, keep: bool = True):  # softmax or log-softmax of logits already shifted (and divided)
        total = np.exp(shifted).sum(axis=-1, keepdims=keep)  # (..., 1), or (...,) without keepdims
        return shifted - np.log(total) if log else np.exp(shifted) / total

    attempts = []
    if x.ndim >= 2:
        attempts += [
            ("global maximum", lambda: finish((x64 - x64.max()) / t)),
            ("maximum without keepdims", lambda: finish((x64 - x64.max(axis=-1)) / t)),
            ("sum without keepdims", lambda: finish((x64 - x64.max(axis=-1, keepdims=True)) / t, keep=False)),
        ]
    if not log and temperature != 0:
        attempts.append(("reciprocal", lambda: finish((x64 - x64.max(axis=-1, keepdims=True)) * (1 / t))))
        for dtype in dict.fromkeys([x.dtype if x.dtype.kind == "f" else x64.dtype, x64.dtype]):  # own dtype first

            def divided_first(dtype=dtype):
                divided = x.astype(dtype) / dtype.type(t)  # (..., V) may overflow to inf
                return finish((divided - divided.max(axis=-1, keepdims=True)).astype(np.float64))

            attempts.append(("divide first", divided_first))
    found = []
    with np.errstate(all="ignore"):
        for name, compute in attempts:
            try:
                found.append((name, compute()))
            except ValueError:  # it does not broadcast for this input
                pass
    return found


def mistake(args: tuple, got, answer: np.ndarray, *, log: bool) -> str | None:
    """The mistake that gives exactly `got` for this input, said in words; None when none of them does."""
    try:
        values = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    x = np.asarray(args[0])
    temperature = None if log else args[1]
    greedy_answer = not log and (temperature == 0 or ((answer.max(axis=-1) < 1).any() and is_greedy(values, x)))
    if greedy_answer:  # at T = 0, or a one-hot where T > 0 asks for more than one token
        return greedy_problem(x, temperature, values)
    for name, result in mistaken(x, temperature, log):
        if result.shape == answer.shape and np.allclose(result, values, rtol=1e-6, atol=1e-9, equal_nan=True):
            return MISTAKES[name](x, temperature, log)
    return None


def is_greedy(values: np.ndarray, x: np.ndarray) -> bool:
    """Whether values is the one-hot on each row's first maximum (what T = 0 gives)."""
    greedy = np.zeros(x.shape)  # (..., V)
    np.put_along_axis(greedy, np.argmax(x, axis=-1, keepdims=True), 1.0, axis=-1)
    return values.shape == greedy.shape and bool(np.array_equal(values, greedy))


def greedy_problem(x: np.ndarray, temperature, got: np.ndarray) -> str | None:
    """What is wrong with an answer at T = 0 (or a greedy answer at T > 0): ties, several 1s in a row."""
    if temperature != 0:
        return (
            f"T = {temperature:g} is not T = 0: only T = 0 is greedy; a tiny T sharpens the distribution, and tied"
            " tokens share the mass"
        )
    for index in np.ndindex(x.shape[:-1]):
        row, given = got[index], x[index]  # (V,), (V,)
        tied = np.flatnonzero(given == given.max())  # (k,) the row's maxima, lowest index first
        chosen = np.flatnonzero(row)  # (m,) where the answer put probability
        name = f"row {index[0] if len(index) == 1 else index}" if index else "the row"
        if len(tied) > 1 and len(chosen) > 1 and set(chosen) <= set(tied):
            return (
                "T = 0 puts probability 1 on the first maximum only, ties to the lowest index; a tiny T shares tied"
                f" tokens, T = 0 does not ({name} has tokens {and_list(tied)} tied)"
            )
        if len(chosen) > 1:
            return (
                "greedy puts 1 on the first maximum of each row: np.put_along_axis(probs, best, 1.0, axis=-1) with"
                " best = np.argmax(x, axis=-1, keepdims=True); probs[..., best] = 1 sets every row's best column in"
                f" every row ({name} has 1 in columns {and_list(chosen)})"
            )
        if len(chosen) == 1 and chosen[0] in tied and chosen[0] != tied[0]:
            return (
                f"ties go to the lowest index at T = 0 (np.argmax returns the first maximum): {name} has its maximum"
                f" at tokens {and_list(tied)}, so token {tied[0]} gets probability 1, not token {chosen[0]}"
            )
        if len(chosen) == 1 and chosen[0] not in tied:
            return (
                f"at T = 0 each row puts 1 on its own first maximum, np.argmax(x, axis=-1): {name}'s is token"
                f" {tied[0]}, but your function put the 1 on token {chosen[0]} (one argmax for the whole array, or"
                " another row's?)"
            )
    return None


def divide_first(x: np.ndarray, temperature, log: bool) -> str:
    """Dividing by T before the shift: which division overflows, in numbers."""
    biggest = float(np.abs(x[np.isfinite(x)]).max())
    dtype = f" in {x.dtype}" if x.dtype.kind == "f" and x.dtype != np.float64 else ""
    return (
        f"dividing first overflows: {biggest:g} / {temperature:g} = inf{dtype}, and inf - inf = NaN; subtract the"
        " maximum first, then divide by T"
    )


MISTAKES = {
    "global maximum": lambda x, t, log: (
        "each row must be shifted by its own maximum, x.max(axis=-1, keepdims=True), not by the whole array's: in a"
        " row far below the overall maximum every exp underflows to 0, "
        + ("and log 0 = -inf (the row becomes inf or NaN)" if log else "and 0 / 0 = NaN")
    ),
    "maximum without keepdims": lambda x, t, log: (
        f"a row maximum without keepdims=True has shape {x.shape[:-1]}, which numpy lines up with the last axis:"
        " entry [i, j] is shifted by row j's maximum, not row i's; keep the axis, x.max(axis=-1, keepdims=True)"
    ),
    "sum without keepdims": lambda x, t, log: (
        f"a row sum without keepdims=True has shape {x.shape[:-1]}, which numpy lines up with the last axis: entry"
        " [i, j] uses row j's sum, not row i's"
        + (" (the diagonal is right, the rest is not)" if x.ndim == 2 else "")
        + "; keep the axis, .sum(axis=-1, keepdims=True)"
    ),
    "divide first": divide_first,
    "reciprocal": lambda x, t, log: (
        f"multiplying by 1 / T overflows: 1 / {t:g} = inf, and the maximum's 0 * inf = NaN; divide by T instead"
    ),
}


def and_list(items) -> str:
    """[0, 2, 5] -> '0, 2 and 5'."""
    words = [str(int(i)) if isinstance(i, (int, np.integer)) else str(i) for i in items]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def rows_said(got, answer: np.ndarray) -> str:
    """Which rows of a batch are right and which are not: 'row 1 is right, rows 0 and 2 are NaN'; '' for one row."""
    try:
        values = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return ""
    if answer.ndim < 2 or values.shape != answer.shape:
        return ""
    states: dict[str, list] = {"right": [], "NaN": [], "infinite": [], "wrong": []}
    for index in np.ndindex(answer.shape[:-1]):
        row, right = values[index], answer[index]  # (V,), (V,)
        if close(row, right, "float64"):
            states["right"].append(index)
        elif np.isnan(row).any():
            states["NaN"].append(index)
        elif (np.isinf(row) & np.isfinite(right)).any():
            states["infinite"].append(index)
        else:
            states["wrong"].append(index)
    said = []
    for state, indices in states.items():
        if indices:
            names = and_list(index[0] if len(index) == 1 else index for index in indices)
            said.append(f"row {names} is {state}" if len(indices) == 1 else f"rows {names} are {state}")
    return ", ".join(said)


def refused_functions(fn, names: tuple[str, ...]) -> dict:
    """The package's functions `names`, and the notebook's copies and aliases of them: calls are refused."""
    return namesakes(fn, names, specdec, specdec.logits, specdec.validation)


# --- Exercise 1: a numerically stable softmax with temperature --------------------------------

STABLE_SOFTMAX_CASES = [
    (np.array([2.0, 1.0, 0.1]), 1.0),  # an ordinary row
    (np.array([1000.0, 999.0, 998.0]), 1.0),  # exp(1000) = inf: subtract the maximum first
    (np.array([-1000.0, -1001.0, -1002.0]), 1.0),  # exp(-1000) = 0: 0 / 0 without the shift
    (np.array([0.0, -INF, 1.0, -INF]), 0.5),  # -inf means probability exactly 0
    (np.array([3.0, 1.0, 2.0]), 0.1),  # low temperature: sharper
    (np.array([3.0, 1.0, 2.0]), 1e4),  # high temperature: nearly uniform
    (np.array([1.0, 2.0]), 1e-308),  # divide first and 2 / 1e-308 = inf, then inf - inf = NaN
    (np.array([1.0, 2.0]), 1e-310),  # subnormal T: 1 / T = inf, so (x - m) * (1 / T) has 0 * inf = NaN
    (np.array([4.5]), 1.0),  # a one-token vocabulary: probability 1
    (np.array([2.0, 5.0, 5.0, 1.0]), 0.0),  # T = 0 is greedy; a tie goes to the lowest index
    (np.array([2.0, 5.0, 5.0, 1.0]), 0.01),  # a tiny T is not greedy: the tied tokens share the mass
    (np.array([1000.0, 1000.0, 999.0]), 1e-306),  # dividing first overflows; a greedy guard gives [1, 0, 0]
    (np.array([-INF, 4.0, -INF]), 0),  # greedy next to -inf, integer temperature
    (np.array([4.5]), 0.0),  # greedy over one token
    (np.array([[1.0, 2.0, 3.0], [800.0, 801.0, 799.0]]), 1.0),  # (2, 3): a shape error names a missing keepdims
    (np.array([[1.0, 2.0, 3.0], [1000.0, 0.0, -1000.0], [5.0, 5.0, -INF]]), 0.7),  # a batch: each row alone
    (np.array([[1.0, 3.0, 3.0], [7.0, 7.0, 7.0]]), 0.0),  # greedy on a batch, ties in every row
    (np.array([[[0.5, 0.25]], [[100.0, 300.0]]], dtype=np.float32), 2),  # (2, 1, 2) float32 logits
    (np.array([[[1.0, 4.0, 4.0], [9.0, 0.0, 2.0]], [[3.0, 3.0, 1.0], [0.0, 1.0, 6.0]]]), 0.0),  # (2, 2, 3) greedy
    (np.array([[2, 7, 7], [5, 1, 0]]), 0),  # integer logits, greedy: still float64 probabilities
    (np.array([[2, 7, 7], [5, 1, 0]]), 0.5),  # integer logits
    (np.array([[[1.0, 2.0]], [[2.0, 1.0]]], dtype=np.float32), 0.0),  # float32 logits, greedy
]


def check_stable_softmax(fn) -> bool:
    """fn(logits, temperature) must equal softmax(logits / T) over the last axis in float64, greedy at T = 0."""
    expected = [softmax(*args) for args in STABLE_SOFTMAX_CASES]
    refused = refused_functions(fn, ("softmax", "log_softmax", "one_hot_argmax"))
    failure = first_wrong(fn, STABLE_SOFTMAX_CASES, expected, what="probabilities", float64=True, refused=refused)
    return verdict("stable_softmax", failure, len(STABLE_SOFTMAX_CASES))


# --- Exercise 2: log-softmax without the log of zero ------------------------------------------

LOG_SOFTMAX_CASES = [
    (np.array([2.0, 1.0, 0.1]),),  # an ordinary row
    (np.array([0.0, -800.0, -1000.0]),),  # np.log(softmax(x)) gives -inf here; the answer is -800, -1000
    (np.array([1000.0, 999.0, 998.0]),),  # exp(1000) = inf: subtract the maximum first
    (np.array([0.0, -INF, 3.0]),),  # -inf stays -inf, the others are finite
    (np.array([-INF, 2.5, -INF]),),  # one token left: log 1 = 0
    (np.array([7.0]),),  # a one-token vocabulary: log 1 = 0
    (np.array([[1.0, 2.0, 3.0], [800.0, 801.0, 799.0]]),),  # (2, 3): a shape error names a missing keepdims
    (np.array([[1.0, 2.0, 3.0], [1000.0, 0.0, -1000.0], [5.0, 5.0, -INF]]),),  # a batch: each row alone
    (np.array([[[0.5, 0.25]], [[100.0, 800.0]]], dtype=np.float32),),  # (2, 1, 2) float32 logits
    (np.array([[3, 1, 2], [0, 0, 0]]),),  # integer logits
]


def check_log_softmax(fn) -> bool:
    """fn(logits) must equal log(softmax(logits)) over the last axis in float64, finite for every finite logit."""
    expected = [log_softmax(*args) for args in LOG_SOFTMAX_CASES]
    refused = refused_functions(fn, ("log_softmax",))
    failure = first_wrong(fn, LOG_SOFTMAX_CASES, expected, what="log-probabilities", float64=True, refused=refused)
    return verdict("stable_log_softmax", failure, len(LOG_SOFTMAX_CASES))


# --- Exercise 3: fix the blog post's softmax --------------------------------------------------

FIXED_SOFTMAX_VALID = [
    (np.array([2.0, 1.0, 0.1]), 1.0),
    (np.array([1000.0, 999.0, 998.0]), 1.0),
    (np.array([0.0, -INF, 1.0]), 1.0),  # -inf is allowed: it is how a filter says "never"
    (np.array([70.0, 69.0], dtype=np.float16), 0.001),  # float16: 70 / 0.001 = 70000 > 65504 = inf
    (np.array([1.0, 2.0]), 1e-308),  # float64: 2 / 1e-308 = inf
    (np.array([1.0, 2.0]), 1e-310),  # subnormal T: multiplying by 1 / T = inf gives 0 * inf = NaN
    (np.array([2.0, 5.0, 5.0, 1.0]), 0.0),  # greedy, tie to the lowest index
    (np.array([2.0, 5.0, 5.0, 1.0]), 0.01),  # a tiny T is not greedy: the tied tokens share the mass
    (np.array([1000.0, 1000.0, 999.0]), 1e-306),  # rule 2: dividing first overflows; a greedy guard gives [1, 0, 0]
    (np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]]), 1.0),  # a batch: each row sums to 1, not the whole batch
    (np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]]), 0.0),  # greedy on a batch: each row its own argmax
    (np.array([[0.0, 5.0, 5.0], [9.0, 1.0, 9.0], [2.0, 2.0, 2.0]]), 0),  # greedy, ties in every row
    (np.array([[[1.0, 4.0, 4.0], [9.0, 0.0, 2.0]], [[3.0, 3.0, 1.0], [0.0, 1.0, 6.0]]]), 0.0),  # (2, 2, 3) greedy
    (np.array([[8.0, -INF], [-INF, 8.0]]), 0.0),  # greedy next to -inf
]

FIXED_SOFTMAX_INVALID = [
    ((np.array([1.0, 2.0]), -1.0), "a negative temperature"),
    ((np.array([1.0, 2.0]), NAN), "a NaN temperature"),
    ((np.array([1.0, 2.0]), INF), "an infinite temperature"),
    ((np.array([1.0, NAN, 2.0]), 1.0), "a NaN logit"),
    ((np.array([1.0, INF]), 1.0), "a +inf logit"),
    ((np.array([-INF, -INF]), 1.0), "a row that is entirely -inf"),
    ((np.array([[0.0, 1.0], [-INF, -INF]]), 1.0), "a batch with one row entirely -inf"),
    ((np.array([[0.0, 1.0], [2.0, NAN]]), 1.0), "a batch with a NaN in its second row"),
    ((np.array([[[0.0, 1.0]], [[INF, 0.0]]]), 0.5), "a (2, 1, 2) batch with +inf in its second row"),
    ((np.array([1.0, NAN, 2.0]), 0.0), "a NaN logit at T = 0 (greedy must check the logits too)"),
    ((np.array([[0.0, 1.0], [-INF, -INF]]), 0.0), "a row entirely -inf at T = 0"),
]


def check_fixed_softmax(fn) -> bool:
    """fn(x, temperature) must compute the right float64 probabilities and raise ValueError on bad input."""
    n_cases = len(FIXED_SOFTMAX_VALID) + len(FIXED_SOFTMAX_INVALID)
    expected = [softmax(*args) for args in FIXED_SOFTMAX_VALID]
    refused = refused_functions(fn, ("softmax", "log_softmax", "one_hot_argmax", "check_logits", "check_temperature"))
    failure = first_wrong(
        fn, FIXED_SOFTMAX_VALID, expected, what="probabilities", float64=True, refused=refused, validates=True
    )
    if failure is None:
        failure = first_not_refused(fn, refused)
    return verdict("fixed_softmax", failure, n_cases)


def first_not_refused(fn, refused: dict) -> str | None:
    """The first invalid case for which fn does not raise ValueError, said in words; None if it refuses them all."""
    for args, what in FIXED_SOFTMAX_INVALID:
        got, error = attempt_on(fn, args, refused)
        if error is not None and error.startswith("raised ValueError"):
            continue
        if error is not None and not error.startswith("raised"):
            return error  # a policy failure: it changed its input, it called the package
        problem = error if error is not None else f"returned {show(got)}"
        return located(f"no ValueError for {what}: your function {problem}", f"for input {describe(args)}")
    return None


# --- Exercise 4: entropy in bits, with 0 * log 0 = 0 ------------------------------------------


def reference_entropy_bits(probs):
    """H = -sum p log2 p over the last axis, where a zero probability contributes exactly 0."""
    p = np.asarray(probs, dtype=np.float64)  # (..., V)
    terms = np.zeros_like(p)  # (..., V)
    positive = p > 0
    terms[positive] = -p[positive] * np.log2(p[positive])
    return terms.sum(axis=-1)  # (...,)


ENTROPY_CASES = [
    (np.array([0.25, 0.25, 0.25, 0.25]),),  # uniform over 4: exactly 2 bits
    (np.array([0.7, 0.2, 0.1]),),
    (np.array([0.0, 1.0, 0.0]),),  # certain: 0 bits, and 0 * log 0 must count as 0, not NaN
    (np.array([0.5, 0.0, 0.5]),),  # a fair coin with an impossible third side: 1 bit
    (np.array([1.0]),),  # a one-token vocabulary: 0 bits
    (np.full(1024, 1 / 1024),),  # uniform over 1024: 10 bits (in nats it would be 6.93)
    (np.array([0.5, 0.25, 0.25], dtype=np.float32),),  # float32 probabilities: 1.5 bits
    (np.array([[0.5, 0.5], [1.0, 0.0], [0.9, 0.1]]),),  # a batch: one entropy per row, shape (3,)
    (np.array([[[0.25, 0.75, 0.0]], [[1.0, 0.0, 0.0]]]),),  # (2, 1, 3) -> (2, 1)
    (np.array([[0.0, 0.0, 1.0], [0.2, 0.0, 0.8]], dtype=np.float32),),  # float32 with zeros
]


def check_entropy_bits(fn) -> bool:
    """fn(probs) must return the entropy in bits of each row (last axis), treating 0 * log 0 as 0.

    The entropy is a summary, not a distribution to sample from: float32 arithmetic is fine.
    """
    expected = [np.asarray(reference_entropy_bits(*args)) for args in ENTROPY_CASES]  # 0-d arrays print as 2.0
    failure = first_wrong(fn, ENTROPY_CASES, expected, what="entropies", float64=False, refused={}, per="row")
    return verdict("entropy_bits", failure, len(ENTROPY_CASES))
