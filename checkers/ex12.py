"""Checkers for the exercises of notebook 12 (many requests at once).

check_attention_mask(fn):  fn(past, n) -> bool array (B, n_max, end), end = max(past + n), n_max = max(n):
                           which keys each padded query may see, as specdec.batch.attention_mask says
check_draw_rows(fn):       fn(probs, rngs) -> int64 array (R,): row i drawn with its own generator rngs[i],
                           the same token as specdec.drawing.draw(probs[i], rngs[i]), one uniform per row

The mask's cases: one text, texts of different lengths with one new token each, several new tokens
(the causal block), a slot in the span that is not scored (n = 0), a text with nothing cached yet
(past = 0). The mistakes it names: a query that cannot see itself (< for <=), every text given the
longest text's past, a query that sees nothing (its softmax would divide 0 by 0), an `end` or `n_max`
taken from the wrong maximum, a float mask.
The draws' cases: rows of a few to 300 tokens, rows with zeros, a point mass, float32 rows, rows whose
totals are not 1, and rows drawn with u at the very end (fixed uniforms) where rounding lands past the
last running sum; each row gets its own generator. The mistakes it names: every row drawing from
rngs[0] (or from any one generator), rows paired with the wrong generators, more or fewer than one
uniform per row, u not scaled by the row's total, no clip to V - 1, a token of probability 0, a search
that differs from notebook 02's inverse CDF.
A function that calls the package's answer (`attention_mask`, `draw_rows`) or draws through
`draw`, `draw_row`, `sample` or `sample_token` is refused: `checkers.attempt` watches the calls.
"""

import numpy as np

import specdec
from checkers import FixedUniform, call, located, namesakes, result_problem, show, verdict
from specdec import batch, drawing
from specdec.batch import attention_mask, draw_rows
from specdec.drawing import draw

MASK = "attention_mask"
DRAWS = "draw_rows"


def mask_cases() -> list[tuple[np.ndarray, np.ndarray]]:
    """(past (B,), n (B,)) int64: texts with `past` tokens cached, each sending n new ones."""
    cases = [
        ([3], [1]),  # one text, one new token: it sees positions 0..3
        ([5, 2], [1, 1]),  # decoding two texts of different lengths: the shorter one must not see 3..5
        ([4, 1], [3, 1]),  # three new tokens in the first text: the causal block; the second text pads
        ([0, 2], [2, 2]),  # a text with nothing cached: the prompt's first call
        ([6, 2, 3], [1, 0, 2]),  # a slot in the span that is not scored (n = 0): only padding queries
        ([2, 7, 1, 4], [4, 1, 2, 3]),  # ragged: every text sends a different number
    ]
    return [(np.array(p, dtype=np.int64), np.array(k, dtype=np.int64)) for p, k in cases]


def mask_mistake(got: np.ndarray, past: np.ndarray, n: np.ndarray) -> str:
    """Why a mask of the right shape and dtype differs from the reference, in words, with one entry.

    The entries that differ are sorted into mistakes, the most telling first: a query that sees nothing,
    a padding query treated apart, a query that misses itself, the offset i forgotten, a query that sees
    its own text's later tokens, a query that sees past its text's end.
    """
    expected = attention_mask(past, n)
    wrong = [tuple(int(x) for x in entry) for entry in np.argwhere(got != expected)]

    def where(b, i, t) -> str:
        return f"text {b}, query {i}, key {t}: expected {expected[b, i, t]}, got {got[b, i, t]}"

    def who(b, i) -> str:
        return f"the padding query {i} of text {b} (its new tokens: {n[b]})" if i >= n[b] else f"query {i} of text {b}"

    blind = next(((b, i, t) for b, i, t in wrong if not got[b, i].any()), None)
    if blind:
        return (
            f"{who(*blind[:2])} sees no key at all: its softmax would divide 0 by 0 and the NaN would spread."
            f" Every query, padding ones included, follows the causal rule (and so sees position 0) ({where(*blind)})"
        )
    padding = next(((b, i, t) for b, i, t in wrong if i >= n[b]), None)
    if padding and all(i >= n[b] for b, i, _ in wrong):  # only the padding queries are wrong
        return (
            f"{who(*padding[:2])} must follow the same rule as the others, keys 0..past[b] + i: its output is"
            f" dropped, but a mask that treats it apart is not the reference's ({where(*padding)})"
        )
    if np.array_equal(got, attention_mask(past + 1, n)[:, :, : got.shape[-1]]):
        b, i, t = wrong[0]
        return (
            f"every query sees one key too many: query i of text b sits at position past[b] + i and sees"
            f" positions 0..past[b] + i, itself included, no further ({where(b, i, t)})"
        )
    for b, i, t in wrong:
        if np.array_equal(got[b, i], np.arange(got.shape[-1]) <= past[b]) and i > 0:
            return (
                f"{who(b, i)} sees keys 0..past[b] only: query i sits at position past[b] + i, so each later query"
                f" of a text sees one more key, itself ({where(b, i, t)})"
            )
    itself = next(((b, i, t) for b, i, t in wrong if t == past[b] + i and not got[b, i, t]), None)
    if itself:
        return f"{who(*itself[:2])} sits at position past[b] + i and must see itself: use <=, not < ({where(*itself)})"
    future = next(((b, i, t) for b, i, t in wrong if got[b, i, t] and past[b] + i < t < past[b] + n[b]), None)
    if future:
        b, i, t = future
        return (
            f"{who(b, i)} sits at position {past[b] + i} and sees position {t}, a later new token of its own text:"
            f" the causal rule lets query i see positions 0..past[b] + i only ({where(*future)})"
        )
    beyond = next(((b, i, t) for b, i, t in wrong if got[b, i, t]), None)
    if beyond:
        b, i, t = beyond
        return (
            f"text {b} holds {past[b]} tokens before its new ones: its query {i} may see positions 0..{past[b] + i}"
            f" only, not another text's length ({where(*beyond)})"
        )
    return f"the mask differs from the reference at {where(*wrong[0])}"


def check_attention_mask(fn) -> bool:
    """fn(past, n) must return the bool mask (B, n_max, end) of specdec.batch.attention_mask."""
    cases = mask_cases()
    refused = namesakes(fn, [MASK], specdec, batch)
    for past, n in cases:
        got, error = call(fn, (past, n), refused=refused, why="it is the mask this exercise asks you to build")
        expected = attention_mask(past, n)
        if error is None:
            error = result_problem(got, expected, "as the mask", shape=False)
        if error is None and np.shape(got) != expected.shape:
            error = (
                f"your mask has shape {np.shape(got)} where (B, n_max, end) = {expected.shape} is asked:"
                " end = max(past + n), the longest text after its new tokens; n_max = max(n)"
            )
        if error is None and not np.array_equal(got, expected):
            error = mask_mistake(got, past, n)
        if error is not None:
            return verdict(MASK, located(error, f"for past = {show(past)}, n = {show(n)}"), len(cases))
    return verdict(MASK, None, len(cases))


# --- draw_rows ------------------------------------------------------------------------------------


EDGE = 1 - 2**-53  # the largest uniform below 1: u * total can reach past the last running sum by rounding


def draw_cases() -> list[tuple[np.ndarray, object]]:
    """(probs (R, V), seed or a list of fixed uniforms): rows to draw from, one generator per row."""
    rng = np.random.default_rng(12)
    tenths = np.array([[0.1] * 10 + [0.0, 0.0], [0.0] + [0.1] * 10 + [0.0]])  # running sums end a hair below the total
    return [
        (np.array([[0.2, 0.5, 0.3]]), 0),  # one row
        (rng.dirichlet(np.full(98, 0.3), size=8), 3),  # the bundled vocabulary: rows paired wrongly show here
        (np.array([[0.5, 0.0, 0.5], [0.1, 0.1, 0.8], [0.0, 0.0, 1.0]]), 1),  # zeros and a point mass
        (rng.dirichlet(np.full(7, 0.5), size=5), 2),
        (rng.dirichlet(np.full(300, 1.0), size=4), 4),  # wider than notebook 02's block of 256
        (rng.dirichlet(np.full(5, 0.7), size=6).astype(np.float32), 5),  # float32 rows
        (rng.dirichlet(np.full(6, 0.5), size=6) * np.array([[0.5], [2], [0.9], [1.5], [0.25], [3]]), 6),  # totals != 1
        (tenths, [EDGE, EDGE]),  # u at the very end: clip to V - 1, then step back from a token of probability 0
    ]


def generators(seed, rows: int) -> list[np.random.Generator]:
    """One generator per row: seeded from the case, or fixed uniforms."""
    if isinstance(seed, list):
        return [FixedUniform(u) for u in seed]
    return [np.random.default_rng([seed, i]) for i in range(rows)]


def states(rngs) -> list:
    return [rng.bit_generator.state for rng in rngs]


def one_uniform_later(seed, rows: int) -> list:
    """Each row's generator state after one rng.random(): where every generator must be after the draw."""
    rngs = generators(seed, rows)
    for rng in rngs:
        rng.random()
    return states(rngs)


def draws_mistake(got, probs, seed, used: list) -> str | None:
    """What is wrong with the draws, said first: generators used wrongly, then tokens."""
    rows = probs.shape[0]
    expected = draw_rows(probs, generators(seed, rows))
    if not isinstance(seed, list):  # seeded generators: their states tell how they were used
        after = one_uniform_later(seed, rows)
        fresh = states(generators(seed, rows))
        untouched = [i for i, state in enumerate(used) if state == fresh[i]]
        if untouched and len(untouched) < rows:
            return (
                f"rngs[{untouched[0]}] was never used: row i must draw from its own generator rngs[i] (one"
                " generator for every row ties the rows' draws together)"
            )
        if untouched:
            return "none of the generators in `rngs` was used: each row draws one uniform from rngs[i]"
        if any(state != expected for state, expected in zip(used, after, strict=True)):
            i = next(k for k, (s, e) in enumerate(zip(used, after, strict=True)) if s != e)
            return (
                f"rngs[{i}] was not used for exactly one uniform: draw u = rngs[i].random() once per row, then"
                " search the running sums (rng.integers and rng.standard_normal draw in their own way)"
            )
    wrong = np.flatnonzero(got != expected)
    if not wrong.size:
        return None
    i = int(wrong[0])
    u = np.array([rng.random() for rng in generators(seed, rows)])  # (R,) each row's uniform, not scaled
    unscaled = np.minimum((np.cumsum(probs, axis=-1) <= u[:, None]).sum(axis=-1), probs.shape[-1] - 1)  # (R,)
    if not np.allclose(probs.sum(axis=-1), 1) and np.array_equal(got, unscaled):
        return (
            f"row {i} drew token {got[i]} where notebook 02's inverse CDF gives {expected[i]}: u is uniform on [0, 1),"
            f" the running sums end at the row's total ({probs[i].sum():.6g} here): scale u by probs[i].sum()"
        )
    if not isinstance(seed, list) and rows > 1:  # rows paired with other rows' generators?
        tokens = [[int(draw(probs[k], rng)) for rng in generators(seed, rows)] for k in wrong]  # row k, generator j
        paired = [
            next((j for j in range(rows) if j != k and row[j] == got[k]), None)
            for k, row in zip(wrong, tokens, strict=True)
        ]
        if all(j is not None for j in paired):
            return (
                f"row {i} drew token {got[i]}, what generator {paired[0]} gives it (and so on for the other rows that"
                f" differ): row i must take its uniform from rngs[i], in the rows' order"
            )
    if got[i] >= probs.shape[-1] or got[i] < 0:
        return (
            f"row {i} drew token {got[i]}, outside the vocabulary: u * total can land past the last running sum"
            f" by rounding; clip the count to V - 1 = {probs.shape[-1] - 1}"
        )
    u_i = generators(seed, rows)[i].random() * probs[i].sum()  # row i's uniform, as the search sees it
    clipped = min(int((np.cumsum(probs[i]) <= u_i).sum()), probs.shape[-1] - 1)
    if probs[i, clipped] == 0 and probs[i, got[i]] > 0:  # the repair was needed, and went elsewhere
        return (
            f"row {i} drew token {got[i]}: u landed past the last running sum (rounding) on token {clipped} of"
            f" probability 0, and the step back must go to the last token with mass, {expected[i]}"
        )
    if probs[i, got[i]] == 0:
        return (
            f"row {i} drew token {got[i]} of probability 0 (u landed past the last running sum, by rounding):"
            f" step back to the last token with mass, {expected[i]}"
        )
    return (
        f"row {i} drew token {got[i]} where notebook 02's inverse CDF gives {expected[i]}: the first token whose"
        " running sum exceeds u * (the row's total) wins (searchsorted(..., side='right'))"
    )


def check_draw_rows(fn) -> bool:
    """fn(probs, rngs) must draw one token per row, row i with rngs[i], as draw(probs[i], rngs[i]) would."""
    cases = draw_cases()
    refused = namesakes(fn, [DRAWS, "draw", "draw_row", "sample", "sample_token"], specdec, batch, drawing)
    why = "it draws for you: take one uniform from each row's generator and search the running sums yourself"
    for probs, seed in cases:
        rngs = tuple(generators(seed, probs.shape[0]))  # a tuple: the function gets these very generators
        got, error = call(fn, (probs, rngs), refused=refused, why=why)
        expected = draw_rows(probs, generators(seed, probs.shape[0]))
        if error is None:
            error = result_problem(got, expected, "as the tokens")
        if error is None:
            error = draws_mistake(got, probs, seed, states(rngs))
        if error is not None:
            return verdict(DRAWS, located(error, f"for probs = {show(probs)}"), len(cases))
    return verdict(DRAWS, None, len(cases))
