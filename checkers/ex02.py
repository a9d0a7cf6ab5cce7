"""Checkers for notebook 02 (drawing a token and testing a sampler).

Each checker takes the learner's function, prints ✓ or ✗ with a concrete counterexample, and
returns a bool. The samplers used by `check_which_is_wrong` live here too, so the notebook
cannot change them by accident.
"""

import time

import numpy as np

from checkers import UNUSED_RNG, attempt, call, located, result_problem, show, verdict
from specdec.drawing import sample, total_variation

JUST_BELOW_ONE = float(np.nextafter(1.0, 0.0))  # 1 - 2**-53: the largest value rng.random() can return


# --- Exercise 1: inverse CDF for one row, with the uniform number given ---------------------


def reference_draw_with_u(probs, u, dtype=np.float64) -> int:
    """The token whose interval [F_(i-1), F_i) holds u * probs.sum() (F = running sum), as `draw` scales u.

    np.sum adds in a different order from np.cumsum, so the total can exceed the last running
    sum (ten 0.1s: sum 1.0, last running sum 0.9999999999999999) and u * total can land past
    the end: then the answer is the last token with mass. `dtype=np.float32` gives what the
    same steps return in float32, to recognise that mistake.
    """
    probs = np.asarray(probs, dtype=dtype)  # (V,)
    cdf = np.cumsum(probs)  # (V,)
    token = int((cdf <= dtype(u) * probs.sum()).sum())
    if token >= probs.size or probs[token] == 0:  # past the end by rounding: last token with mass
        token = int(np.flatnonzero(probs > 0)[-1])
    return token


def unscaled_draw_with_u(probs, u) -> int:
    """What a careful answer that forgets the scaling returns: u itself against the running sums of the weights."""
    probs = np.asarray(probs, dtype=np.float64)  # (V,)
    token = min(int((np.cumsum(probs) <= u).sum()), probs.size - 1)
    return token if probs[token] > 0 else int(np.flatnonzero(probs > 0)[-1])


def token_problem(got, expected: int, probs: np.ndarray) -> str | None:
    """None when `got` is one integer (Python or NumPy) equal to `expected`; else what is wrong, in words."""
    if isinstance(got, bool | np.bool_):
        return "a bool; the token is asked as an integer"
    if np.ndim(got) != 0:
        return f"an array of shape {np.shape(got)}; one integer is asked"
    try:
        dtype, value = np.asarray(got).dtype, float(got)
    except (TypeError, ValueError):
        return f"a {type(got).__name__}; the token is asked as an integer"
    if not np.issubdtype(dtype, np.integer):
        same = "the right token, but " if value == expected else ""
        return f"{same}a {type(got).__name__}; the token is asked as an integer (int(...) converts it)"
    if int(got) == expected:
        return None
    if not 0 <= int(got) < probs.size:
        return f"{int(got)} is not a token (the vocabulary is 0 to {probs.size - 1})"
    if probs[int(got)] == 0:
        return f"token {int(got)} has probability 0, so it can never be drawn"
    return ""


def step_problem(got: int, expected: int, probs: np.ndarray, u: float) -> str:
    """When u * probs.sum() is exactly a running sum and `got` lies left of the answer: why; else ''.

    That is the `<` mistake (or searchsorted's side="left"): the step is given to the token on
    its left, where `<=` gives it to the token on its right.
    """
    cdf, scaled = np.cumsum(probs), u * float(probs.sum())  # (V,), the scaled u
    steps = np.flatnonzero(cdf == scaled)  # running sums equal to the scaled u
    strict = min(int((cdf < scaled).sum()), probs.size - 1)  # what counting with `<` gives
    if steps.size == 0 or got >= expected or got != strict:
        return ""
    return (
        f"u * probs.sum() = {scaled!r} is exactly the running sum F_{int(steps[0])}, a step of the staircase; "
        "a u exactly on a step belongs to the token on its right (count the running sums <= u, not < u; "
        "or np.searchsorted(..., side='right'): the default side='left' is the < count)"
    )


def unscaled_problem(got: int, probs: np.ndarray, u: float) -> str:
    """When `got` is what u gives unscaled against the running sums of a row that does not sum to exactly 1: why.

    Said before any other cause: the same token can also look like the `<` mistake (u * total lands
    exactly on a step that u itself is just below), which this learner did not make.
    """
    total = float(probs.sum())
    if total == 1.0 or got != unscaled_draw_with_u(probs, u):
        return ""
    return (
        f"u is compared with the running sums without being scaled: this row sums to {total!r}, not exactly 1, "
        f"so the token asked is the one whose piece holds u * probs.sum() = {u * total!r} "
        "(count the running sums <= u * probs.sum())"
    )


def past_the_end_problem(probs: np.ndarray, u: float) -> str:
    """When u * probs.sum() is not below the last running sum (the count is V, by rounding): why; else ''."""
    cdf, scaled = np.cumsum(probs), u * float(probs.sum())  # (V,), the scaled u
    if scaled < cdf[-1]:
        return ""
    return (
        f"u * probs.sum() = {scaled!r} reaches the last running sum F_{probs.size - 1} = {float(cdf[-1])!r} by "
        "rounding (np.sum and np.cumsum add in different orders), past the last piece: return the last token "
        "with positive probability (see the statement)"
    )


def float32_problem(got: int, probs: np.ndarray, u: float) -> str:
    """When `got` is what the right steps give in float32: why; else ''."""
    if got != reference_draw_with_u(probs, u, np.float32):
        return ""
    return (
        "what the same steps give in float32, where u and the running sums are rounded to 24 bits: "
        "float64 is asked (probabilities are float64 in this course)"
    )


def draw_with_u_cases() -> list[tuple]:
    """The boundary cases first (zero-probability tokens, u = 0, u on a step and just below it, u just below 1)."""
    steps = np.array([0.375, 0.25, 0.0, 0.125, 0.25])  # running sums 0.375, 0.625, 0.625, 0.75, 1 (exact)
    tenths = np.full(10, 0.1)  # np.sum gives 1.0, but the running sum ends at 0.9999999999999999
    below = [float(np.nextafter(edge, 0.0)) for edge in (0.375, 0.625, 0.75)]  # a hair below each step
    cases = [(steps, u) for u in (0.0, 0.2, 0.375, 0.5, 0.625, 0.7, 0.75, 0.9, JUST_BELOW_ONE, *below)]
    cases += [
        (np.array([0.0, 0.0, 0.5, 0.5]), 0.0),  # u = 0 must not pick a leading zero-probability token
        (np.array([0.0, 1.0]), 0.0),
        (np.array([0.5, 0.5, 0.0, 0.0]), JUST_BELOW_ONE),  # trailing zeros are never drawn
        (np.array([1.0]), 0.0),
        (np.array([1.0]), JUST_BELOW_ONE),
        (tenths, 0.55),
        (tenths, JUST_BELOW_ONE),  # u * sum = 0.9999999999999999 = the last running sum: past the end
        (np.append(tenths, 0.0), JUST_BELOW_ONE),  # past the end, onto a zero-probability last token
        (np.append(tenths, [0.0, 0.0]), JUST_BELOW_ONE),  # two trailing zeros: one step back is not enough
        (np.array([0.0, 0.25, 0.0, 0.0, 0.75, 0.0]), 0.25),
        # rows that sum to 1 only up to rounding: the scaling by probs.sum() moves u across a step
        (np.array([0.5, 0.5 + 2**-52]), float(np.nextafter(0.5, 0.0))),  # sum 1 + 2**-52: u * sum = 0.5
        (np.array([0.5, 0.5 - 2**-53]), 0.5),  # sum 1 - 2**-53: u * sum just below 0.5
    ]
    rng = np.random.default_rng(2)
    for _ in range(12):
        weights = rng.random(9) * (rng.random(9) < 0.6)  # (9,) some exact zeros
        weights[rng.integers(9)] += 0.1  # at least one token with mass
        cases.append((weights / weights.sum(), float(rng.random())))
    return cases


def show_exact(value) -> str:
    """Like `show`, but a short float array with every digit: some cases differ in the last bit only."""
    if isinstance(value, tuple):
        return "(" + ", ".join(show_exact(v) for v in value) + ")"
    if isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.ndim == 1 and value.size <= 12:
        return "[" + ", ".join(repr(float(x)) for x in value) + "]"
    return show(value)


def check_draw_with_u(draw_with_u) -> bool:
    """Exercise 1: draw_with_u(probs, u) must return the inverse-CDF token as an integer."""
    name, cases = "draw_with_u", draw_with_u_cases()
    for probs, u in cases:
        got, error = call(draw_with_u, (probs, u))
        if error is not None:  # an exception is placed before its input, every digit shown as below
            failure = located(error, f"for input {show_exact((probs, u))}") if error.startswith("raised ") else error
            return verdict(name, failure, len(cases))
        expected = reference_draw_with_u(probs, u)
        problem = token_problem(got, expected, probs)
        if problem is None:
            continue
        if problem == "":  # a token of the vocabulary with mass, but not the right one: find the cause
            problem = (
                unscaled_problem(int(got), probs, u)
                or past_the_end_problem(probs, u)
                or step_problem(int(got), expected, probs, u)
                or float32_problem(int(got), probs, u)
            )
        elif np.ndim(got) == 0 and np.issubdtype(np.asarray(got).dtype, np.integer):
            # a token of probability 0, or past the end: reached by `<`, or by rounding past the last piece
            cause = step_problem(int(got), expected, probs, u) or (past_the_end_problem(probs, u) if got >= 0 else "")
            problem = f"{problem}: {cause}" if cause else problem
        said = f"expected {expected}, got {show(got)}"
        failure = f"{problem}: {said}" if problem else said
        return verdict(name, located(failure, f"for input {show_exact((probs, u))}"), len(cases))
    return verdict(name, None, len(cases))


# --- Exercise 2: the event that attains total variation ------------------------------------


def short(x: float) -> str:
    """A float to 3 significant digits, as Python writes it: 0.0, 1e-10, 0.25."""
    return repr(float(f"{x:.3g}"))


def event_problem(got, p: np.ndarray, q: np.ndarray) -> str | None:
    """None when `got` is a boolean mask of shape (V,) whose event has the largest gap |P(A) - Q(A)|.

    Otherwise what is wrong, in words. `got` is a number, or has passed `result_problem` (a bool
    array of p's shape). Either of A and its complement is right: their gaps have the same size and
    opposite signs.
    """
    if np.ndim(got) == 0:
        return "a number; the event A is asked, as a boolean mask (True for the tokens in A)"
    gap, tv = abs(float(p[got].sum() - q[got].sum())), total_variation(p, q)
    if abs(gap - tv) <= 1e-12:
        return None
    if abs(gap - tv) <= 1e-6:
        return (
            f"your event's gap |P(A) - Q(A)| is off by less than 1e-6 (your gap {short(gap)}, the total variation "
            f"{short(tv)}): as when p and q are compared with a tolerance (p - q > 1e-9, say) or in float32, either "
            "of which misses tokens where p and q differ that little: compare p > q exactly, in float64 (float64 is "
            "asked: probabilities are float64 in this course)"
        )
    return f"your event's gap |P(A) - Q(A)| is {gap!r}, but the total variation is {tv!r}: some event has a larger gap"


def integer_event_problem(got: np.ndarray, p: np.ndarray) -> str:
    """What an integer array is, where a boolean mask is asked: a 0/1 mask of the right shape, or token ids."""
    if got.shape == p.shape and np.isin(got, (0, 1)).all():
        return (
            f"your function returned {got.dtype} 0/1 values where a bool mask is asked: the event's tokens are "
            "right, as True/False they make the mask (.astype(bool), or the comparison itself)"
        )
    return (
        f"your function returned {got.dtype} token ids where a bool mask is asked, one entry per token "
        "(np.zeros(V, dtype=bool), then set True at those ids)"
    )


def total_variation_cases() -> list[tuple]:
    rng = np.random.default_rng(3)
    p, q = rng.dirichlet(np.ones(50)), rng.dirichlet(np.ones(50))  # (50,), (50,)
    pairs = [
        ([0.5, 0.5], [0.9, 0.1]),
        ([1.0, 0.0], [0.0, 1.0]),  # disjoint: the gap is 1
        ([0.3, 0.3, 0.2, 0.2], [0.2, 0.2, 0.3, 0.3]),  # the largest single-token gap is only half of it
        ([0.25, 0.25, 0.5, 0.0], [0.0, 0.5, 0.25, 0.25]),
        ([0.4, 0.6, 0.0], [0.4, 0.3, 0.3]),  # a tie at token 0: in A or not, the gap is the same
        ([0.5, 0.5], [0.5 - 1e-10, 0.5 + 1e-10]),  # a gap float32 cannot see
        (p, q),  # 2**50 events: too many to try one by one
    ]
    return [(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)) for a, b in pairs]


GROWTH_SIZES = (8, 14, 20)  # vocabularies on which the learner's function is timed before V = 50


def timed(fn, args: tuple) -> tuple:
    """(result, error, seconds) of one call."""
    start = time.perf_counter()
    got, error = call(fn, args)
    return got, error, time.perf_counter() - start


def exponential_growth(v_small: int, t_small: float, v_big: int, t_big: float) -> str | None:
    """A message when the time from v_small to v_big tokens grew like 2**V (or worse), else None.

    Going from 8 to 14 tokens multiplies the number of events by 64, the work of a linear
    formula by less than 2. The floors keep microseconds of noise from counting: the larger
    time must be above 5 ms and 16 times the smaller one (itself taken as at least 0.1 ms).
    """
    if t_big < 5e-3 or t_big < 16 * max(t_small, 1e-4):
        return None
    days = t_big / 2.0**v_big * 2.0**50 / (3600 * 24)
    how_long = f"{days / 365:,.0f} years" if days >= 365 else f"{days:,.0f} days"
    return (
        f"right on small vocabularies, but its time grows like 2^V, as when every one of the 2^V events is "
        f"tried: V = {v_small}: {1e3 * t_small:.1f} ms, V = {v_big}: {1e3 * t_big:.1f} ms "
        f"({2 ** (v_big - v_small)} times more events). At V = 50 there are 2^50 ≈ 1.1e15 events: about "
        f"{how_long} at this speed, so the checker stops here. Decide token by token instead: which tokens "
        "must be in A, given that each token in A adds p_i - q_i to P(A) - Q(A)?"
    )


def check_total_variation(fn) -> bool:
    """Exercise 2: best_event(p, q) returns the event A (a boolean mask) with the largest |P(A) - Q(A)|.

    The checker compares that gap with total_variation (half the L1 distance), on up to 50
    tokens. Before the case with V = 50, the function is timed on 8, 14 and 20 tokens: a time
    that grows like 2^V (every event tried) is stopped with a message instead of hanging.
    """
    name = "best_event"
    cases = total_variation_cases()
    rng = np.random.default_rng(4)
    growth = [(rng.dirichlet(np.ones(v)), rng.dirichlet(np.ones(v))) for v in GROWTH_SIZES]
    n_checks = len(cases) + len(growth)

    def wrong(args, got) -> str | None:
        problem = None if np.ndim(got) == 0 and got is not None else result_problem(got, args[0] > args[1], "event")
        if problem is not None and isinstance(got, np.ndarray) and got.dtype.kind in "iu":
            problem = integer_event_problem(got, args[0])
        problem = problem or event_problem(got, *args)
        return None if problem is None else located(problem, f"for input {show_exact(args)} got {show(got)}")

    for args in cases[:-1]:  # small vocabularies
        got, error = call(fn, args)
        if error is not None or (error := wrong(args, got)) is not None:
            return verdict(name, error, n_checks)
    times = []
    for k, args in enumerate(growth):
        got, error, seconds = timed(fn, args)
        if error is not None or (error := wrong(args, got)) is not None:
            return verdict(name, error, n_checks)
        times.append(seconds)
        if k and exponential_growth(GROWTH_SIZES[k - 1], times[k - 1], GROWTH_SIZES[k], seconds):
            # time both sizes once more and keep the faster: a pause of the machine is not a trend
            t_small = min(times[k - 1], timed(fn, growth[k - 1])[2])
            t_big = min(seconds, timed(fn, args)[2])
            problem = exponential_growth(GROWTH_SIZES[k - 1], t_small, GROWTH_SIZES[k], t_big)
            if problem is not None:
                return verdict(name, problem, n_checks)
    got, error = call(fn, cases[-1])
    if error is not None and ("MemoryError" in error or "allocate" in error or "dimension" in error):
        error += " (2^50 events do not fit in memory: decide token by token which tokens belong in A)"
    if error is not None or (error := wrong(cases[-1], got)) is not None:
        return verdict(name, error, n_checks)
    return verdict(name, None, n_checks)


# --- Exercise 3: spot the bug in a sampler ---------------------------------------------------


def buggy_draw(probs, u) -> int:
    """An inverse-CDF draw with a subtle bug (exercise 3 asks for an input that exposes it)."""
    cdf = np.cumsum(probs)  # (V,)
    return int(np.searchsorted(cdf, u))


def check_counterexample(find_counterexample) -> bool:
    """Exercise 3: find_counterexample() returns (probs, u) on which buggy_draw picks an impossible token."""
    name = "find_counterexample"
    answer, error = call(find_counterexample, ())
    if error is not None:
        return verdict(name, error, 1)
    if not (isinstance(answer, tuple) and len(answer) == 2):
        return verdict(name, f"return a tuple (probs, u), got {show(answer)}", 1)
    try:
        probs = np.asarray(answer[0], dtype=np.float64)
    except (TypeError, ValueError):
        return verdict(name, f"probs must be an array of numbers, got {show(answer[0])}", 1)
    if probs.ndim != 1 or probs.size == 0 or not np.all(probs >= 0) or abs(probs.sum() - 1.0) > 1e-9:
        return verdict(name, f"probs must be a 1-D distribution (>= 0, summing to 1), got {show(probs)}", 1)
    u = answer[1]
    is_number = np.ndim(u) == 0 and not isinstance(u, bool | np.bool_ | str | bytes)
    if is_number:
        try:
            is_number = np.issubdtype(np.asarray(u).dtype, np.number) and not np.iscomplexobj(u)
        except TypeError:
            is_number = False
    if not (is_number and 0.0 <= float(u) < 1.0):
        return verdict(name, f"u must be one number in [0, 1) (what rng.random() returns), got {show(u)}", 1)
    token = buggy_draw(probs, float(u))
    call_text = f"buggy_draw({show(probs)}, {float(u)!r}) = {token}"
    if token >= probs.size:
        problem = (
            f"buggy_draw returns {token}, past the end of the vocabulary: a real failure, but another bug (no clip "
            "to the vocabulary, the repair of Exercise 1); the exercise asks for a u on which buggy_draw returns a "
            "token of probability 0"
        )
        return verdict(name, located(problem, call_text), 1)
    if probs[token] == 0:
        print(f"✓ {name}: {call_text}, a token of probability 0")
        return True
    right = reference_draw_with_u(probs, float(u))
    if token != right:
        problem = (
            f"buggy_draw is wrong here (the right token is {right}), but the token it picks has probability "
            f"{probs[token]:g}: the exercise asks for a u on which it picks a token of probability 0. Which "
            "zero-probability token can own a non-empty piece?"
        )
    else:
        problem = (
            f"not a counterexample: buggy_draw returns token {token}, the right token for this u; the exercise asks "
            "for a u on which it picks a token of probability 0"
        )
    return verdict(name, located(problem, call_text), 1)


# --- Exercise 4: which of two samplers is wrong? ---------------------------------------------


def exact_sampler(probs, n, rng):
    """n independent draws from `probs` with specdec.sample."""
    probs = np.asarray(probs, dtype=np.float64)  # (V,)
    return sample(np.broadcast_to(probs, (n, probs.size)), rng)  # (n,)


def never_last_sampler(probs, n, rng):
    """Inverse CDF with an off-by-one clip (V - 2): the last token is never drawn."""
    cdf = np.cumsum(probs)  # (V,)
    u = rng.random(n)  # (n,)
    return np.minimum((cdf[None, :] <= u[:, None]).sum(axis=-1), len(cdf) - 2)  # (n,)


def greedy_leak_sampler(probs, n, rng):
    """3% of the time returns the most likely token instead of a draw."""
    tokens = exact_sampler(probs, n, rng)  # (n,)
    return np.where(rng.random(n) < 0.03, np.argmax(probs), tokens)  # (n,)


def too_hot_sampler(probs, n, rng):
    """Draws from probs ** (1 / 1.15), renormalised: a stray temperature of 1.15."""
    hotter = np.asarray(probs, dtype=np.float64) ** (1 / 1.15)  # (V,)
    return exact_sampler(hotter / hotter.sum(), n, rng)


def tail_dropping_sampler(probs, n, rng):
    """Silently drops tokens below probability 0.01 (a hidden filter) and renormalises."""
    kept = np.where(np.asarray(probs) >= 0.01, probs, 0.0)  # (V,)
    return exact_sampler(kept / kept.sum(), n, rng)


WHICH_IS_WRONG_SEEDS = (11, 12, 13)


def which_is_wrong_cases() -> list[tuple]:
    """(probs, wrong sampler, its description, where it sits: 'a' or 'b', seed).

    Every pair runs in both positions, each with three seeds: 24 calls, so a coin flip passes
    once in 2**24 tries and "always a" never.
    """
    peaked = np.array([0.35, 0.25, 0.15, 0.1, 0.08, 0.04, 0.02, 0.01])  # (8,)
    tail = np.append([0.4, 0.3, 0.2], np.full(12, 0.1 / 12))  # (15,) twelve tokens below 0.01
    pairs = [
        (peaked, never_last_sampler, "never draws the last token"),
        (tail, tail_dropping_sampler, "drops tokens below 0.01"),
        (peaked, too_hot_sampler, "samples at temperature 1.15"),
        (peaked, greedy_leak_sampler, "returns the argmax 3% of the time"),
    ]
    return [
        (probs, wrong, description, position, seed)
        for seed in WHICH_IS_WRONG_SEEDS
        for probs, wrong, description in pairs
        for position in ("b", "a")
    ]


_HIDDEN: dict[int, object] = {}  # which sampler each wrapper stands for, kept out of the wrapper itself
_DRAWN: dict[int, int] = {}  # how many tokens each wrapper returned to the learner's function, over all its calls
FEW_DRAWS = 10_000  # below this many draws per sampler, a wrong answer is most likely a lack of power


class Sampler:
    """A sampler under a neutral name, with no closure or attribute that says which one it is."""

    __slots__ = ("_key",)

    def __init__(self, key: int):
        self._key = key

    def __call__(self, probs, n, rng):
        tokens = _HIDDEN[self._key](probs, n, rng)
        _DRAWN[self._key] = _DRAWN.get(self._key, 0) + int(np.size(tokens))
        return tokens


def anonymous(sampler) -> Sampler:
    """`sampler` behind a neutral wrapper: only its draws can tell which one it is."""
    key = len(_HIDDEN)
    _HIDDEN[key], _DRAWN[key] = sampler, 0
    return Sampler(key)


def too_few_draws(drawn: list[int], problem: str) -> str:
    """A wrong answer with its likely cause first: no draws, or fewer than FEW_DRAWS tokens from a sampler.

    drawn: how many tokens the learner's function drew from sampler_a and from sampler_b.
    """
    if min(drawn) >= FEW_DRAWS:
        return problem
    few = "each sampler" if drawn[0] == drawn[1] else "sampler_a" if drawn[0] < drawn[1] else "sampler_b"
    if min(drawn) == 0:
        cause = f"your function never drew from {few.replace('each', 'either')}: only the draws can tell them apart"
    else:
        cause = (
            f"your function drew only {min(drawn):,} tokens from {few}: at that size an exact sampler's statistic "
            "varies as much as a wrong one's (section 6's table at 10^3); draw more, about 10^5"
        )
    return f"{cause}. {problem[0].upper()}{problem[1:]}"


def check_which_is_wrong(which_is_wrong) -> bool:
    """Exercise 4: which_is_wrong(sampler_a, sampler_b, probs, rng) names the wrong sampler, 'a' or 'b'."""
    name = "which_is_wrong"
    cases = which_is_wrong_cases()
    unused = False  # whether some call never drew from the rng it was given
    for number, (probs, wrong, description, position, seed) in enumerate(cases):
        pair = (wrong, exact_sampler) if position == "a" else (exact_sampler, wrong)
        wrapped = tuple(map(anonymous, pair))
        try:
            outcome = attempt(which_is_wrong, (*wrapped, probs, np.random.default_rng(seed)))
            drawn = [_DRAWN[w._key] for w in wrapped]  # tokens drawn from sampler_a, from sampler_b
        finally:
            _HIDDEN.clear()
            _DRAWN.clear()
        answer, error = outcome.result, outcome.failure
        if error is not None:
            return verdict(name, error, len(cases))
        if not (isinstance(answer, str) and answer in ("a", "b")):
            return verdict(name, f"answer 'a' or 'b', got {show(answer)}", len(cases))
        if answer != position:
            exact = "b" if position == "a" else "a"
            problem = f"you answered {answer!r}, but sampler_{position} {description} and sampler_{exact} is exact"
            problem = too_few_draws(drawn, problem)
            where = (
                f"probs {show(probs)}, rng = np.random.default_rng({seed}); call {number + 1} of {len(cases)}: "
                f"4 pairs, each in both positions, with {len(WHICH_IS_WRONG_SEEDS)} seeds"
            )
            return verdict(name, located(problem, where), len(cases))
        unused = unused or outcome.rng_used is False
    if unused:  # right answers, but not from the draws the caller's seed fixes
        return verdict(name, UNUSED_RNG, len(cases))
    return verdict(name, None, len(cases))
