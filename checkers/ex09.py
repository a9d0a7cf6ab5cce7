"""Checkers for the exercises of notebook 09 (exact speculative sampling).

check_residual_distribution(fn):  fn(p, q) -> norm(max(0, p - q)) per row, p where that is all zero
check_accepts(fn):                fn(u, p_x, q_x) -> True iff the drafted token is accepted (strict u < p/q)
check_last_token(fn):             fn(p_rows, q_rows, drafts, n_accepted) -> the distribution of the token
                                  the target adds after n_accepted accepted drafts (or None for no token)
check_speculative_verify(fn):     fn(draft_tokens, draft_probs, target_probs, rng) -> (emitted, n_accepted),
                                  speculative_verify's contract

check_residual_distribution names the usual wrong residuals (not normalised, normalised over the
whole batch, |p - q|, max(0, q - p), zeros or another fallback where p <= q everywhere) before
showing the arrays. check_accepts names a non-strict test (u <= p/q) as such.

check_last_token does not sample: it walks every branch of speculative decoding on two small
bigram "languages" (three and four tokens) and compares the exact law of the first tokens with
the target's own autoregressive law, reporting the total variation between the two and the first
branch that differs.

check_speculative_verify checks every output against what the rule allows (the accepted prefix,
a last token the residual or the bonus row can produce, the lengths, no rejected draft whose
ratio p/q is at least 1), that the inputs are left as they were, that equal seeds give equal
outputs (all randomness from the rng argument), feeds uniforms that are all 0.0 (and counts that
they are used), then uniforms 0.99, 0.0, 0.0, ... (a loop that goes on testing after a rejection
shows), and compares the law of the emitted block over a few thousand calls, on two seeds, with its
exact law (enumerated here), by chi-square tests; a law that fits a known shortcut (one uniform
per round, the bonus from another row) is named first.
A function that calls the reference its exercise asks for (`residual_distribution`;
`speculative_verify` and `verify_drawn`) is refused: `checkers.attempt` watches the calls, and
nothing in specdec or in the learner's namespace is replaced. A float32 answer is told so, with
its cure (compute in float64), whether it comes from float32 rows or from float32 arithmetic.

The notebook numbers its exercises in reading order: 1 the acceptance test (optional, a warm-up in
section 3), 2 the residual distribution and 3 the block verifier (core), then the optional 4 spot
the bug (the last token), whose demo calls `compare_last_token` (the gap, not the fix).
"""

import math
import operator
import warnings

import numpy as np

import specdec
from checkers import call, located, namesakes, result_problem, show, verdict
from specdec import speculative, verify
from specdec.drawing import chi_square_test
from specdec.exact import Rule, bigram, target_law, text_law
from specdec.verify import residual_distribution

JUST_BELOW_ONE = float(np.nextafter(1.0, 0.0))  # the largest value rng.random() can return


def precise(values) -> str:
    """Probabilities with 12 significant digits, so that small differences are visible."""
    values = np.asarray(values, dtype=np.float64)
    return np.array2string(
        values, precision=12, suppress_small=True, separator=", ", floatmode="maxprec", max_line_width=10**4
    )


# --- Exercise 2: the residual distribution ------------------------------------------------------


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
    p32, q32 = rng.dirichlet(np.ones(6), size=2).astype(np.float32)  # float32 rows: the result is still float64
    cases.append((p32, q32))
    p_rows = rng.dirichlet(np.ones(5), size=4)  # (4, 5)
    q_rows = rng.dirichlet(np.ones(5), size=4)  # (4, 5)
    q_rows[1] = p_rows[1]  # one row with p == q: only that row falls back to p
    q_rows[2] = [0.0, 0.0, 0.0, 0.0, 1.0]
    p_rows[2] = [0.5, 0.5, 0.0, 0.0, 0.0]  # a row with disjoint supports
    cases.append((p_rows, q_rows))
    cases.append((p_rows.reshape(2, 2, 5), q_rows.reshape(2, 2, 5)))  # two leading axes
    return cases


def lower_precision(got, given_dtype, name: str = "p") -> str | None:
    """A floating answer of less than float64 precision, said with its cure; None for any other answer.

    The cure is the same whatever the cause (float32 rows kept as they came, float32 arithmetic, a cast
    at the end): compute in float64 from the start. Casting a float32 answer to float64 at the end
    keeps its float32 rounding, so "only the dtype is wrong" would send the learner one step too short.
    """
    got = np.asarray(got) if isinstance(got, np.generic) else got
    if not (isinstance(got, np.ndarray) and got.dtype.kind == "f" and got.dtype.itemsize < 8):
        return None
    rows = f", even for {given_dtype} rows" if given_dtype != np.float64 else ""
    return (
        f"your function returned {got.dtype} probabilities where float64 is asked (compute in float64,"
        f" np.asarray({name}, dtype=np.float64){rows}: {got.dtype} holds about {np.finfo(got.dtype).precision}"
        " digits, and casting the answer at the end keeps its rounding)"
    )


def normalised(values: np.ndarray) -> np.ndarray:
    """values / their sum along the last axis (0 where the sum is 0)."""
    total = values.sum(axis=-1, keepdims=True)
    return values / np.where(total > 0, total, 1.0)


def compare_rows(got: np.ndarray, expected: np.ndarray, p, q) -> tuple[tuple, str] | None:
    """None when `got` equals `expected` within 1e-12, else (the first bad row, what is wrong with it, said first).

    dtype and shape are right. Named: float32 precision, NaN, a row with no excess that is not p, |p - q|,
    max(0, q - p), and a row that does not sum to 1 (with the whole batch normalised at once said so).
    """
    close = np.isclose(got, expected, rtol=0, atol=1e-12)
    if close.all():
        return None
    if np.allclose(got, expected, rtol=0, atol=1e-6):
        off = float(np.max(np.abs(got - expected)))
        return (), (
            f"the values are right only to about {off:.0e}: float32 arithmetic somewhere? compute in float64, "
            "e.g. np.asarray(p, dtype=np.float64)"
        )
    row = tuple(int(i) for i in np.argwhere(~close.all(axis=-1))[0]) if expected.ndim > 1 else ()
    mine, p_row, q_row = got[row], np.asarray(p[row], dtype=np.float64), np.asarray(q[row], dtype=np.float64)
    which = f"row {row[0] if len(row) == 1 else row} of your output" if row else "your output"
    if np.isnan(mine).any():
        return row, f"got NaN: {show(mine)} (0 / 0 where p <= q everywhere?)"
    if not (p_row > q_row).any():  # no excess: the row must fall back to p
        if not mine.any():
            return row, f"a row with p <= q everywhere must return p, not zeros: got {show(mine)}"
        return row, f"a row with p <= q everywhere (no excess to normalise) must return p itself: got {show(mine)}"
    if np.allclose(mine, normalised(np.abs(p_row - q_row)), rtol=0, atol=1e-9):
        return row, (
            f"your output is norm(|p - q|), {show(mine)}: the absolute value also counts the tokens where q"
            " exceeds p, which acceptance already over-delivers; keep only max(0, p - q)"
        )
    if np.allclose(mine, normalised(np.maximum(q_row - p_row, 0.0)), rtol=0, atol=1e-9):
        return row, (
            f"your output is norm(max(0, q - p)), {show(mine)}: that is where the draft over-offers; the residual"
            " is where the target wants more, max(0, p - q)"
        )
    total = float(mine.sum())
    if abs(total - 1.0) > 1e-9:
        if got.ndim == 1:
            return (
                row,
                f"{which} sums to {total:.2f}, not 1: divide max(0, p - q) by its sum, so that it is a distribution",
            )
        whole = ", not by the whole batch's" if abs(float(got.sum()) - 1.0) < 1e-9 else ""
        return row, (
            f"{which} sums to {total:.2f}, not 1: normalise each row by its own excess"
            f" (sum(axis=-1, keepdims=True)){whole}"
        )
    return row, f"expected {precise(expected[row])}, got {precise(mine)}"


def refused_in(fn, names: tuple[str, ...]) -> dict:
    """specdec's references `names` (and the notebook's copies, any alias): a function that calls one is refused."""
    return namesakes(fn, names, specdec, verify, speculative)


ASKED = "the function this exercise asks you to write yourself"


def check_residual_distribution(fn) -> bool:
    """fn(p, q) must return norm(max(0, p - q)) along the last axis (float64), and p itself for rows with no excess.

    It must leave p and q as they were and compute without a RuntimeWarning (a 0 / 0 in the
    branch np.where throws away still warns).
    """
    cases = residual_cases()
    refused = refused_in(fn, ("residual_distribution",))
    for p, q in cases:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            with np.errstate(divide="warn", invalid="warn"):
                got, error = call(fn, (p, q), refused=refused, why=ASKED, in_place=RESIDUAL_COPY)
        given = f" (given as {p.dtype} rows)" if p.dtype != np.float64 else ""
        where = f"for p = {show(p)}, q = {show(q)}{given}"
        expected = residual_distribution(p, q)
        if error is None:
            error = lower_precision(got, p.dtype) or result_problem(got, expected, "probabilities")
        if error is None and (problem := compare_rows(got, expected, p, q)) is not None:
            row, what = problem
            if row:
                where = f"for row {row[0] if len(row) == 1 else row} of a batch of shape {p.shape}: p = {show(p[row])}"
                where += f", q = {show(q[row])}{given}"
            error = what
        runtime = [w for w in caught if issubclass(w.category, RuntimeWarning)]
        if error is None and runtime:
            error = (
                f"the values are right, but your function warns (RuntimeWarning: {runtime[0].message}): np.where"
                " computes both branches, so a row with no excess still divides 0 by 0 in the branch it throws"
                " away; divide by a safe denominator, np.where(mass > 0, mass, 1.0)"
            )
        if error is not None:
            return verdict("residual_distribution", located(error, where), len(cases))
    return verdict("residual_distribution", None, len(cases))


# --- Exercise 1 (optional): the acceptance test -----------------------------------------------


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


def float32_hint(u: float, p_x: float, q_x: float, got: bool) -> str:
    """A hint when float32 arithmetic gives the answer `got` on these inputs (and float64 does not), else ""."""
    if bool(np.float32(u) < np.float32(p_x) / np.float32(q_x)) != got:
        return ""
    if u < 1.0 and float(np.float32(u)) == 1.0:
        return f": float32 rounds u = {u!r} up to 1.0; compare in float64 (Python floats are float64)"
    return ": in float32 this comparison gives that answer; compare in float64 (Python floats are float64)"


def check_accepts(fn) -> bool:
    """fn(u, p_x, q_x) must return u < p_x / q_x as a bool (strict; p_x = 0 never accepts)."""
    cases = accepts_cases()
    frequency_cases = acceptance_frequency_cases()
    n_cases = len(cases) + len(frequency_cases)
    for u, p_x, q_x, expected in cases:
        got, error = call(fn, (u, p_x, q_x))
        where = f"for u = {u!r}, p_x = {p_x}, q_x = {q_x}, p/q = {p_x / q_x:.6g}"
        if error is None and not is_bool(got):
            error = f"your function returned {show(got)}: return a bool (True = accept)"
        elif error is None and bool(got) != expected:
            error = f"expected {expected}, got {bool(got)}{float32_hint(u, p_x, q_x, bool(got))}"
            if got and u == p_x / q_x:  # u <= p/q
                strict = "a token the target forbids when u = 0" if p_x == 0 else "u equal to p/q"
                error = f"the test must be strict: u <= p/q accepts {strict} ({error})"
        if error is not None:
            return verdict("accepts", located(error, where), n_cases)
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
                f"your function accepts for {frequency:.3f} of the u in [0, 1), where min(1, p/q) = {expected:.3f}"
                f" is asked (for p_x = {p_x}, q_x = {q_x}, u on a grid of {U_GRID.size} values)"
            )
            return verdict("accepts", failure, n_cases)
    return verdict("accepts", None, n_cases)


# --- Exercise 4 (optional): spot the bug, the token the target adds ---------------------------

# Small bigram "languages": P[a] is the target's distribution of the token after token a, Q[a]
# the draft's. Every context has a tricky feature: zeros on one side, disjoint supports, p == q.
WORLDS = {
    "a three-token bigram language": (
        np.array([[0.60, 0.30, 0.10], [0.20, 0.00, 0.80], [0.25, 0.50, 0.25]]),
        np.array([[0.40, 0.60, 0.00], [0.30, 0.30, 0.40], [0.25, 0.50, 0.25]]),
    ),
    "a four-token bigram language": (
        np.array([[0.0, 0.5, 0.5, 0.0], [0.1, 0.2, 0.3, 0.4], [0.7, 0.0, 0.0, 0.3], [0.25, 0.25, 0.25, 0.25]]),
        np.array([[0.6, 0.0, 0.0, 0.4], [0.1, 0.2, 0.3, 0.4], [0.2, 0.3, 0.3, 0.2], [0.05, 0.05, 0.1, 0.8]]),
    ),
}
N_TOKENS = 3  # the law of the first three emitted tokens is compared
START = 0  # the prompt ends with token 0


class LastTokenRule:
    """Notebook 09's rule with the learner's function for the token the target adds, for specdec.exact's walk.

    The drafts come from q and are accepted with probability min(1, p/q) each (fresh uniforms:
    exactly k are accepted with probability a_1...a_k (1 - a_(k+1))); fn(p_rows, q_rows, drafts, k)
    says which distribution the target's extra token comes from after k accepted drafts (None: no
    extra token). A call that fails the course's policy, or an answer that is not a distribution,
    raises ValueError with the diagnosis.
    """

    def __init__(self, fn):
        self.fn = fn

    def draft_law(self, p, q) -> np.ndarray:
        return q

    def verify_law(self, drafts: tuple, q_rows, p_rows) -> dict:
        gamma, vocab = len(drafts), p_rows.shape[1]
        ratios = [min(1.0, p_rows[i, x] / q_rows[i, x]) for i, x in enumerate(drafts)]
        law: dict[tuple, float] = {}
        for k, p_k in enumerate(Rule().acceptance_law(ratios)):
            if p_k == 0:
                continue
            last, error = call(self.fn, (p_rows, q_rows, np.array(drafts), k))
            where = f"for drafts {show(np.array(drafts))} and n_accepted = {k}"
            if error is not None:
                raise ValueError(error)
            if last is None and k == gamma:
                raise ValueError(
                    f"your function returned None after all {gamma} drafts were accepted: the bonus token is missing."
                    f" The target's call already computed the row after the last draft, p_rows[{gamma}] ="
                    f" {show(p_rows[gamma])}; a token drawn from it costs nothing more ({where})"
                )
            right, _ = exact_last_token(p_rows, q_rows, k)
            kind = None
            if last is not None:
                kind = lower_precision(last, p_rows.dtype, "p_rows") or result_problem(
                    last, right, "probabilities", shape=False
                )
            if kind is not None:
                raise ValueError(located(kind, where))
            if last is not None:
                last = np.asarray(last, dtype=np.float64)
                if last.shape == right.shape and 1e-9 < np.max(np.abs(last - right)) <= 1e-6:
                    off = float(np.max(np.abs(last - right)))
                    raise ValueError(
                        f"your function's distribution is right only to about {off:.0e}: float32 arithmetic"
                        f" somewhere? compute in float64, e.g. np.asarray(p_rows, dtype=np.float64) ({where})"
                    )
                if last.shape != (vocab,) or not (last >= 0).all() or abs(last.sum() - 1) > 1e-9:
                    raise ValueError(
                        f"your function returned {show(last)}, not a distribution over {vocab} tokens (or None)"
                        f" ({where})"
                    )
            emitted = drafts[:k]
            if last is None:
                law[emitted] = law.get(emitted, 0.0) + p_k
            else:
                for t in np.flatnonzero(last).tolist():
                    law[emitted + (t,)] = law.get(emitted + (t,), 0.0) + p_k * last[t]
        return law


def exact_last_token(p_rows, q_rows, n_accepted: int) -> tuple[np.ndarray, str]:
    """The distribution the exact rule draws the last token from, and what it is, in words."""
    gamma = len(q_rows)
    if n_accepted == gamma:
        return p_rows[gamma], f"p_rows[{gamma}], the target's row after the last draft"
    return residual_distribution(p_rows[n_accepted], q_rows[n_accepted]), (
        f"the residual norm(max(0, p - q)) of row {n_accepted}"
    )


def first_wrong_branch(fn, P: np.ndarray, Q: np.ndarray, gamma: int, reveal: bool = True) -> str | None:
    """The first branch of a round (every context, every draft sequence, every n_accepted that can
    happen) where fn's distribution differs from the exact rule's, in words; None if there is none.

    reveal=False leaves out what the exact rule draws there (the exercise's answer)."""
    vocab = len(P)
    letters = "abcd"
    for context in [START, *(c for c in range(vocab) if c != START)]:
        for drafts in np.ndindex(*(vocab,) * gamma):
            contexts = (context, *drafts)
            if any(Q[c, x] == 0 for c, x in zip(contexts, drafts, strict=False)):
                continue  # the draft never proposes this sequence
            ratios = [min(1.0, P[c, x] / Q[c, x]) for c, x in zip(contexts, drafts, strict=False)]
            p_rows, q_rows = P[list(contexts)], Q[list(contexts[:-1])]
            for k in range(gamma + 1):
                if math.prod(ratios[:k]) * (1 - ratios[k] if k < gamma else 1.0) == 0:
                    continue  # this many accepted drafts cannot happen here
                got, error = call(fn, (p_rows, q_rows, np.array(drafts), k))
                want, what = exact_last_token(p_rows, q_rows, k)
                if error is None and got is not None:
                    got = np.asarray(got, dtype=np.float64)
                    if got.shape == want.shape and np.allclose(got, want, rtol=0, atol=1e-9):
                        continue
                case = f"all {gamma} accepted: the bonus" if k == gamma else f"drafts[{k}] rejected"
                returned = error if error is not None else "None" if got is None else show(got)
                branch = (
                    f"The first branch where it differs from the exact rule: after {letters[context]!r}, drafts "
                    f"{''.join(letters[x] for x in drafts)!r} with n_accepted = {k} ({case}): it returned {returned}"
                )
                return f"{branch}; the rule draws that token from {what}, {show(want)}" if reveal else branch
    return None


def law_gap(fn, world: str, gamma: int) -> tuple[float, float, tuple, float, float]:
    """(total variation, max |difference|, the worst sequence, its probability, the target's)."""
    P, Q = WORLDS[world]
    target, draft = bigram(P), bigram(Q)
    got = text_law(LastTokenRule(fn), target, draft, (START,), gamma, N_TOKENS)  # (V,) * N_TOKENS
    want = target_law(target, (START,), N_TOKENS)  # (V,) * N_TOKENS
    gaps = got - want
    worst = np.unravel_index(np.argmax(np.abs(gaps)), gaps.shape)  # the first of the largest gaps
    tv = 0.5 * float(np.abs(gaps).sum())
    return tv, float(abs(gaps[worst])), tuple(int(t) for t in worst), float(got[worst]), float(want[worst])


LAST_TOKEN_CASES = [(world, gamma) for world in WORLDS for gamma in (1, 2, 3)]


def last_token_failure(fn, reveal: bool = True) -> str | None:
    """The first world and gamma where fn's law of the first tokens is not the target's, in words; else None."""
    for world, gamma in LAST_TOKEN_CASES:
        where = f"in {world} with gamma = {gamma}"
        try:
            tv, gap, worst, got, want = law_gap(fn, world, gamma)
        except ValueError as error:
            return located(str(error), where)
        if gap > 1e-9:
            names = "".join("abcd"[t] for t in worst)
            branch = first_wrong_branch(fn, *WORLDS[world], gamma, reveal) or (
                "Each branch returns what the exact rule draws from, but the rounds do not add up to the target"
            )
            return (
                f"the first {N_TOKENS} tokens follow a law at total variation {tv:.4f} from the target's, e.g."
                f" P({names!r}) = {got:.4f} instead of {want:.4f} ({where}). {branch}"
            )
    return None


def check_last_token(fn) -> bool:
    """fn(p_rows, q_rows, drafts, n_accepted) must make the emitted tokens follow the target exactly.

    For each small world and gamma in 1, 2, 3, the exact law of the first three emitted tokens
    (every branch walked, rounds composed) must equal the target's within 1e-9.
    """
    return verdict("last_token", last_token_failure(fn), len(LAST_TOKEN_CASES))


def compare_last_token(fn) -> bool:
    """check_last_token without the answer: the gap and the first wrong branch, not what the rule draws there.

    For the exercise's demo, which runs the blog's rule before the learner writes the fix.
    """
    return verdict("last_token", last_token_failure(fn, reveal=False), len(LAST_TOKEN_CASES))


# --- Exercise 3: the block verifier -----------------------------------------------------------


class ScriptedUniforms(np.random.Generator):
    """A Generator whose `random` and `uniform` hand out the values of `script` in order, then 0.0 every time.

    rng.random() can return 0.0 (with probability 2^-53 per call): with an empty script it always
    does, so the strictness of u < p/q shows; a script of (0.99,) rejects the first draft whose ratio
    is below 0.99 and accepts every later one. `drawn` counts the uniforms handed out, so a function
    that takes its uniforms elsewhere (np.random.rand(), a generator of its own) is seen. Every
    other method draws as usual.
    """

    def __init__(self, script=(), seed: int = 0):
        super().__init__(np.random.PCG64(seed))
        self.script, self.drawn = tuple(script), 0

    def next_values(self, size):
        count = 1 if size is None else math.prod(np.atleast_1d(size).tolist())
        values = [self.script[i] if i < len(self.script) else 0.0 for i in range(self.drawn, self.drawn + count)]
        self.drawn += count
        return values[0] if size is None else np.array(values, dtype=np.float64).reshape(size)

    def random(self, size=None, dtype=np.float64, out=None):
        return self.next_values(size)

    def uniform(self, low=0.0, high=1.0, size=None):
        return low + (high - low) * self.next_values(size)


def verify_case(drafts, q_rows, p_rows) -> tuple:
    """(draft_tokens (gamma,), draft_probs (gamma, V), target_probs (gamma + 1, V)) as the contract asks."""
    tokens = np.array(drafts, dtype=np.int64).reshape(-1)
    vocab = len(p_rows[0])
    return tokens, np.array(q_rows, dtype=np.float64).reshape(-1, vocab), np.array(p_rows, dtype=np.float64)


# Each ratio p_i(x_i) / q_i(x_i) is given in a comment; a_i = min(1, ratio) is P(keep draft i).
VERIFY_CASES = {
    "every ratio >= 1, so every draft is accepted": verify_case(
        [1, 0],
        [[0.5, 0.3, 0.2], [0.5, 0.25, 0.25]],  # ratios 0.5 / 0.3 and 0.6 / 0.5: both > 1
        [[0.3, 0.5, 0.2], [0.6, 0.2, 0.2], [0.2, 0.3, 0.5]],
    ),
    "a rejection in the middle": verify_case(
        [1, 2, 0],
        [[0.1, 0.6, 0.2, 0.1], [0.2, 0.2, 0.4, 0.2], [0.25, 0.25, 0.25, 0.25]],  # ratios 0.5, 0.5, 0.4
        [[0.4, 0.3, 0.3, 0.0], [0.25, 0.45, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4], [0.5, 0.1, 0.1, 0.3]],
    ),
    "mostly accepted, with a bonus": verify_case(
        [1, 0],
        [[0.5, 0.3, 0.2], [0.5, 0.25, 0.25]],  # ratios 5/3 and 0.8
        [[0.3, 0.5, 0.2], [0.4, 0.2, 0.4], [0.2, 0.3, 0.5]],
    ),
    "a draft the target forbids": verify_case(
        [0, 1],
        [[0.5, 0.5, 0.0], [0.3, 0.4, 0.3]],  # ratios 1.2 and 0: the second draft must always be rejected
        [[0.6, 0.4, 0.0], [0.5, 0.0, 0.5], [0.2, 0.3, 0.5]],
    ),
    "no drafts at all (gamma = 0)": verify_case([], np.zeros((0, 3)), [[0.2, 0.3, 0.5]]),
}
STATISTICAL = ("a rejection in the middle", "mostly accepted, with a bonus", "a draft the target forbids")
SEEDS, CALLS = (1, 2), 1500  # calls per seed and case
P_FAIL = 1e-6  # a right answer fails one test with at most this probability


def acceptance_ratios(tokens, q_rows, p_rows) -> np.ndarray:
    """a_i = min(1, p_i(x_i) / q_i(x_i)), the probability that draft i is kept given the ones before."""
    rows = np.arange(tokens.size)
    return np.minimum(1.0, p_rows[rows, tokens] / q_rows[rows, tokens])  # (gamma,)


def block_text(tokens, q_rows, p_rows) -> str:
    """The three inputs on one line, as lists."""
    return (
        f"draft_tokens = {tokens.tolist()}, draft_probs = {np.round(q_rows, 6).tolist()}, "
        f"target_probs = {np.round(p_rows, 6).tolist()}"
    )


def allowed_last_tokens(tokens, q_rows, p_rows) -> list[np.ndarray]:
    """For n = 0..gamma: the distribution the last token comes from after n accepted drafts."""
    return [exact_last_token(p_rows, q_rows, n)[0] for n in range(tokens.size + 1)]


def read_output(got, tokens, q_rows, p_rows, lasts, zero_uniforms: bool = False) -> tuple[tuple | None, str | None]:
    """(the emitted tokens as a tuple, None), or (None, why this output is impossible under the rule).

    lasts: allowed_last_tokens(tokens, q_rows, p_rows), computed once per case; None: the last token
    is not checked (with all uniforms 0.0 a sampler may legitimately misbehave, e.g. -log(0)).
    """
    gamma = tokens.size
    if not (isinstance(got, tuple | list) and len(got) == 2):
        return None, f"returned {show(got)}: return a pair (emitted tokens, n_accepted)"
    emitted, n = got
    if isinstance(n, bool | np.bool_):
        return None, f"returned n_accepted = {n!r}: return the number of accepted drafts, an int"
    try:
        n = operator.index(n)
    except TypeError:
        return None, f"returned n_accepted = {show(n)}: return the number of accepted drafts, an int"
    kind = result_problem(emitted, np.zeros(0, dtype=np.int64), "emitted tokens", shape=False)
    if kind is not None:
        return None, f"{kind}, as speculative_verify returns (np.append(draft_tokens[:n], last).astype(np.int64))"
    if emitted.ndim != 1:
        return None, f"returned emitted of shape {emitted.shape}: a 1-D array of token ids is asked"
    if not 0 <= n <= gamma:
        return None, f"returned n_accepted = {n}, but there are {gamma} drafts"
    if n == gamma and emitted.size == gamma:
        return None, (
            f"returned emitted = {show(emitted)} with n_accepted = {n}: after all {gamma} drafts are accepted "
            f"the bonus token, drawn from target_probs[{gamma}], is missing (emitted has length n_accepted + 1)"
        )
    if emitted.size != n + 1:
        return None, f"returned emitted = {show(emitted)} with n_accepted = {n}: emitted must have length n + 1"
    if not np.array_equal(emitted[:n], tokens[:n]):
        return None, prefix_problem(emitted, n, tokens)
    last = int(emitted[-1])
    vocab = p_rows.shape[1]
    if not 0 <= last < vocab:
        return None, f"returned emitted = {show(emitted)}: token {last} is not in the vocabulary of {vocab}"
    forbidden = [i for i in range(n) if p_rows[i, tokens[i]] == 0]
    if forbidden:
        i = forbidden[0]
        if zero_uniforms:
            why = (
                "the test must be strict: u <= p/q accepts a token the target forbids when u = 0. With every uniform"
                f" equal to 0.0 (rng.random() can return 0.0) your function accepted draft {i} (token {tokens[i]}),"
                f" which target_probs row {i} gives probability 0 (n_accepted = {n}); keep a draft iff u < p/q"
            )
        else:
            why = (
                f"it accepted draft {i} (token {tokens[i]}), which target_probs row {i} gives probability 0 "
                f"(n_accepted = {n}): its acceptance probability min(1, p/q) is 0, so it must always be rejected"
            )
        return None, why
    if n < gamma and (acceptance_ratios(tokens, q_rows, p_rows) >= 1).all():
        return None, (
            f"every ratio p/q is >= 1 here, so all {gamma} drafts are accepted (n_accepted = {gamma}, then a bonus"
            f" token); your function returned n_accepted = {n}, emitted = {show(emitted)}"
            + (". Note that np.argmin of an all-True array is 0" if n == 0 else "")
            + (f". After a full accept n_accepted is {gamma}, not the last index {gamma - 1}" if n == gamma - 1 else "")
        )
    if n < gamma and q_rows[n, tokens[n]] > 0 and p_rows[n, tokens[n]] / q_rows[n, tokens[n]] >= 1:
        p_x, q_x = p_rows[n, tokens[n]], q_rows[n, tokens[n]]
        why = (
            f"returned emitted = {show(emitted)} with n_accepted = {n}: it rejected draft {n} (token {tokens[n]}), "
            f"whose ratio p/q = {p_x:.6g} / {q_x:.6g} = {p_x / q_x:.6g} is at least 1, so it is always accepted "
            "(u < p/q for every u in [0, 1))"
        )
        if n == gamma - 1:
            why += f"; when every draft is accepted, n_accepted is {gamma} and the last token is the bonus"
        return None, why
    if lasts is not None and lasts[n][last] == 0:
        if n == gamma:
            return None, (
                f"returned emitted = {show(emitted)}: the bonus token {last} has probability 0 under "
                f"target_probs[{gamma}] = {p_rows[gamma].tolist()}, the row it must be drawn from"
            )
        return None, (
            f"returned emitted = {show(emitted)} (draft {n} rejected): the last token {last} has probability 0 "
            f"under the residual norm(max(0, p - q)) = {np.round(lasts[n], 6).tolist()} of row {n} "
            f"(p = {p_rows[n].tolist()}, q = {q_rows[n].tolist()}), the distribution it must be drawn from"
        )
    return tuple(emitted.tolist()), None


def prefix_problem(emitted: np.ndarray, n: int, tokens: np.ndarray) -> str:
    """Why emitted[:n] is not draft_tokens[:n]: drafts kept past a rejection, said so when it looks like that."""
    j = int(np.flatnonzero(emitted[:n] != tokens[:n])[0])  # the first position that is not draft j
    later = iter(tokens[j + 1 :].tolist())
    skipped = all(any(t == x for x in later) for t in emitted[j:n].tolist())  # later drafts, in order: kept past j
    if skipped:
        return (
            f"draft {j} (token {tokens[j]}) was rejected, yet your function went on testing later drafts and kept"
            f" some: at the first rejection emit one residual token and stop, so that emitted[:n_accepted] is"
            f" draft_tokens[:n_accepted] (it returned emitted = {show(emitted)}, n_accepted = {n})"
        )
    return (
        f"emitted[:n_accepted] must be the accepted drafts, draft_tokens[:n_accepted], but token {j} is "
        f"{emitted[j]}, not draft {j} ({tokens[j]}) (it returned emitted = {show(emitted)}, n_accepted = {n})"
    )


def marginal_laws(outcomes: dict[tuple, float], gamma: int) -> dict[str, dict]:
    """From {emitted: probability or count}: the first token, the first two (or one and "end"), the bonus."""
    laws: dict[str, dict] = {"the whole block": dict(outcomes), "the first token": {}, "the first two tokens": {}}
    laws["the bonus token (after a full accept)"] = {}
    for emitted, weight in outcomes.items():
        for name, key in [("the first token", emitted[:1]), ("the first two tokens", emitted[:2])]:
            laws[name][key] = laws[name].get(key, 0.0) + weight
        if len(emitted) == gamma + 1:
            bonus = laws["the bonus token (after a full accept)"]
            bonus[emitted[-1:]] = bonus.get(emitted[-1:], 0.0) + weight
    return laws


def compare_law(counts: dict, law: dict, name: str) -> tuple[float, str]:
    """(chi-square p-value, the outcome whose frequency is furthest from its probability, as text)."""
    keys = sorted(set(law) | set(counts))
    total_law = sum(law.values())
    probs = np.array([law.get(k, 0.0) / total_law for k in keys])
    observed = np.array([counts.get(k, 0) for k in keys], dtype=np.float64)
    n = observed.sum()
    if n == 0:
        return 0.0, f"it never came out, though it has probability {total_law:.3f}"
    i = int(np.argmax(np.abs(observed / n - probs)))
    what = {
        "the whole block": f"emitted = {list(keys[i])} (n_accepted = {len(keys[i]) - 1})",
        "the first token": f"a first emitted token {keys[i][0]}",
        "the first two tokens": f"a block starting {list(keys[i])}",
    }.get(name, f"a bonus token {keys[i][0]}")
    share = "of the bonus tokens" if name.startswith("the bonus") else "of the calls"
    return chi_square_test(
        observed, probs
    ).p_value, f"{what} in {observed[i] / n:.3f} {share}, exactly {probs[i]:.3f} expected"


def call_verify(fn, refused: dict, tokens, q_rows, p_rows, rng):
    """fn under the course's policy (checkers.attempt): (result, None) or (None, what went wrong).

    The caller names the inputs with `located`, which cuts an exception's own (the rng's repr among them).
    """
    return call(fn, (tokens, q_rows, p_rows, rng), refused=refused, why=ASKED, in_place=VERIFY_COPY)


USE_THE_RNG = (
    "use the rng argument for every random number (rng.random() for each u, draw(row, rng) for the last token), "
    "not np.random.rand() or a generator made inside the function: a caller's seed must fix the output"
)
RESIDUAL_COPY = "compute into new arrays (p - q makes one; p -= q writes over p)"
VERIFY_COPY = "write into new arrays (residual_distribution(p[n], q[n]) returns one)"
REPEATS, REPEAT_SEED = 40, 11  # calls per run of the reproducibility check, and their seed


def reproducibility_failure(fn, refused: dict) -> str | None:
    """None when two runs of REPEATS calls with equal seeds give equal outputs, else a counterexample."""
    case = "a rejection in the middle"
    tokens, q_rows, p_rows = VERIFY_CASES[case]
    lasts = allowed_last_tokens(tokens, q_rows, p_rows)
    runs = []
    for _ in range(2):
        rng, blocks = np.random.default_rng(REPEAT_SEED), []
        for _ in range(REPEATS):
            got, error = call_verify(fn, refused, tokens, q_rows, p_rows, rng)
            if error is None:
                emitted, error = read_output(got, tokens, q_rows, p_rows, lasts)
            if error is not None:
                return located(error, f"for {block_text(tokens, q_rows, p_rows)} ({case})")
            blocks.append(emitted)
        runs.append(blocks)
    for k, (first, second) in enumerate(zip(*runs, strict=True)):
        if first != second:
            return (
                "your function draws from a generator other than the given `rng`: it gives different results for"
                f" generators in the same state; {USE_THE_RNG} (for {block_text(tokens, q_rows, p_rows)} ({case}),"
                f" {REPEATS} calls with np.random.default_rng({REPEAT_SEED}), run twice, differ at call {k + 1}:"
                f" emitted = {list(first)} the first time, {list(second)} the second)"
            )
    return None


def run_case(fn, refused: dict, case: str, rng) -> tuple[dict | None, str | None]:
    """({emitted: count} over CALLS calls, None) or (None, the first impossible output, as a counterexample)."""
    tokens, q_rows, p_rows = VERIFY_CASES[case]
    lasts = allowed_last_tokens(tokens, q_rows, p_rows)
    counts: dict[tuple, int] = {}
    for _ in range(CALLS):
        got, error = call_verify(fn, refused, tokens, q_rows, p_rows, rng)
        if error is None:
            emitted, error = read_output(got, tokens, q_rows, p_rows, lasts)
        if error is not None:
            return None, located(error, f"for {block_text(tokens, q_rows, p_rows)} ({case})")
        counts[emitted] = counts.get(emitted, 0) + 1
    return counts, None


def check_speculative_verify(fn) -> bool:
    """fn(draft_tokens, draft_probs, target_probs, rng) must follow speculative_verify's rule and law exactly.

    Each output must be possible under the rule (no draft with p/q >= 1 rejected), a 1-D integer
    array, with the inputs left as they were; equal seeds must give equal outputs; with all uniforms
    0.0 (taken from the rng argument, one per tested draft at least) a draft with p = 0 must be
    rejected; with uniforms 0.99 then 0.0 the round must stop at its first (rejected) draft; over
    CALLS calls per seed, the whole block, the first token, the first two tokens and the bonus token
    must pass a chi-square test against the exact law (p-value >= P_FAIL).
    """
    n_cases = len(VERIFY_CASES) + 3 + len(STATISTICAL) * len(SEEDS) * 4
    failure = verify_failure(fn, refused_in(fn, ("speculative_verify", "verify_drawn")))
    return verdict("speculative_verify", failure, n_cases)


def verify_failure(fn, refused: dict) -> str | None:
    """The first counterexample against fn, or None."""
    for case, (tokens, q_rows, p_rows) in VERIFY_CASES.items():  # one call each, every output checked
        got, error = call_verify(fn, refused, tokens, q_rows, p_rows, np.random.default_rng(0))
        if error is None:
            _, error = read_output(got, tokens, q_rows, p_rows, allowed_last_tokens(tokens, q_rows, p_rows))
        if error is not None:
            return located(error, f"for {block_text(tokens, q_rows, p_rows)} ({case})")
    failure = reproducibility_failure(fn, refused)
    if failure is not None:
        return failure
    tokens, q_rows, p_rows = VERIFY_CASES["a draft the target forbids"]
    zeros = ScriptedUniforms()
    got, error = call_verify(fn, refused, tokens, q_rows, p_rows, zeros)
    if error is None:
        emitted, error = read_output(got, tokens, q_rows, p_rows, None, zero_uniforms=True)
    if error is None and zeros.drawn < min(len(emitted), tokens.size):
        error = (
            f"given a generator whose random() always returns 0.0, it tested {min(len(emitted), tokens.size)} "
            f"drafts (n_accepted = {len(emitted) - 1}) but took only {zeros.drawn} uniform(s) from it, counting the "
            "last token's draw: either a tested draft got no uniform of its own (each needs u = rng.random(), "
            f"kept iff u < p/q), or the uniforms came from elsewhere; {USE_THE_RNG}"
        )
    if error is not None:
        return located(error, f"for {block_text(tokens, q_rows, p_rows)}")
    failure = stopping_failure(fn, refused)
    if failure is not None:
        return failure
    for case in STATISTICAL:
        tokens, q_rows, p_rows = VERIFY_CASES[case]
        exact = marginal_laws(Rule().verify_law(tuple(tokens.tolist()), q_rows, p_rows), tokens.size)
        for seed in SEEDS:
            counts, error = run_case(fn, refused, case, np.random.default_rng(seed))
            if error is not None:
                return error
            observed = marginal_laws(counts, tokens.size)
            for name, law in exact.items():
                if not law:
                    continue
                p_value, worst = compare_law(observed[name], law, name)
                if p_value < P_FAIL:
                    found = (
                        f"{name} does not follow the exact law: {worst} (chi-square p-value {p_value:.2g}; a right"
                        f" answer fails this test with probability {P_FAIL:g})"
                    )
                    cause = named_shortcut(counts, tokens, q_rows, p_rows)
                    ratios = np.round(acceptance_ratios(tokens, q_rows, p_rows), 6).tolist()
                    message = (
                        f"{cause} {found[0].upper()}{found[1:]}"
                        if cause
                        else f"{found}. The drafts are kept with probabilities min(1, p/q) = {ratios}"
                    )
                    where = f"for {block_text(tokens, q_rows, p_rows)} ({case}), {CALLS} calls, default_rng({seed})"
                    return located(message, where)
    return None


STOP_SCRIPT = (0.99,)  # draft 0 of "a rejection in the middle" (p/q = 0.5) is rejected; later uniforms are 0.0


def stopping_failure(fn, refused: dict) -> str | None:
    """None when rejecting draft 0 ends the round, else why not (a loop that goes on testing, said so)."""
    case = "a rejection in the middle"
    tokens, q_rows, p_rows = VERIFY_CASES[case]
    got, error = call_verify(fn, refused, tokens, q_rows, p_rows, ScriptedUniforms(STOP_SCRIPT))
    if error is None:
        emitted, error = read_output(got, tokens, q_rows, p_rows, allowed_last_tokens(tokens, q_rows, p_rows))
    if error is None and len(emitted) > 1:
        n, ratio = len(emitted) - 1, acceptance_ratios(tokens, q_rows, p_rows)[0]
        rejected = f"draft 0 was rejected (its uniform {STOP_SCRIPT[0]} is not below p/q = {ratio:.6g})"
        if n == tokens.size - 1:  # every later draft accepted with u = 0.0: counted past the rejection
            error = (
                f"{rejected}, yet your function went on testing later drafts and counted the {n} it accepted"
                " (n_accepted must be 0 here): at the first rejection emit one residual token and stop"
            )
        else:
            error = f"{rejected}, yet your function returned n_accepted = {n}: keep a draft iff u < p/q, stop there"
    if error is None:
        return None
    where = f"for {block_text(tokens, q_rows, p_rows)} ({case}), with a generator whose uniforms are 0.99, then 0.0"
    return located(error, where)


def named_shortcut(counts: dict, tokens, q_rows, p_rows) -> str | None:
    """The cause of a law that is not the exact one, when the counts fit a known shortcut's law; else None.

    Known: the bonus token drawn from another row than target_probs[gamma]; one uniform for the round.
    """
    gamma, fits = tokens.size, 1e-3  # a fit: the shortcut's law is not rejected at 0.001
    bonus = marginal_laws(counts, gamma)["the bonus token (after a full accept)"]
    if bonus and compare_law(bonus, row_law(p_rows[gamma]), "bonus")[0] < fits:
        for k in range(gamma):
            if not np.allclose(p_rows[k], p_rows[gamma]) and compare_law(bonus, row_law(p_rows[k]), "bonus")[0] >= fits:
                return (
                    f"the bonus token follows target_probs[{k}], the row draft {k} was tested against; it must come"
                    f" from target_probs[{gamma}], the row after the last draft."
                )
    shared = Rule(uniforms="shared").verify_law(tuple(tokens.tolist()), q_rows, p_rows)
    if compare_law(counts, shared, "the whole block")[0] >= fits:
        return (
            "drafts are kept together too often: is u fresh for each draft? With one uniform for the round, a"
            " small u keeps every draft after the first one it keeps."
        )
    return None


def row_law(row: np.ndarray) -> dict:
    """{(token,): probability} of one row, in the form compare_law takes."""
    return {(t,): float(row[t]) for t in np.flatnonzero(row)}
