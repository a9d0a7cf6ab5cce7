"""Checkers for the exercise of notebook 11 (verifying the block as a whole).

check_block_weights(fn):  fn(tokens, q, p) -> (w, h), each a float64 array of shape (gamma + 1,):
                          the capped running weights w_i and the probabilities h_i of keeping the
                          prefix of length i, as specdec.block.block_weights returns them

The cases: the paper's two-token example in both orders (Sun et al., ICLR 2025, sec. 3),
gamma = 1, random Dirichlet rows with gamma up to 6 (fixed seeds), rows where the draft equals
the target (the denominator R_i + (1 - w_i) is 0, so h_i = 1), drafts the target gives probability
0 (w drops to 0 and stays there), float32 rows (the answer is still float64). On every case the
inputs must come back unchanged. A wrong answer gets one counterexample (the inputs, what was
expected, what came back) and, where the checker recognises the mistake, its name in words:
no cap at 1, a cap applied only at the end, the plain residual mass, the residual of the wrong
row, h_gamma from the residual formula, 0 / 0 where the denominator is 0, h_i a hair off 1 where
w_i = 1 (R + 1 - w rounds R + 1 first: h_i must be 1 exactly there), float32, a missing w_0 or h_0,
a list instead of an array.
A function that calls a reference (`block_weights`, `block_verify`, `block_verify_drawn`) is
refused: `checkers.attempt` watches the calls, and nothing in specdec or in the learner's namespace
is replaced.
"""

import warnings

import numpy as np

import specdec
from checkers import call, located, namesakes, result_problem, show, verdict, without_input
from specdec import block
from specdec.block import block_weights

NAME = "block_weights"
COMPUTES_W_AND_H = "it computes w and h for you: write them yourself"
NEW_ARRAYS = (
    "block_verify draws the last token from p and q after computing w and h, so compute into new arrays"
    " (w[i] * p[i] makes one; p[i] *= w[i] writes over the caller's row)"
)
TOL = 1e-10  # float64 answers computed in another order agree far better than this
FLOAT32_TOL = 1e-5  # float32 arithmetic is right to about this, and no better
REFERENCES = ("block_weights", "block_verify", "block_verify_drawn")


def text(values) -> str:
    """An array in full on one line (no "...", no line breaks), floats to 6 decimals."""
    values = np.asarray(values)
    if np.issubdtype(values.dtype, np.floating):
        values = np.round(values.astype(np.float64), 6)
    return str(values.tolist())


def describe(tokens, q, p) -> str:
    given = f" (q and p given as {q.dtype})" if q.dtype != np.float64 else ""
    return f"tokens = {text(tokens)}, q = {text(q)}, p = {text(p)}{given}"


# --- the cases -------------------------------------------------------------------------------


def rows(values, dtype=np.float64) -> np.ndarray:
    return np.array(values, dtype=dtype)


def random_case(rng: np.random.Generator, gamma: int, vocab: int, dtype=np.float64) -> tuple:
    """Dirichlet rows; each token drawn from its own q row, as a draft model would draw it."""
    q = rng.dirichlet(np.full(vocab, 0.8), size=gamma)  # (gamma, V)
    p = rng.dirichlet(np.full(vocab, 0.8), size=gamma + 1)  # (gamma + 1, V)
    tokens = np.array([rng.choice(vocab, p=row) for row in q], dtype=np.int64)  # (gamma,)
    return tokens, q.astype(dtype), p.astype(dtype)


def block_weights_cases() -> list[tuple]:
    """(tokens (gamma,), q (gamma, V), p (gamma + 1, V)): the hand-checked ones first, then random rows."""
    third = [1 / 3, 2 / 3]  # the paper's example: the target prefers b, the draft a, at every position
    two_thirds = [2 / 3, 1 / 3]
    cases = [
        # drafts (a, b): w = (1, 1/2, 1), h = (1, 0, 1)
        (np.array([0, 1]), rows([two_thirds] * 2), rows([third] * 3)),
        # drafts (b, a): w = (1, 1, 1/2), h = (1, 1, 1/2)
        (np.array([1, 0]), rows([two_thirds] * 2), rows([third] * 3)),
        # gamma = 1, a ratio below 1: w = (1, 0.4), h = (1, 0.4)
        (np.array([2]), rows([[0.2, 0.3, 0.5]]), rows([[0.4, 0.4, 0.2], [0.1, 0.6, 0.3]])),
        # gamma = 1, a ratio above 1: w = (1, 1), h = (1, 1)
        (np.array([0]), rows([[0.25, 0.75]]), rows([[0.5, 0.5], [0.3, 0.7]])),
        # ratios 2, 0.5, 1.5: w = (1, 1, 0.5, 0.75) with the cap at each step (1, 1, 1, 1 capped at the end)
        (
            np.array([0, 1, 2]),
            rows([[0.25, 0.25, 0.5], [0.2, 0.6, 0.2], [0.3, 0.3, 0.4]]),
            rows([[0.5, 0.2, 0.3], [0.3, 0.3, 0.4], [0.1, 0.3, 0.6], [0.2, 0.2, 0.6]]),
        ),
        # ratio 3 caps w_1 at 1, then the draft equals the target on rows 1 and 2: R_1 + (1 - w_1) = 0, h_1 = 1
        (
            np.array([0, 2, 1, 1]),
            rows([[0.2, 0.8, 0.0], [0.1, 0.3, 0.6], [0.5, 0.25, 0.25], [0.2, 0.5, 0.3]]),
            rows([[0.6, 0.4, 0.0], [0.1, 0.3, 0.6], [0.5, 0.25, 0.25], [0.4, 0.3, 0.3], [0.3, 0.3, 0.4]]),
        ),
        # w_1 = 0.5, then p == q on row 1: R_1 = 0 but 1 - w_1 > 0, so h_1 = 0
        (
            np.array([1, 0, 0]),
            rows([[0.2, 0.8], [0.6, 0.4], [0.5, 0.5]]),
            rows([[0.6, 0.4], [0.6, 0.4], [0.3, 0.7], [0.5, 0.5]]),
        ),
        # p == q everywhere: w = 1 throughout, every denominator is 0, h = 1
        (np.array([1, 1, 0]), rows([[0.3, 0.7]] * 3), rows([[0.3, 0.7]] * 4)),
        # the target gives the second draft probability 0: w drops to 0 and stays there, h = 0 after it
        (
            np.array([3, 1, 0, 2]),
            rows([[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1], [0.25, 0.25, 0.25, 0.25], [0.1, 0.1, 0.7, 0.1]]),
            rows(
                [
                    [0.2, 0.0, 0.5, 0.3],
                    [0.5, 0.0, 0.0, 0.5],
                    [0.1, 0.2, 0.3, 0.4],
                    [0.0, 0.5, 0.5, 0.0],
                    [0.3, 0.3, 0.2, 0.2],
                ]
            ),
        ),
        # the last draft forbidden: w_gamma = h_gamma = 0
        (
            np.array([0, 1]),
            rows([[0.5, 0.5, 0.0], [0.3, 0.4, 0.3]]),
            rows([[0.6, 0.4, 0.0], [0.5, 0.0, 0.5], [0.2, 0.3, 0.5]]),
        ),
    ]
    rng = np.random.default_rng(11)
    for gamma in (1, 2, 3, 4, 5, 6, 6):
        cases.append(random_case(rng, gamma, 4))
    cases.append(random_case(np.random.default_rng(12), 3, 5, dtype=np.float32))  # float32 rows: float64 back
    cases.append(random_case(np.random.default_rng(13), 6, 5))  # a longer batch, checked like the others
    return [(np.asarray(tokens, dtype=np.int64), q, p) for tokens, q, p in cases]


# --- what the right answer and the usual mistakes give ------------------------------------------


def ratios(tokens, q, p) -> np.ndarray:
    """(gamma,) p_i(x_i) / q_i(x_i) in float64, row i - 1 of p and q for the i-th draft."""
    index = np.arange(tokens.size)
    return p[index, tokens].astype(np.float64) / q[index, tokens].astype(np.float64)


def residual_masses(w, tokens, q, p, weighted: bool = True, shift: int = 0) -> np.ndarray:
    """(gamma + 1,) R_i = sum_x max(0, w_i p[i - shift](x) - q[i - shift](x)) for 1 <= i < gamma (0 elsewhere)."""
    gamma = tokens.size
    p, q = p.astype(np.float64), q.astype(np.float64)
    r = np.zeros(gamma + 1)
    for i in range(1, gamma):
        scale = w[i] if weighted else 1.0
        r[i] = np.maximum(scale * p[i - shift] - q[i - shift], 0.0).sum()
    return r


def stops_from(w, r) -> np.ndarray:
    """h from w and r by the statement's rule (h_0 = 1, h_i = r / (r + (1 - w)) or 1, h_gamma = w_gamma)."""
    gamma = w.size - 1
    h = np.ones(gamma + 1)
    for i in range(1, gamma):
        denominator = r[i] + (1.0 - w[i])
        h[i] = r[i] / denominator if denominator > 0 else 1.0
    h[gamma] = w[gamma]
    return h


def close(got, expected, tol: float = TOL) -> bool:
    return got.shape == expected.shape and bool(np.allclose(got, expected, rtol=0, atol=tol))


# --- the diagnosis ------------------------------------------------------------------------------


def shown(value) -> str:
    """A value as the learner's function returned it: arrays in full on one line, anything else by repr."""
    return text(value) if isinstance(value, np.ndarray) and value.dtype != object else show(value)


def array_problem(name: str, value, expected: np.ndarray, inputs_dtype) -> str | None:
    """What is wrong with the container of w or h (type, dtype, shape), the diagnosis first, or None."""
    gamma = expected.size - 1
    said = f"expected {name} = {text(expected)}, got {shown(value)}"
    kind = result_problem(value, expected, name, shape=False)
    if kind is not None:
        if isinstance(value, list | tuple):
            kind += " (start from np.ones(gamma + 1))"
        elif np.asarray(value).dtype.kind == "f" and inputs_dtype != np.float64:
            kind += f" (even for {inputs_dtype} q and p: compute in float64, np.ones(gamma + 1), not dtype=p.dtype)"
        elif np.asarray(value).dtype.kind in "biu":
            kind += " (np.ones(gamma + 1) is float64; an integer array truncates what is written into it)"
        return located(kind, said)
    if value.shape != expected.shape:
        what = f"returned {name} of shape {value.shape}, expected (gamma + 1,) = ({gamma + 1},)"
        if value.shape == (gamma,):
            what += (
                f": index i is the prefix length, from 0 to gamma = {gamma}, so there are gamma + 1 entries and "
                f"{name}_0 = 1 comes first"
            )
            if close(value.astype(np.float64), expected[1:]):
                what += f" (it holds {name}_1 to {name}_gamma: {name}_0 is missing)"
        return located(what, said)
    return None


def weights_problem(w, tokens, q, p, expected) -> str | None:
    """What is wrong with the values of w (float64, right shape), in words; None when they are right."""
    if close(w, expected):
        return None
    ratio = ratios(tokens, q, p)  # (gamma,)
    bad = np.flatnonzero(~np.isclose(w, expected, rtol=0, atol=TOL))
    k = int(bad[0])
    said = f"expected w = {text(expected)}, got w = {text(w)}"
    if k == 0:
        return f"{said}: w_0 = 1 (the empty prefix: the target wants all of it)"
    if np.any(w > 1 + TOL):
        above = int(np.flatnonzero(w > 1 + TOL)[0])
        plain = " (it is the plain product of the ratios)" if close(w[1:], np.cumprod(ratio)) else ""
        return (
            f"{said}: w grows above 1 (w_{above} = {w[above]:.6g}){plain}. Each step is capped, "
            "w_i = min(1, w_(i-1) * p_i(x_i) / q_i(x_i)): a weight is how much of the prefix the target still wants"
        )
    if close(w[1:], np.minimum(1.0, np.cumprod(ratio))):
        return (
            f"{said}: it caps only the product, min(1, the product of the first i ratios); the cap applies at "
            "every step, before the next multiplication, w_i = min(1, w_(i-1) * ratio_i): a ratio above 1 cannot "
            "bank credit for the drafts after it"
        )
    if close(w[1:], np.minimum(1.0, ratio)):
        return (
            f"{said}: each w_i is min(1, p_i(x_i) / q_i(x_i)) alone, token verification's acceptance probability; "
            "the weight runs along the block: w_i = min(1, w_(i-1) * p_i(x_i) / q_i(x_i))"
        )
    index = np.arange(tokens.size)
    shifted = p[index + 1, tokens].astype(np.float64) / q[index, tokens].astype(np.float64)
    if close(w[1:], capped(shifted)):
        return (
            f"{said}: it judges the i-th draft, tokens[i-1], by row i of p; it was drawn from q[i-1], and the "
            "target's row for the same position is p[i-1] (p's extra last row is for the token after the block)"
        )
    if close(w, expected, FLOAT32_TOL):
        return f"{said}: right only to about {float(np.max(np.abs(w - expected))):.0e}: float32 arithmetic " + (
            "somewhere? compute in float64, e.g. q = np.asarray(q, dtype=np.float64)"
        )
    x = int(tokens[k - 1])
    return (
        f"{said}: w_{k} = min(1, w_{k - 1} * p[{k - 1}][{x}] / q[{k - 1}][{x}]) = min(1, {expected[k - 1]:.6g} * "
        f"{float(p[k - 1, x]):.6g} / {float(q[k - 1, x]):.6g}) = {expected[k]:.6g}, got {w[k]:.6g}"
    )


def capped(step_ratios) -> np.ndarray:
    """(gamma,) w_1 .. w_gamma from per-step ratios, capped at every step."""
    w, out = 1.0, []
    for r in step_ratios:
        w = min(1.0, w * float(r))
        out.append(w)
    return np.array(out)


def stops_problem(h, w, tokens, q, p, expected) -> str | None:
    """What is wrong with the values of h (float64, right shape, w right), in words; None when they are right."""
    gamma = tokens.size
    if close(h, expected):
        return exactly_one_problem(h, w)
    # h_gamma written as sum(w p) / (sum(w p) + 1 - w) is w_gamma whenever the row sums to 1; a float32 row
    # sums to 1 only to about 1e-7, so that answer, right in exact arithmetic, is accepted at that precision
    row_sum_error = abs(float(p[gamma].astype(np.float64).sum()) - 1.0)
    if close(h[:gamma], expected[:gamma]) and abs(h[gamma] - expected[gamma]) <= max(TOL, 10 * row_sum_error):
        return exactly_one_problem(h, w)
    bad = np.flatnonzero(~np.isclose(h, expected, rtol=0, atol=TOL))
    k = int(bad[0])
    said = f"expected h = {text(expected)}, got h = {text(h)}"
    r = residual_masses(w, tokens, q, p)
    if k == 0:
        return f"{said}: h_0 = 1 (the empty prefix is what is left when no longer one is kept; not a test)"
    if k == gamma and h[gamma] == 1.0:
        return (
            f"{said}: h_gamma = w_gamma = {w[gamma]:.6g}, not 1: the whole block is kept only with probability "
            "w_gamma, the capped ratio of the whole block"
        )
    if k == gamma:
        return (
            f"{said}: h_gamma = w_gamma = {w[gamma]:.6g}, not the residual formula: after the whole block there is "
            "no draft row left to compare with, and the whole block is kept with probability w_gamma"
        )
    denominator = r[k] + (1.0 - w[k])
    if denominator == 0:
        why = (
            f"here R_{k} + (1 - w_{k}) = 0 (w_{k} = 1, and p[{k}] = {text(p[k])} equals q[{k}], so R_{k} = 0): "
            f"the statement sets h_{k} = 1 when the denominator is 0"
        )
        if np.isnan(h[k]):
            return f"{said}: got h_{k} = nan, 0 / 0: {why}"
        return f"{said}: got h_{k} = {h[k]:.6g}; {why}"
    inner = slice(1, gamma)
    plain_r = residual_masses(w, tokens, q, p, weighted=False)
    plain = stops_from(w, plain_r)
    if close(h[inner], plain[inner]):
        return (
            f"{said}: it uses the plain residual mass sum_x max(0, p[i](x) - q[i](x)); the target row is weighed by "
            f"w_i first: R_i = sum_x max(0, w_i * p[i](x) - q[i](x)) (here R_{k} = {r[k]:.6g} with w_{k} = "
            f"{w[k]:.6g}, not {plain_r[k]:.6g})"
        )
    shifted = stops_from(w, residual_masses(w, tokens, q, p, shift=1))
    if close(h[inner], shifted[inner]):
        return (
            f"{said}: R_i takes the rows of the i-th draft, p[i-1] and q[i-1]; it needs the rows after the prefix "
            f"of length i, p[i] and q[i] (0-based: the distributions of the next token, where the residual would be "
            f"drawn): R_i = sum_x max(0, w_i * p[i](x) - q[i](x))"
        )
    if np.isnan(h[k]):
        return f"{said}: got h_{k} = nan, though R_{k} + (1 - w_{k}) = {denominator:.6g} is not 0"
    if close(h, expected, FLOAT32_TOL):
        return f"{said}: right only to about {float(np.max(np.abs(h - expected))):.0e}: float32 arithmetic " + (
            "somewhere? compute in float64, e.g. p = np.asarray(p, dtype=np.float64)"
        )
    return (
        f"{said}: h_{k} = R_{k} / (R_{k} + (1 - w_{k})) with R_{k} = sum_x max(0, w_{k} * p[{k}](x) - q[{k}](x)) = "
        f"{r[k]:.6g} and w_{k} = {w[k]:.6g}: {expected[k]:.6g}, got {h[k]:.6g}"
    )


def exactly_one_problem(h, w) -> str | None:
    """Where w_i = 1 (1 <= i < gamma) the statement asks for h_i = 1 exactly: a hair above 1 is no probability."""
    for i in range(1, w.size - 1):
        if w[i] == 1.0 and h[i] != 1.0:
            return (
                f"h_{i} = {float(h[i])!r}, not exactly 1: R + 1 - w rounds R + 1 first; write R + (1 - w) "
                f"(here w_{i} = 1: the denominator is then R_{i} itself, and h_{i} = 1 exactly)"
            )
    return None


def diagnose(got, tokens, q, p) -> str | None:
    """None when got is (w, h) as block_weights returns them, else what is wrong (without the inputs)."""
    w_expected, h_expected = block_weights(tokens, q.astype(np.float64), p.astype(np.float64))
    if not (isinstance(got, tuple | list) and len(got) == 2):
        return (
            f"expected (w, h) = ({text(w_expected)}, {text(h_expected)}), got {shown(got)}: return a pair (w, h), "
            "two arrays of shape (gamma + 1,)"
        )
    for name, value, expected in (("w", got[0], w_expected), ("h", got[1], h_expected)):
        problem = array_problem(name, value, expected, q.dtype)
        if problem is not None:
            return problem
    w, h = got[0].astype(np.float64), got[1].astype(np.float64)
    return weights_problem(w, tokens, q, p, w_expected) or stops_problem(h, w, tokens, q, p, h_expected)


# --- the checker --------------------------------------------------------------------------------


def check_block_weights(fn) -> bool:
    """fn(tokens, q, p) must return (w, h) as specdec.block.block_weights does: float64, shape (gamma + 1,) each.

    The inputs must come back unchanged; float32 rows still give float64 answers.
    """
    cases = block_weights_cases()
    refused = namesakes(fn, REFERENCES, specdec, block)
    for tokens, q, p in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a 0 / 0 is reported below, in words
            got, error = call(fn, (tokens, q, p), refused=refused, why=COMPUTES_W_AND_H, in_place=NEW_ARRAYS)
        if error is not None:
            error = without_input(error)  # the inputs are shown below, in full
            if error.startswith("raised") and "ZeroDivisionError" in error:
                error += " (R_i + (1 - w_i) is 0 here for some i: the statement sets h_i = 1 then)"
        else:
            error = diagnose(got, tokens, q, p)
        if error is not None:
            return verdict(NAME, located(error, f"for {describe(tokens, q, p)}"), len(cases))
    return verdict(NAME, None, len(cases))
