"""Checkers for the exercises of notebook 09 (exact speculative sampling).

check_residual_distribution(fn):  fn(p, q) -> norm(max(0, p - q)) per row, p where that is all zero
check_accepts(fn):                fn(u, p_x, q_x) -> True iff the drafted token is accepted (strict u < p/q)
check_last_token(fn):             fn(p_rows, q_rows, drafts, n_accepted) -> the distribution of the token
                                  the target adds after n_accepted accepted drafts (or None for no token)

The third checker does not sample: it walks every branch of speculative decoding on small
bigram "languages" and compares the exact law of the first tokens with the target's own
autoregressive law, reporting the total variation between the two.
"""

import math

import numpy as np

from specdec.exercises import call, show, verdict
from specdec.verify import residual_distribution

JUST_BELOW_ONE = float(np.nextafter(1.0, 0.0))  # the largest value rng.random() can return


def precise(values) -> str:
    """Probabilities with 12 significant digits, so that small differences are visible."""
    values = np.asarray(values, dtype=np.float64)
    return np.array2string(
        values, precision=12, suppress_small=True, separator=", ", floatmode="maxprec", max_line_width=10**4
    )


# --- Exercise 1: the residual distribution ---------------------------------------------------


def residual_cases() -> list[tuple]:
    """(p, q) pairs: the tricky ones first, then random rows with zeros, then batches of rows."""
    cases = [
        (np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])),  # excess on token 0 only: residual one-hot
        (np.array([0.4, 0.4, 0.2, 0.0]), np.array([0.1, 0.2, 0.3, 0.4])),  # excess on two tokens
        (np.array([0.6, 0.4, 0.0, 0.0]), np.array([0.0, 0.0, 0.7, 0.3])),  # disjoint supports: residual = p
        (np.array([0.25, 0.25, 0.5]), np.array([0.25, 0.25, 0.5])),  # p == q: no excess anywhere, fall back to p
        (np.array([1.0, 0.0]), np.array([1.0, 0.0])),  # p == q, a point mass
        (np.array([0.0, 1.0]), np.array([0.5, 0.5])),  # p a point mass: residual = p
        (np.array([0.3, 0.3, 0.4]), np.array([0.5, 0.5, 0.0])),  # q has a zero where p has mass
        (np.array([0.0, 0.5, 0.5]), np.array([0.2, 0.4, 0.4])),  # p has a zero where q has mass
        (np.array([1.0]), np.array([1.0])),  # a vocabulary of one token
    ]
    rng = np.random.default_rng(9)
    for _ in range(6):
        p, q = rng.dirichlet(np.full(7, 0.5), size=2)  # (7,), (7,)
        p[rng.random(7) < 0.3] = 0.0  # some exact zeros in both
        q[rng.random(7) < 0.3] = 0.0
        p[0] += 0.05  # keep at least one token with mass
        q[1] += 0.05
        cases.append((p / p.sum(), q / q.sum()))
    p_rows = rng.dirichlet(np.ones(5), size=4)  # (4, 5)
    q_rows = rng.dirichlet(np.ones(5), size=4)  # (4, 5)
    q_rows[1] = p_rows[1]  # one row with p == q: only that row falls back to p
    q_rows[2] = [0.0, 0.0, 0.0, 0.0, 1.0]
    p_rows[2] = [0.5, 0.5, 0.0, 0.0, 0.0]  # a row with disjoint supports
    cases.append((p_rows, q_rows))
    cases.append((p_rows.reshape(2, 2, 5), q_rows.reshape(2, 2, 5)))  # two leading axes
    return cases


def compare_rows(got, expected: np.ndarray) -> tuple[tuple, str] | None:
    """None when `got` equals `expected` (float, same shape, within 1e-12), else (the first bad row, what is wrong)."""
    got = np.asarray(got)
    if got.shape != expected.shape:
        return (), f"got shape {got.shape}, expected {expected.shape}"
    if not np.issubdtype(got.dtype, np.floating):
        return (), f"got dtype {got.dtype}: return float probabilities"
    close = np.isclose(got, expected, rtol=0, atol=1e-12)
    if close.all():
        return None
    row = tuple(int(i) for i in np.argwhere(~close.all(axis=-1))[0]) if expected.ndim > 1 else ()
    if np.isnan(got[row]).any():
        return row, f"got NaN: {show(got[row])} (0 / 0 where p <= q everywhere?)"
    return row, f"expected {precise(expected[row])}, got {precise(got[row])}"


def check_residual_distribution(fn) -> bool:
    """fn(p, q) must return norm(max(0, p - q)) along the last axis, and p itself for rows with no excess."""
    cases = residual_cases()
    for p, q in cases:
        got, error = call(fn, (p.copy(), q.copy()))
        if error is None:
            problem = compare_rows(got, residual_distribution(p, q))
            if problem is not None:
                row, what = problem
                where = f"row {row[0] if len(row) == 1 else row} of a batch of shape {p.shape}: " if row else ""
                error = f"for {where}p = {show(p[row])}, q = {show(q[row])}: {what}"
        if error is not None:
            return verdict("residual_distribution", error, len(cases))
    return verdict("residual_distribution", None, len(cases))


# --- Exercise 2: the acceptance test ---------------------------------------------------------


def accepts_cases() -> list[tuple]:
    """(u, p_x, q_x, expected): the boundaries of u < p/q, where the strict inequality matters."""
    return [
        (0.0, 0.0, 0.3, False),  # p(x) = 0: never accept, not even with u = 0
        (0.0, 0.0, 1.0, False),
        (0.5, 0.3, 0.3, True),  # p(x) = q(x): always accept
        (JUST_BELOW_ONE, 0.3, 0.3, True),
        (0.0, 0.3, 0.3, True),
        (JUST_BELOW_ONE, 0.9, 0.1, True),  # the target likes x more than the draft: always accept
        (0.5, 0.25, 0.5, False),  # u exactly on p/q = 0.5: strict, so reject
        (0.49, 0.25, 0.5, True),
        (0.51, 0.25, 0.5, False),
        (0.6, 0.3, 0.5, False),  # 0.3 / 0.5 == 0.6 in floating point too
        (0.2, 0.01, 0.8, False),
        (0.01, 0.01, 0.8, True),
        (JUST_BELOW_ONE, 1.0, 1.0, True),
    ]


U_GRID = (np.arange(1000) + 0.5) / 1000  # (1000,) midpoints: the fraction below r is within 0.001 of r


def acceptance_frequency_cases() -> list[tuple]:
    """(p_x, q_x) pairs whose acceptance frequency over U_GRID must be min(1, p_x / q_x)."""
    return [(0.1, 0.4), (0.4, 0.1), (0.35, 0.5), (0.02, 0.9), (0.3, 0.3), (0.0, 0.5), (0.6, 0.75)]


def is_bool(value) -> bool:
    return isinstance(value, bool | np.bool_)


def check_accepts(fn) -> bool:
    """fn(u, p_x, q_x) must return u < p_x / q_x as a bool (strict; p_x = 0 never accepts)."""
    cases = accepts_cases()
    frequency_cases = acceptance_frequency_cases()
    n_cases = len(cases) + len(frequency_cases)
    for u, p_x, q_x, expected in cases:
        got, error = call(fn, (u, p_x, q_x))
        if error is None and not is_bool(got):
            error = f"for u = {u!r}, p_x = {p_x}, q_x = {q_x} got {show(got)}: return a bool (True = accept)"
        elif error is None and bool(got) != expected:
            ratio = p_x / q_x
            error = f"for u = {u!r}, p_x = {p_x}, q_x = {q_x} (p/q = {ratio:.6g}) expected {expected}, got {bool(got)}"
        if error is not None:
            return verdict("accepts", error, n_cases)
    for p_x, q_x in frequency_cases:
        answers = []
        for u in U_GRID:
            got, error = call(fn, (float(u), p_x, q_x))
            if error is not None:
                return verdict("accepts", error, n_cases)
            answers.append(bool(got))
        frequency, expected = float(np.mean(answers)), min(1.0, p_x / q_x)
        if abs(frequency - expected) > 0.0011:
            failure = (
                f"for p_x = {p_x}, q_x = {q_x} it accepts for {frequency:.3f} of the u in [0, 1), "
                f"expected min(1, p/q) = {expected:.3f}"
            )
            return verdict("accepts", failure, n_cases)
    return verdict("accepts", None, n_cases)


# --- Exercise 3: spot the bug, the token the target adds --------------------------------------

# Small bigram "languages": P[a] is the target's distribution of the token after token a, Q[a]
# the draft's. Every context has a tricky feature: zeros on one side, disjoint supports, p == q.
WORLDS = {
    "three tokens": (
        np.array([[0.60, 0.30, 0.10], [0.20, 0.00, 0.80], [0.25, 0.50, 0.25]]),
        np.array([[0.40, 0.60, 0.00], [0.30, 0.30, 0.40], [0.25, 0.50, 0.25]]),
    ),
    "four tokens": (
        np.array([[0.0, 0.5, 0.5, 0.0], [0.1, 0.2, 0.3, 0.4], [0.7, 0.0, 0.0, 0.3], [0.25, 0.25, 0.25, 0.25]]),
        np.array([[0.6, 0.0, 0.0, 0.4], [0.1, 0.2, 0.3, 0.4], [0.2, 0.3, 0.3, 0.2], [0.05, 0.05, 0.1, 0.8]]),
    ),
}
N_TOKENS = 3  # the law of the first three emitted tokens is compared
START = 0  # the prompt ends with token 0


def target_law(P: np.ndarray, start: int, n: int) -> dict[tuple, float]:
    """{(t1, ..., tn): probability} of sampling n tokens from the target, one at a time."""
    law = {(): 1.0}
    for _ in range(n):
        law = {seq + (t,): prob * P[seq[-1] if seq else start, t] for seq, prob in law.items() for t in range(len(P))}
    return {seq: prob for seq, prob in law.items() if prob > 0}


class Stall(Exception):
    """A round that can never emit a token: generation would loop forever."""


def round_law(fn, P: np.ndarray, Q: np.ndarray, context: int, gamma: int) -> dict[tuple, float]:
    """{emitted tokens: probability} of one round from `context`, walking every branch.

    The drafts x_1..x_gamma are drawn from Q (x_i from the row of the token before it); each is
    accepted with probability min(1, p/q) given the ones before (fresh uniforms), so exactly
    k are accepted with probability a_1...a_k (1 - a_(k+1)). fn says which distribution the
    target's extra token comes from after k accepted drafts (None: no extra token).
    """
    vocab = len(P)
    law: dict[tuple, float] = {}
    drafts_law = {(): 1.0}
    for _ in range(gamma):
        drafts_law = {
            seq + (x,): prob * Q[seq[-1] if seq else context, x]
            for seq, prob in drafts_law.items()
            for x in range(vocab)
            if Q[seq[-1] if seq else context, x] > 0
        }
    for drafts, prob in drafts_law.items():
        contexts = (context, *drafts)  # contexts[i]: the token before position i
        p_rows, q_rows = P[list(contexts)], Q[list(contexts[:-1])]  # (gamma + 1, V), (gamma, V)
        ratios = [min(1.0, P[c, x] / Q[c, x]) for c, x in zip(contexts, drafts, strict=False)]
        for k in range(gamma + 1):
            p_k = math.prod(ratios[:k]) * (1 - ratios[k] if k < gamma else 1.0)
            if p_k == 0:
                continue
            last, error = call(fn, (p_rows.copy(), q_rows.copy(), np.array(drafts), k))
            if error is not None:
                raise ValueError(error)
            if last is not None:
                last = np.asarray(last, dtype=np.float64)
                if last.shape != (vocab,) or not (last >= 0).all() or abs(last.sum() - 1) > 1e-9:
                    raise ValueError(
                        f"for drafts {show(np.array(drafts))} and n_accepted = {k} it returned {show(last)}, "
                        f"not a distribution over {vocab} tokens (or None)"
                    )
            emitted = drafts[:k]
            if last is None:
                law[emitted] = law.get(emitted, 0.0) + prob * p_k
            else:
                for t in np.flatnonzero(last).tolist():
                    law[emitted + (t,)] = law.get(emitted + (t,), 0.0) + prob * p_k * last[t]
    return law


def sequence_law(fn, P: np.ndarray, Q: np.ndarray, context: int, n: int, gamma: int) -> dict[tuple, float]:
    """{first n emitted tokens: probability}, composing rounds. A round that emits nothing
    leaves everything as it was, so the next round is the same: condition on emitting something."""
    one_round = round_law(fn, P, Q, context, gamma)
    empty = one_round.pop((), 0.0)
    if empty > 1 - 1e-12:
        raise Stall(f"from context {context} a round never emits a token: generation would loop forever")
    law: dict[tuple, float] = {}
    for emitted, prob in one_round.items():
        prob /= 1 - empty
        if len(emitted) >= n:
            law[emitted[:n]] = law.get(emitted[:n], 0.0) + prob
        else:
            for rest, prob_rest in sequence_law(fn, P, Q, emitted[-1], n - len(emitted), gamma).items():
                law[emitted + rest] = law.get(emitted + rest, 0.0) + prob * prob_rest
    return law


def law_gap(fn, world: str, gamma: int) -> tuple[float, float, tuple, float, float]:
    """(total variation, max |difference|, the worst sequence, its probability, the target's)."""
    P, Q = WORLDS[world]
    got = sequence_law(fn, P, Q, START, N_TOKENS, gamma)
    want = target_law(P, START, N_TOKENS)
    keys = set(got) | set(want)
    gaps = {k: got.get(k, 0.0) - want.get(k, 0.0) for k in keys}
    worst = max(sorted(keys), key=lambda k: abs(gaps[k]))
    tv = 0.5 * sum(abs(g) for g in gaps.values())
    return tv, abs(gaps[worst]), worst, got.get(worst, 0.0), want.get(worst, 0.0)


def check_last_token(fn) -> bool:
    """fn(p_rows, q_rows, drafts, n_accepted) must make the emitted tokens follow the target exactly.

    For each small world and gamma in 1, 2, 3, the exact law of the first three emitted tokens
    (every branch walked, rounds composed) must equal the target's within 1e-9.
    """
    cases = [(world, gamma) for world in WORLDS for gamma in (1, 2, 3)]
    for world, gamma in cases:
        try:
            tv, gap, worst, got, want = law_gap(fn, world, gamma)
        except (ValueError, Stall) as error:
            message = str(error)
            if message.startswith("not attempted yet"):
                return verdict("last_token", message, len(cases))
            return verdict("last_token", f"in the {world} world with gamma = {gamma}: {message}", len(cases))
        if gap > 1e-9:
            names = "".join("abcd"[t] for t in worst)
            failure = (
                f"in the {world} world with gamma = {gamma}, the first {N_TOKENS} tokens follow a law at total "
                f"variation {tv:.4f} from the target's: e.g. P({names!r}) = {got:.4f} instead of {want:.4f}"
            )
            return verdict("last_token", failure, len(cases))
    return verdict("last_token", None, len(cases))
