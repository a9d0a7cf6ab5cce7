"""Checkers for notebook 02 (drawing a token and testing a sampler).

Each checker takes the learner's function, prints ✓ or ✗ with a concrete counterexample, and
returns a bool. The samplers used by `check_which_is_wrong` live here too, so the notebook
cannot change them by accident.
"""

import numpy as np

from specdec.drawing import sample, total_variation
from specdec.exercises import call, check_against, show, verdict

JUST_BELOW_ONE = float(np.nextafter(1.0, 0.0))  # 1 - 2**-53: the largest value rng.random() can return


# --- Exercise 1: inverse CDF for one row, with the uniform number given ---------------------


def reference_draw_with_u(probs, u) -> int:
    """The token whose interval [F_(i-1), F_i) holds u * probs.sum() (F = running sum), as `draw` scales u.

    np.sum adds in a different order from np.cumsum, so the total can exceed the last running
    sum (ten 0.1s: sum 1.0, last running sum 0.9999999999999999) and u * total can land past
    the end: then the answer is the last token with mass.
    """
    probs = np.asarray(probs, dtype=np.float64)  # (V,)
    cdf = np.cumsum(probs)  # (V,)
    token = int((cdf <= u * probs.sum()).sum())
    if token >= probs.size or probs[token] == 0:  # past the end by rounding: last token with mass
        token = int(np.flatnonzero(probs > 0)[-1])
    return token


def same_token(got, expected) -> bool:
    """True when `got` is one integer (Python or numpy) equal to `expected`."""
    if isinstance(got, bool | np.bool_) or np.ndim(got) != 0:
        return False
    return np.issubdtype(np.asarray(got).dtype, np.integer) and int(got) == expected


def draw_with_u_cases() -> list[tuple]:
    """The boundary cases first (zero-probability tokens, u = 0, u on a step, u just below 1)."""
    steps = np.array([0.375, 0.25, 0.0, 0.125, 0.25])  # running sums 0.375, 0.625, 0.625, 0.75, 1 (exact)
    tenths = np.full(10, 0.1)  # np.sum gives 1.0, but the running sum ends at 0.9999999999999999
    cases = [(steps, u) for u in (0.0, 0.2, 0.375, 0.5, 0.625, 0.7, 0.75, 0.9, JUST_BELOW_ONE)]
    cases += [
        (np.array([0.0, 0.0, 0.5, 0.5]), 0.0),  # u = 0 must not pick a leading zero-probability token
        (np.array([0.0, 1.0]), 0.0),
        (np.array([0.5, 0.5, 0.0, 0.0]), JUST_BELOW_ONE),  # trailing zeros are never drawn
        (np.array([1.0]), 0.0),
        (np.array([1.0]), JUST_BELOW_ONE),
        (tenths, 0.55),
        (tenths, JUST_BELOW_ONE),  # u * sum = 0.9999999999999999 = the last running sum: past the end
        (np.append(tenths, 0.0), JUST_BELOW_ONE),  # past the end, onto a zero-probability last token
        (np.array([0.0, 0.25, 0.0, 0.0, 0.75, 0.0]), 0.25),
    ]
    rng = np.random.default_rng(2)
    for _ in range(12):
        weights = rng.random(9) * (rng.random(9) < 0.6)  # (9,) some exact zeros
        weights[rng.integers(9)] += 0.1  # at least one token with mass
        cases.append((weights / weights.sum(), float(rng.random())))
    return cases


def check_draw_with_u(draw_with_u) -> bool:
    """Exercise 1: draw_with_u(probs, u) must return the inverse-CDF token as an int."""
    return check_against("draw_with_u", draw_with_u, reference_draw_with_u, draw_with_u_cases(), same=same_token)


# --- Exercise 2: total variation distance ---------------------------------------------------


def same_number(got, expected) -> bool:
    """True when `got` is one real number within 1e-12 of `expected`."""
    try:
        return np.ndim(got) == 0 and abs(float(got) - expected) <= 1e-12
    except (TypeError, ValueError):
        return False


def total_variation_cases() -> list[tuple]:
    rng = np.random.default_rng(3)
    p, q = rng.dirichlet(np.ones(50)), rng.dirichlet(np.ones(50))  # (50,), (50,)
    pairs = [
        ([0.5, 0.5], [0.5, 0.5]),  # identical: 0
        ([1.0, 0.0], [0.0, 1.0]),  # disjoint: 1
        ([0.5, 0.5], [0.9, 0.1]),
        ([0.3, 0.3, 0.2, 0.2], [0.2, 0.2, 0.3, 0.3]),  # the largest single-token gap is only half of it
        ([0.25, 0.25, 0.5, 0.0], [0.0, 0.5, 0.25, 0.25]),
        (p, q),
    ]
    return [(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)) for a, b in pairs]


def check_total_variation(fn) -> bool:
    """Exercise 2: tv_by_events(p, q), the largest gap over events, must equal half the L1 distance (one float).

    The learner's function has its own name so that it never replaces `total_variation`, which
    later cells of the notebook use.
    """
    return check_against("tv_by_events", fn, total_variation, total_variation_cases(), same=same_number)


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
    probs, u = np.asarray(answer[0], dtype=np.float64), answer[1]
    if probs.ndim != 1 or probs.size == 0 or not np.all(probs >= 0) or abs(probs.sum() - 1.0) > 1e-9:
        return verdict(name, f"probs must be a 1-D distribution (>= 0, summing to 1), got {show(probs)}", 1)
    if not (np.ndim(u) == 0 and 0.0 <= float(u) < 1.0):
        return verdict(name, f"u must be one number in [0, 1) (what rng.random() returns), got {show(u)}", 1)
    token = buggy_draw(probs, float(u))
    call_text = f"buggy_draw({show(probs)}, {float(u)!r}) = {token}"
    if token >= probs.size:
        print(f"✓ {name}: {call_text}, not even a token (the vocabulary has {probs.size})")
        return True
    if probs[token] == 0:
        print(f"✓ {name}: {call_text}, a token of probability 0")
        return True
    return verdict(name, f"{call_text}, which has probability {probs[token]:g} > 0: not a counterexample", 1)


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


def which_is_wrong_cases() -> list[tuple]:
    """(probs, wrong sampler, its description, where it sits: 'a' or 'b', seed)."""
    peaked = np.array([0.35, 0.25, 0.15, 0.1, 0.08, 0.04, 0.02, 0.01])  # (8,)
    tail = np.append([0.4, 0.3, 0.2], np.full(12, 0.1 / 12))  # (15,) twelve tokens below 0.01
    return [
        (peaked, never_last_sampler, "never draws the last token", "b", 11),
        (tail, tail_dropping_sampler, "drops tokens below 0.01", "a", 12),
        (peaked, too_hot_sampler, "samples at temperature 1.15", "a", 13),
        (peaked, greedy_leak_sampler, "returns the argmax 3% of the time", "b", 14),
    ]


def check_which_is_wrong(which_is_wrong) -> bool:
    """Exercise 4: which_is_wrong(sampler_a, sampler_b, probs, rng) names the wrong sampler, 'a' or 'b'."""
    name = "which_is_wrong"
    cases = which_is_wrong_cases()
    for probs, wrong, description, position, seed in cases:
        pair = (wrong, exact_sampler) if position == "a" else (exact_sampler, wrong)
        answer, error = call(which_is_wrong, (*pair, probs, np.random.default_rng(seed)))
        if error is not None:
            return verdict(name, error, len(cases))
        if answer not in ("a", "b"):
            return verdict(name, f"answer 'a' or 'b', got {show(answer)}", len(cases))
        if answer != position:
            problem = (
                f"for probs {show(probs)}, sampler_{position} {description} and sampler_{answer} is exact, "
                f"but you answered {answer!r}"
            )
            return verdict(name, problem, len(cases))
    return verdict(name, None, len(cases))
