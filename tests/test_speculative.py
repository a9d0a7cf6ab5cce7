"""Speculative sampling is exact: verify (specdec/verify.py) and speculative_generate (specdec/speculative.py).

What "exact" means (notebook 09, section 1): the emitted tokens follow the target's autoregressive law,
whatever the draft proposes. The evidence, from the most certain to the most end-to-end:

1. the one-step identity min(p, q) + (1 - sum min(p, q)) * residual = p, to 1e-12;
2. an exact enumeration of every branch of the algorithm for a 3-token vocabulary;
3. chi-square tests over 10^5 runs of the verification step with toy bigram models, at the first
   position, a later one, the bonus position and a pair, under three sampling settings, each test
   paired with shortcuts it must reject (a test that cannot fail proves nothing);
4. the same tests on speculative_generate itself, end to end, with fewer runs;
5. greedy speculative decoding reproduces greedy decoding token for token with the bundled models.
"""

import itertools
import sys
from collections import defaultdict
from functools import cache
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from helpers import FixedUniform
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from threadpoolctl import threadpool_limits

import specdec.speculative
from specdec import SamplingParams, SpeculativeResult, generate, load_model, sampling_probs, speculative_generate
from specdec.drawing import chi_square_test, draw
from specdec.exact import Rule, TableModel, bigram
from specdec.exact import round_law as oracle_round_law
from specdec.tokenizer import CharTokenizer
from specdec.verify import residual_distribution, speculative_verify, verify_drawn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "training"))

import corpus  # noqa: E402

ALPHA = 1e-3  # the exact algorithm must not be rejected at this level (seeds are fixed: a deterministic verdict)
REJECT = 1e-6  # every shortcut must be rejected at this level by the very same test


# The toy pair used by the statistical tests (vocabulary 5, the prompt is the single token 0). The
# draft is deliberately poor (acceptance 0.3-1 per row), so every shortcut below visibly changes
# the law (test_the_toy_tables_make_every_shortcut_visible checks it exactly). Under top-k = 3 and
# top-p = 0.8 the draft puts zeros where the target does not and the other way round, and under
# top-p = 0.8 one row is the same point mass in both (p = q).
TARGET_LOGITS = np.array(
    [
        [-2.3, 1.5, 2.3, 1.4, 2.9],
        [0.0, -2.8, -0.1, 1.0, 0.8],
        [-1.2, -4.1, 4.2, 0.0, 0.9],
        [-1.3, -1.6, 1.3, 1.9, -1.9],
        [-1.1, -1.4, -2.2, -1.7, -0.2],
    ]
)
DRAFT_LOGITS = np.array(
    [
        [-5.8, 5.8, -0.6, 0.7, 6.5],
        [-0.8, -2.8, 1.1, 4.4, -1.0],
        [1.8, -6.3, 8.0, 2.3, 2.0],
        [-1.9, 1.5, 3.2, 4.5, -4.5],
        [-1.1, -0.7, -1.0, -4.9, -3.5],
    ]
)
V = 5
PROMPT = 0  # the one prompt token: the first drafted and emitted tokens are conditioned on it
GAMMA = 2
MAX_NEW = 3  # tokens per run: the 3rd is the bonus of round 1 or comes from a later round
SETTINGS = {
    "T=1": SamplingParams(1.0),
    "T=0.7,top_k=3": SamplingParams(0.7, top_k=3),
    "T=1.3,top_p=0.8": SamplingParams(1.3, top_p=0.8),
}
N_DRAWS = 100_000  # runs per setting for the library's verification step
# Runs per shortcut: fewer than N_DRAWS, which only makes a shortcut harder to reject (its expected
# statistic grows in proportion to the runs). test_the_toy_tables_make_every_shortcut_visible checks,
# exactly, that each expected statistic is still far above the 1e-6 threshold at these sizes.
N_CONTROL = 5_000
N_END_TO_END = 10_000  # runs of speculative_generate itself (~0.3 ms each here: 10^5 would take ~30 s)
N_END_TO_END_CONTROL = 3_000


def tables(setting: str) -> tuple[np.ndarray, np.ndarray]:
    """The target's and the draft's next-token distributions, P[a, b] = p(b | a), under one setting."""
    params = SETTINGS[setting]
    return sampling_probs(TARGET_LOGITS, params), sampling_probs(DRAFT_LOGITS, params)


# --- the verification step and its shortcuts: all with verify_drawn's signature -----------------


def accepted_prefix(accepted: np.ndarray) -> int:
    return accepted.size if accepted.all() else int(np.argmin(accepted))


def ratios(tokens, q, p) -> np.ndarray:
    rows = np.arange(tokens.size)
    return p[rows, tokens] / q[rows, tokens]  # (gamma,)


def always_accepts(tokens, q, p, rng):
    """Shortcut: keep every draft token without testing it, then the bonus."""
    return np.append(tokens, draw(p[tokens.size], rng)).astype(np.int64), tokens.size


def falls_back_to_p(tokens, q, p, rng):
    """Shortcut: at a rejection, draw from the target p instead of the residual."""
    n = accepted_prefix(rng.random(tokens.size) < ratios(tokens, q, p))
    return np.append(tokens[:n], draw(p[n], rng)).astype(np.int64), n


def keeps_the_rejected_draft(tokens, q, p, rng):
    """Shortcut (a reading of the seed post's "fall back to the last accepted token"): on rejection, keep the draft."""
    n = accepted_prefix(rng.random(tokens.size) < ratios(tokens, q, p))
    last = tokens[n] if n < tokens.size else draw(p[n], rng)
    return np.append(tokens[:n], last).astype(np.int64), n


def redrafts_until_accepted(tokens, q, p, rng):
    """Shortcut (another reading of the seed post's fallback): on rejection, redraw from q until a token passes."""
    n = accepted_prefix(rng.random(tokens.size) < ratios(tokens, q, p))
    if n == tokens.size:
        return np.append(tokens, draw(p[n], rng)).astype(np.int64), n
    for _ in range(10_000):  # sum min(p, q) >= 0.3 in every row of the toy tables: ends fast
        x = int(draw(q[n], rng))
        if rng.random() < p[n, x] / q[n, x]:
            return np.append(tokens[:n], x).astype(np.int64), n
    raise AssertionError("re-drafting never accepted")


def reuses_one_uniform(tokens, q, p, rng):
    """Shortcut: one uniform for the whole round instead of a fresh one per position."""
    n = accepted_prefix(rng.random() < ratios(tokens, q, p))
    last = draw(p[n], rng) if n == tokens.size else draw(residual_distribution(p[n], q[n]), rng)
    return np.append(tokens[:n], last).astype(np.int64), n


def bonus_off_by_one(tokens, q, p, rng):
    """Shortcut with an indexing slip: the bonus token is drawn from p[gamma - 1] instead of p[gamma]."""
    n = accepted_prefix(rng.random(tokens.size) < ratios(tokens, q, p))
    last = draw(p[n - 1], rng) if n == tokens.size else draw(residual_distribution(p[n], q[n]), rng)
    return np.append(tokens[:n], last).astype(np.int64), n


def draft_from_q(Q, contexts, g, rng):
    """Each run's g draft tokens, token i drawn from q(. | token i - 1): (runs, g)."""
    drafts = np.empty((contexts.size, g), dtype=np.int64)
    last = contexts
    for i in range(g):
        last = drafts[:, i] = draw(Q[last], rng)
    return drafts


def draft_argmax(Q, contexts, g, rng):
    """Shortcut: draft the draft's argmax but report its softmax q (as if the token had been drawn from q)."""
    drafts = np.empty((contexts.size, g), dtype=np.int64)
    last = contexts
    for i in range(g):
        last = drafts[:, i] = np.argmax(Q[last], axis=-1)
    return drafts


SHORTCUTS = {  # name -> (how the draft proposes, how the proposal is verified)
    "exact": (draft_from_q, verify_drawn),  # the library's verification step
    "always accept": (draft_from_q, always_accepts),
    "fall back to p": (draft_from_q, falls_back_to_p),
    "keep the rejected draft": (draft_from_q, keeps_the_rejected_draft),
    "re-draft until accepted": (draft_from_q, redrafts_until_accepted),
    "reuse one uniform": (draft_from_q, reuses_one_uniform),
    "argmax draft, softmax q": (draft_argmax, verify_drawn),
    "bonus from p[gamma - 1]": (draft_from_q, bonus_off_by_one),
}


@cache
def simulate(setting: str, shortcut: str, n_runs: int) -> tuple[np.ndarray, np.ndarray]:
    """n_runs generations of MAX_NEW tokens after PROMPT, round by round as speculative_generate does.

    Drafting and the target's rows are table lookups done for all runs at once; the verification
    step is called once per run and round, so for "exact" every emitted token went through the
    library's verify_drawn. Rounds draft g = min(GAMMA, remaining - 1) tokens and g = 0 is a plain
    draw from p, as in speculative_generate. Returns the tokens (n_runs, MAX_NEW) and the number
    of drafts accepted in each run's first round (n_runs,).
    """
    P, Q = tables(setting)
    drafter, verifier = SHORTCUTS[shortcut]
    rng = np.random.default_rng([list(SETTINGS).index(setting), list(SHORTCUTS).index(shortcut), n_runs])
    tokens = np.zeros((n_runs, MAX_NEW), dtype=np.int64)
    length = np.zeros(n_runs, dtype=np.int64)
    first_round = np.full(n_runs, -1)
    last = np.full(n_runs, PROMPT)
    while (length < MAX_NEW).any():
        for remaining in range(1, MAX_NEW + 1):
            runs = np.flatnonzero(MAX_NEW - length == remaining)
            g = min(GAMMA, remaining - 1)
            if runs.size == 0:
                continue
            if g == 0:
                emitted = [[token] for token in draw(P[last[runs]], rng).tolist()]
                accepted = [0] * runs.size
            else:
                drafts = drafter(Q, last[runs], g, rng)  # (r, g)
                contexts = np.concatenate([last[runs][:, None], drafts], axis=1)  # (r, g + 1)
                q_rows, p_rows = Q[contexts[:, :g]], P[contexts]  # (r, g, V), (r, g + 1, V)
                outcomes = [verifier(drafts[j], q_rows[j], p_rows[j], rng) for j in range(runs.size)]
                emitted = [out.tolist() for out, _ in outcomes]
                accepted = [n for _, n in outcomes]
            for run, out, n in zip(runs.tolist(), emitted, accepted, strict=True):
                tokens[run, length[run] : length[run] + len(out)] = out
                if length[run] == 0:
                    first_round[run] = n
                length[run] += len(out)
                last[run] = out[-1]
    return tokens, first_round


# --- the four statistics and the target's law for each -------------------------------------------

POSITIONS = ["first token", "third token", "bonus token", "tokens 1 and 2"]


def observed(position: str, tokens: np.ndarray, first_round: np.ndarray) -> np.ndarray:
    """The counts a position's test compares with the target's law."""
    if position == "first token":
        return np.bincount(tokens[:, 0], minlength=V)
    if position == "third token":
        return np.bincount(tokens[:, 2], minlength=V)
    if position == "tokens 1 and 2":
        return np.bincount(tokens[:, 0] * V + tokens[:, 1], minlength=V * V)
    # Rounds that accepted all GAMMA drafts: (last draft, bonus) per cell, plus one cell for the rest.
    all_accepted = first_round == GAMMA
    cells = np.bincount(tokens[all_accepted, GAMMA - 1] * V + tokens[all_accepted, GAMMA], minlength=V * V)
    return np.append(cells, (~all_accepted).sum())


def expected(position: str, setting: str) -> np.ndarray:
    """The law those counts must follow: the target's autoregressive law p(x1) p(x2 | x1) p(x3 | x2).

    For the bonus: a round accepts drafts x1..x_gamma with probability prod_i min(p, q)(x_i | x_(i-1))
    (draw from q, accept with min(1, p / q)), and then the bonus b must follow p(b | x_gamma).
    """
    P, Q = tables(setting)
    if position == "first token":
        return P[PROMPT]
    if position == "third token":
        return P[PROMPT] @ P @ P
    if position == "tokens 1 and 2":
        return (P[PROMPT][:, None] * P).ravel()
    reach = np.minimum(P[PROMPT], Q[PROMPT])  # (V,) P(first draft accepted and = a)
    for _ in range(GAMMA - 1):
        reach = reach @ np.minimum(P, Q)  # (V,) P(all accepted so far, last draft = a)
    return np.append((reach[:, None] * P).ravel(), 1 - reach.sum())


def statistical_test(position: str, setting: str, tokens: np.ndarray, first_round: np.ndarray):
    return chi_square_test(observed(position, tokens, first_round), expected(position, setting))


# Which shortcuts each test must reject. Shortcuts that leave a statistic's law unchanged are
# absent: reusing one uniform does not change the first token, an off-by-one bonus does not
# change tokens 1 and 2, and the rejection branch does not change the all-accepted rounds.
# Reusing one uniform does change the third token's law, but too little to show at N_CONTROL runs.
REJECTS = {
    "first token": [
        "always accept",
        "fall back to p",
        "keep the rejected draft",
        "re-draft until accepted",
        "argmax draft, softmax q",
    ],
    "third token": [
        "always accept",
        "fall back to p",
        "keep the rejected draft",
        "re-draft until accepted",
        "argmax draft, softmax q",
        "bonus from p[gamma - 1]",
    ],
    "bonus token": ["always accept", "reuse one uniform", "argmax draft, softmax q", "bonus from p[gamma - 1]"],
    "tokens 1 and 2": [
        "always accept",
        "fall back to p",
        "keep the rejected draft",
        "re-draft until accepted",
        "reuse one uniform",
        "argmax draft, softmax q",
    ],
}
CONTROL_CASES = [
    (position, setting, shortcut) for position in POSITIONS for setting in SETTINGS for shortcut in REJECTS[position]
]

# speculative_generate itself is tested end to end too, with its verification step swapped for a
# shortcut where a control is needed. At ~0.3 ms a run here, 10^5 runs per setting would take
# minutes, so end to end it is one setting (zeros in p and q), N_END_TO_END runs, and the shortcuts
# that are visible at N_END_TO_END_CONTROL runs (reusing one uniform is too subtle at the third token).
END_TO_END_SETTING = "T=0.7,top_k=3"
END_TO_END_CONTROLS = [
    ("first token", "always accept"),
    ("first token", "fall back to p"),
    ("third token", "always accept"),
    ("third token", "fall back to p"),
    ("bonus token", "always accept"),
    ("bonus token", "reuse one uniform"),
    ("tokens 1 and 2", "always accept"),
    ("tokens 1 and 2", "fall back to p"),
    ("tokens 1 and 2", "reuse one uniform"),
]


# --- exact enumeration of the algorithm's law: the one independent oracle --------------------------
#
# The course's oracle is specdec.exact (notebook 09): rules, the walk over drafted blocks, the chaining
# of rounds. The walk below is written independently, on purpose, and is the only other one in the
# tree: it follows a round the way the algorithm runs (draft, test, go on or stop), recursively, and
# tracks the single uniform of "reuse one uniform" as an interval, where specdec.exact enumerates
# drafted blocks and multiplies acceptance laws. A mistake shared by the course's oracle and the
# library (a wrong residual, a bonus from the wrong row) would pass every test that uses the oracle;
# test_the_independent_walk_agrees_with_the_courses_oracle checks the two against each other.


def round_law(P, Q, context: int, g: int, shortcut: str = "exact") -> dict:
    """Exact law of one round's outcome, {(emitted tokens, n accepted): probability}, by walking every branch.

    Draft x ~ q(. | last) (or q's argmax), accept with min(1, p(x) / q(x)), go on; at the first
    rejection emit one token from the residual and stop; after g acceptances emit the bonus.
    "reuse one uniform" tracks the interval [0, h) the single uniform must lie in.
    """
    out = defaultdict(float)
    if g == 0:
        for y in np.flatnonzero(P[context]):
            out[((int(y),), 0)] += P[context, y]
        return out

    def walk(contexts: list, prob: float, h: float) -> None:
        i, last = len(contexts) - 1, contexts[-1]
        if i == g:
            row = P[contexts[-2]] if shortcut == "bonus from p[gamma - 1]" else P[last]
            for b in np.flatnonzero(row):
                out[(tuple(contexts[1:]) + (int(b),), g)] += prob * row[b]
            return
        if shortcut == "argmax draft, softmax q":
            proposals = [(int(np.argmax(Q[last])), 1.0)]
        else:
            proposals = [(int(x), Q[last, x]) for x in np.flatnonzero(Q[last])]
        for x, weight in proposals:
            ratio = P[last, x] / Q[last, x]
            accept, h_next = min(1.0, ratio), h
            if shortcut == "always accept":
                accept = 1.0
            elif shortcut == "reuse one uniform":
                accept, h_next = min(h, ratio) / h, min(h, ratio)
            if accept > 0:
                walk(contexts + [x], prob * weight * accept, h_next)
            if accept < 1:
                if shortcut == "fall back to p":
                    law = P[last]
                elif shortcut == "keep the rejected draft":
                    law = np.eye(P.shape[1])[x]
                elif shortcut == "re-draft until accepted":
                    law = np.minimum(P[last], Q[last]) / np.minimum(P[last], Q[last]).sum()
                else:
                    law = residual_distribution(P[last], Q[last])
                for y in np.flatnonzero(law):
                    out[(tuple(contexts[1:]) + (int(y),), i)] += prob * weight * (1 - accept) * law[y]

    walk([context], 1.0, 1.0)
    return out


def sequence_law(P, Q, context, gamma, k, shortcut="exact", max_new_tokens=None) -> dict:
    """Exact law of the first k emitted tokens and the first round's acceptances: {(tokens, n): probability}.

    Rounds of gamma drafts follow each other until k tokens are out; with max_new_tokens, a round
    drafts min(gamma, remaining - 1) as speculative_generate does.
    """
    out = defaultdict(float)

    def go(prefix: tuple, prob: float, first) -> None:
        if len(prefix) >= k:
            out[(prefix[:k], first)] += prob
            return
        g = gamma if max_new_tokens is None else min(gamma, max_new_tokens - len(prefix) - 1)
        for (emitted, n), weight in round_law(P, Q, prefix[-1] if prefix else context, g, shortcut).items():
            go(prefix + emitted, prob * weight, n if first is None else first)

    go((), 1.0, None)
    return out


def joint_of_first_tokens(law: dict, vocab: int, k: int) -> np.ndarray:
    joint = np.zeros((vocab,) * k)
    for (tokens, _), prob in law.items():
        joint[tokens] += prob
    return joint


def autoregressive_law(P, context: int, k: int) -> np.ndarray:
    """p(x1 | context) p(x2 | x1) ... p(xk | x(k-1)) for every sequence, shape (V,) * k."""
    law = np.zeros((P.shape[0],) * k)
    for tokens in itertools.product(range(P.shape[0]), repeat=k):
        law[tokens] = np.prod(P[(context,) + tokens[:-1], tokens])
    return law


TINY_CASES = {  # (target probabilities, draft probabilities), vocabulary 3
    "softmax": (
        sampling_probs(np.array([[1.0, 0.2, -1.0], [0.0, 1.5, 0.3], [-0.5, 0.4, 1.2]])),
        sampling_probs(np.array([[-0.5, 1.0, 0.3], [1.2, 0.1, 0.0], [0.3, 0.3, -1.0]])),
    ),
    "top-k zeros": (
        sampling_probs(np.array([[1.0, 0.2, -1.0], [0.0, 1.5, 0.3], [-0.5, 0.4, 1.2]]), SamplingParams(0.8, 2)),
        sampling_probs(np.array([[-0.5, 1.0, 0.3], [1.2, 0.1, 0.0], [0.3, 0.3, -1.0]]), SamplingParams(0.8, 2)),
    ),
    "disjoint and equal rows": (
        np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [0.0, 0.0, 1.0]]),
        np.array([[0.0, 0.0, 1.0], [0.2, 0.3, 0.5], [0.6, 0.4, 0.0]]),
    ),
}


@pytest.mark.parametrize("case", TINY_CASES)
def test_exact_enumeration_of_the_first_two_tokens_equals_the_targets_law(case):
    P, Q = TINY_CASES[case]
    for context in range(3):
        law = sequence_law(P, Q, context, gamma=2, k=2)
        joint = joint_of_first_tokens(law, 3, 2)
        assert abs(joint.sum() - 1) < 1e-12
        np.testing.assert_allclose(joint, autoregressive_law(P, context, 2), rtol=0, atol=1e-12)


def test_the_enumeration_can_tell_the_shortcuts_apart():
    """The comparison above can fail: every shortcut's law of the first two tokens is off by more than 1e-3."""
    P, Q = TINY_CASES["softmax"]
    target = autoregressive_law(P, 0, 2)
    for shortcut in sorted(set(SHORTCUTS) - {"exact", "bonus from p[gamma - 1]"}):
        joint = joint_of_first_tokens(sequence_law(P, Q, 0, gamma=2, k=2, shortcut=shortcut), 3, 2)
        assert abs(joint.sum() - 1) < 1e-12
        assert np.abs(joint - target).max() > 1e-3, shortcut
    # with gamma = 2 the bonus is the third token: there the off-by-one bonus shows
    joint = joint_of_first_tokens(sequence_law(P, Q, 0, gamma=2, k=3, shortcut="bonus from p[gamma - 1]"), 3, 3)
    assert np.abs(joint - autoregressive_law(P, 0, 3)).max() > 1e-3


# The shortcuts the course's oracle also knows, as its Rule fields (specdec.exact.RULES). Its "re-draft
# until accepted" drafts every position from norm(min(p, q)); this file's emits one such token at the
# first rejection and stops: two different mistakes, so they are not compared.
ORACLE_RULES = {
    "exact": Rule(),
    "always accept": Rule(uniforms="none"),
    "reuse one uniform": Rule(uniforms="shared"),
    "fall back to p": Rule(on_reject="p"),
    "argmax draft, softmax q": Rule(draft="argmax"),
    "bonus from p[gamma - 1]": Rule(bonus_row=-1),
}


@pytest.mark.parametrize("shortcut", ORACLE_RULES)
@pytest.mark.parametrize("case", TINY_CASES)
def test_the_independent_walk_agrees_with_the_courses_oracle(case, shortcut):
    """specdec.exact.round_law and this file's round_law, written apart, give the same law of a round."""
    P, Q = TINY_CASES[case]
    for context in range(3):
        for gamma in (1, 2, 3):
            walked = defaultdict(float)
            for (tokens, _), prob in round_law(P, Q, context, gamma, shortcut).items():
                walked[tokens] += prob
            oracle = oracle_round_law(ORACLE_RULES[shortcut], bigram(P), bigram(Q), (context,), gamma)
            for tokens in set(walked) | set(oracle):
                assert walked.get(tokens, 0.0) == pytest.approx(oracle.get(tokens, 0.0), abs=1e-12), (
                    context,
                    gamma,
                    tokens,
                )


@cache
def exact_cells(setting: str, shortcut: str, position: str) -> np.ndarray:
    """The exact law of a position's cells when the verification step takes `shortcut` (by enumeration)."""
    P, Q = tables(setting)
    law = sequence_law(P, Q, PROMPT, GAMMA, MAX_NEW, shortcut, max_new_tokens=MAX_NEW)
    return sum(prob * observed(position, np.array([tokens]), np.array([n])) for (tokens, n), prob in law.items())


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("position", POSITIONS)
def test_the_expected_laws_are_what_exact_enumeration_gives(position, setting):
    np.testing.assert_allclose(exact_cells(setting, "exact", position), expected(position, setting), rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("position", "setting", "shortcut", "n_runs"),
    [case + (N_CONTROL,) for case in CONTROL_CASES]
    + [(position, END_TO_END_SETTING, shortcut, N_END_TO_END_CONTROL) for position, shortcut in END_TO_END_CONTROLS],
)
def test_the_toy_tables_make_every_shortcut_visible(position, setting, shortcut, n_runs):
    """Exactly, before sampling: each shortcut a test must reject changes that test's law by a lot.

    The noncentrality n_runs * sum (law - expected)^2 / expected is how far above its dof the
    chi-square statistic of a shortcut's runs lands on average; p = 1e-6 needs less than 80.
    Or the shortcut emits tokens the target cannot, and some run (almost surely) draws one.
    """
    cells, target = exact_cells(setting, shortcut, position), expected(position, setting)
    noncentrality = n_runs * ((cells - target)[target > 0] ** 2 / target[target > 0]).sum()
    impossible_draws = n_runs * cells[target == 0].sum()
    assert noncentrality > 150 or impossible_draws > 20, (noncentrality, impossible_draws)


# --- the one-step identity ----------------------------------------------------------------------


def one_step_law(p, q) -> np.ndarray:
    """Law of the emitted token when one draft x ~ q is tested: accepted w.p. min(1, p/q), else the residual."""
    overlap = np.minimum(p, q)  # (..., V) P(drafted and accepted)
    return overlap + (1 - overlap.sum(axis=-1, keepdims=True)) * residual_distribution(p, q)


def normalised(weights: np.ndarray) -> np.ndarray:
    return weights / weights.sum()


distributions = st.integers(1, 12).flatmap(
    lambda v: st.tuples(
        *[arrays(np.float64, v, elements=st.just(0.0) | st.floats(1e-9, 1.0)).filter(lambda w: w.sum() > 0)] * 2
    )
)


@given(distributions)
def test_one_step_identity_on_random_distributions_with_zeros(pair):
    p, q = normalised(pair[0]), normalised(pair[1])
    np.testing.assert_allclose(one_step_law(p, q), p, rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_one_step_identity_on_random_rows_sharp_and_flat(seed):
    rng = np.random.default_rng(seed)
    concentration = [0.05, 0.5, 5.0][seed % 3]
    p, q = rng.dirichlet(np.full(50, concentration), size=(2, 40))  # (40, 50) each
    np.testing.assert_allclose(one_step_law(p, q), p, rtol=0, atol=1e-12)


def test_one_step_identity_with_disjoint_supports():
    p, q = np.array([0.5, 0.5, 0.0, 0.0]), np.array([0.0, 0.0, 0.3, 0.7])
    np.testing.assert_array_equal(residual_distribution(p, q), p)  # every draft is rejected
    np.testing.assert_allclose(one_step_law(p, q), p, rtol=0, atol=1e-12)


def test_when_p_equals_q_the_residual_falls_back_to_p():
    p = np.array([0.1, 0.0, 0.6, 0.3])
    np.testing.assert_array_equal(residual_distribution(p, p), p)
    np.testing.assert_allclose(one_step_law(p, p), p, rtol=0, atol=1e-12)


def test_one_step_identity_when_q_has_zeros_where_p_has_mass():
    p, q = np.array([0.2, 0.3, 0.1, 0.4]), np.array([0.0, 0.6, 0.0, 0.4])
    residual = residual_distribution(p, q)
    np.testing.assert_allclose(residual, [2 / 3, 0, 1 / 3, 0], rtol=0, atol=1e-15)  # only where q falls short
    np.testing.assert_allclose(one_step_law(p, q), p, rtol=0, atol=1e-12)


def test_residual_distribution_works_row_by_row_on_batches():
    rng = np.random.default_rng(5)
    p, q = rng.dirichlet(np.full(7, 0.3), size=(2, 4, 3))  # (4, 3, 7) each
    q[0, 0] = p[0, 0]  # one row with p = q
    q[1, 1] = np.eye(7)[np.argmin(p[1, 1])]  # one row (nearly) disjoint
    batched = residual_distribution(p, q)
    for index in np.ndindex(4, 3):
        np.testing.assert_array_equal(batched[index], residual_distribution(p[index], q[index]))
    assert (batched >= 0).all() and np.allclose(batched.sum(axis=-1), 1, rtol=0, atol=1e-12)
    np.testing.assert_allclose(one_step_law(p, q), p, rtol=0, atol=1e-12)


def test_residual_distribution_refuses_mismatched_shapes():
    with pytest.raises(ValueError, match=r"p and q must have the same shape, got \(3,\) and \(4,\)"):
        residual_distribution(np.full(3, 1 / 3), np.full(4, 0.25))


# --- verification step: the exact rule, one uniform at a time -----------------------------------


VERIFY_Q = np.array([[0.5, 0.5, 0.0], [0.25, 0.25, 0.5]])
VERIFY_P = np.array([[0.25, 0.75, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])


@pytest.mark.parametrize(
    ("tokens", "u", "emitted", "n"),
    [
        ([0, 2], 0.49, [0, 0], 1),  # 0.49 < p/q = 0.5 accepts; p(2) = 0 rejects; residual [0.5, 0.5, 0]
        ([0, 2], 0.5, [1], 0),  # u = p/q rejects (strict); residual of row 0 is the point mass on 1
        ([0, 2], 0.0, [0, 0], 1),  # p(x) = 0 is rejected even with u = 0
        ([1, 0], 0.999, [1, 0, 2], 2),  # p/q = 1.5 and 2: always accepted; bonus from p[2] = point mass on 2
    ],
)
def test_verify_accepts_iff_u_is_below_p_over_q_then_draws_the_residual_or_bonus(tokens, u, emitted, n):
    for verify in (speculative_verify, verify_drawn):
        out, accepted = verify(np.array(tokens), VERIFY_Q, VERIFY_P, FixedUniform(u))
        assert out.dtype == np.int64 and out.tolist() == emitted and accepted == n


def test_speculative_verify_is_verify_drawn_after_its_checks():
    rng = np.random.default_rng(8)
    for seed in range(50):
        q, p = rng.dirichlet(np.full(6, 0.5), size=3), rng.dirichlet(np.full(6, 0.5), size=4)
        tokens = np.array([int(np.argmax(row)) for row in q])
        first = speculative_verify(tokens, q, p, np.random.default_rng(seed))
        second = verify_drawn(tokens, q, p, np.random.default_rng(seed))
        np.testing.assert_array_equal(first[0], second[0])
        assert first[1] == second[1]


# --- chi-square at 10^5 runs, and the shortcuts the same tests reject --------------------------


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("position", POSITIONS)
def test_speculative_sampling_follows_the_target(position, setting):
    result = statistical_test(position, setting, *simulate(setting, "exact", N_DRAWS))
    assert result.p_value > ALPHA, result


@pytest.mark.parametrize(("position", "setting", "shortcut"), CONTROL_CASES)
def test_the_same_test_rejects_each_shortcut(position, setting, shortcut):
    result = statistical_test(position, setting, *simulate(setting, shortcut, N_CONTROL))
    assert result.p_value < REJECT, result


def test_every_statistical_test_has_at_least_two_negative_controls_in_every_setting():
    for position in POSITIONS:
        for setting in SETTINGS:
            assert sum(case[:2] == (position, setting) for case in CONTROL_CASES) >= 2


# --- the same tests on speculative_generate end to end ------------------------------------------


@cache
def run_end_to_end(setting: str, shortcut: str, n_runs: int) -> tuple[np.ndarray, np.ndarray]:
    """n_runs calls of speculative_generate with the toy pair; a shortcut replaces its verification step."""
    target, draft = TableModel(TARGET_LOGITS, "target"), TableModel(DRAFT_LOGITS, "draft")
    rng = np.random.default_rng([99, list(SETTINGS).index(setting), list(SHORTCUTS).index(shortcut)])
    tokens = np.zeros((n_runs, MAX_NEW), dtype=np.int64)
    first_round = np.zeros(n_runs, dtype=np.int64)
    with mock.patch.object(specdec.speculative, "verify_drawn", SHORTCUTS[shortcut][1]):
        for i in range(n_runs):
            result = speculative_generate(target, draft, [PROMPT], MAX_NEW, SETTINGS[setting], GAMMA, rng)
            tokens[i], first_round[i] = result.tokens, result.accepted_per_round[0]
    return tokens, first_round


@pytest.mark.parametrize("position", POSITIONS)
def test_speculative_generate_follows_the_target_end_to_end(position):
    result = statistical_test(position, END_TO_END_SETTING, *run_end_to_end(END_TO_END_SETTING, "exact", N_END_TO_END))
    assert result.p_value > ALPHA, result


@pytest.mark.parametrize(("position", "shortcut"), END_TO_END_CONTROLS)
def test_end_to_end_tests_reject_shortcuts_in_speculative_generate(position, shortcut):
    tokens, first_round = run_end_to_end(END_TO_END_SETTING, shortcut, N_END_TO_END_CONTROL)
    result = statistical_test(position, END_TO_END_SETTING, tokens, first_round)
    assert result.p_value < REJECT, result


# --- greedy: token for token the same as generate -----------------------------------------------


@pytest.fixture(scope="module")
def bundled_pair():
    return load_model("target"), load_model("draft")


@pytest.fixture(scope="module")
def heldout_prompts() -> np.ndarray:
    """24 held-out windows of the standard-library corpus (the target never trained on them)."""
    return corpus.heldout_windows(corpus.load_corpus().heldout, 24, context=220)  # (24, 221)


def test_greedy_speculative_decoding_is_greedy_decoding_token_for_token(bundled_pair, heldout_prompts):
    """24 prompts of 8 to 215 tokens, gamma 1, 3 or 8, 64 new tokens or up to a full context, some end tokens."""
    target, draft = bundled_pair
    stopped_early, greedy = 0, SamplingParams(0)
    with threadpool_limits(limits=1, user_api="blas"):  # small products: one thread is faster and steadier
        for w, window in enumerate(heldout_prompts):
            size = 8 + 9 * w  # 8 .. 215 tokens; the last case fills the target's context exactly
            max_new = min(64, target.max_context + 1 - size)
            gamma = (1, 3, 8)[w % 3]
            reference = generate(target, window[:size], max_new, greedy).tokens
            end_token = None
            if w % 4 == 3:  # stop at a token the greedy output is known to reach halfway
                end_token = int(reference[max_new // 2])
                reference = generate(target, window[:size], max_new, greedy, end_token=end_token).tokens
                assert reference.size <= max_new // 2 + 1 and reference[-1] == end_token
                stopped_early += 1
            result = speculative_generate(target, draft, window[:size], max_new, greedy, gamma, None, end_token)
            np.testing.assert_array_equal(result.tokens, reference, err_msg=f"window {w}, gamma {gamma}")
    assert size + max_new - 1 == target.max_context
    assert stopped_early == 6


def test_greedy_needs_no_rng_and_ignores_one(bundled_pair):
    target, draft = bundled_pair
    prompt = CharTokenizer().encode("def main(argv):\n    ")
    with threadpool_limits(limits=1, user_api="blas"):
        without = speculative_generate(target, draft, prompt, 30, SamplingParams(0), 4)
        with_rng = speculative_generate(target, draft, prompt, 30, SamplingParams(0), 4, np.random.default_rng(1))
    np.testing.assert_array_equal(without.tokens, with_rng.tokens)


# --- reproducibility and bookkeeping ------------------------------------------------------------


def test_same_seed_same_output_and_different_seeds_differ(bundled_pair):
    target, draft = bundled_pair
    prompt = CharTokenizer().encode("import os\n\ndef ")
    with threadpool_limits(limits=1, user_api="blas"):
        runs = [
            speculative_generate(target, draft, prompt, 40, SamplingParams(1.0), 4, np.random.default_rng(seed))
            for seed in (7, 7, 8)
        ]
    np.testing.assert_array_equal(runs[0].tokens, runs[1].tokens)
    assert runs[0].accepted_per_round == runs[1].accepted_per_round
    assert not np.array_equal(runs[0].tokens, runs[2].tokens)


@pytest.mark.parametrize("gamma", [1, 3, 8])
def test_an_end_token_cuts_the_same_draws_right_after_its_first_occurrence(gamma):
    """Up to the round that emits the end token, the generator is used exactly as without one."""
    target, draft = TableModel(TARGET_LOGITS, "target"), TableModel(DRAFT_LOGITS, "draft")
    stopped = 0
    for seed in range(30):
        args = (target, draft, [PROMPT], 20, SETTINGS["T=1"], gamma)
        full = speculative_generate(*args, np.random.default_rng(seed)).tokens
        cut = speculative_generate(*args, np.random.default_rng(seed), end_token=1).tokens
        end = int(np.argmax(full == 1)) + 1 if (full == 1).any() else full.size
        np.testing.assert_array_equal(cut, full[:end])
        stopped += cut.size < full.size
    assert stopped >= 10


@pytest.mark.parametrize("gamma", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("max_new", [0, 1, 2, 3, 7, 20])
def test_the_statistics_add_up_and_generation_stops_exactly_at_max_new_tokens(gamma, max_new):
    setting = "T=1.3,top_p=0.8"
    target, draft = TableModel(TARGET_LOGITS, "target"), TableModel(DRAFT_LOGITS, "draft")
    rng = np.random.default_rng(gamma * 100 + max_new)
    result = speculative_generate(target, draft, [PROMPT, 3], max_new, SETTINGS[setting], gamma, rng)
    assert isinstance(result, SpeculativeResult)
    assert result.tokens.dtype == np.int64 and result.tokens.size == max_new
    assert result.target_calls == target.calls  # one target call per round
    assert result.draft_calls == draft.calls == result.drafted  # the draft scores one token per drafted token
    assert result.tokens.size == result.accepted + result.target_calls  # a round emits its accepted drafts + 1
    assert result.drafted == sum(result.drafted_per_round) and result.accepted == sum(result.accepted_per_round)
    rounds = zip(result.accepted_per_round, result.drafted_per_round, strict=True)
    assert all(0 <= n <= g <= min(gamma, max_new - 1) for n, g in rounds)
    assert 0 <= result.accepted <= result.drafted
    assert 0 <= result.acceptance_rate <= 1 and 0 <= result.alpha <= 1
    if max_new:
        assert result.tokens_per_call == result.tokens.size / result.target_calls
        previous = np.append(3, result.tokens[:-1])  # the prompt ends with token 3
        assert (tables(setting)[0][previous, result.tokens] > 0).all()  # never a token the target cannot emit
    else:
        assert result.target_calls == 0 and result.tokens_per_call == 0


# --- bad input: the error type, and a message that names the argument and the shapes -------------

Q2 = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])  # (gamma = 2, V = 3)
P3 = np.array([[0.2, 0.8, 0.0], [0.1, 0.1, 0.8], [1 / 3, 1 / 3, 1 / 3]])  # (gamma + 1, V)
TOKENS = np.array([0, 2])


def toy_pair(target_context: int = 16, draft_context: int = 8, draft_vocab: int = V):
    target = TableModel(TARGET_LOGITS, "target", max_context=target_context)
    return target, TableModel(np.zeros((draft_vocab, draft_vocab)), "draft", max_context=draft_context)


def test_draft_and_target_vocabularies_must_match():
    target, draft = toy_pair(draft_vocab=6)
    with pytest.raises(ValueError, match=r"target and draft must share a vocabulary: vocab_size 5 vs 6"):
        speculative_generate(target, draft, [0], 3, SamplingParams(1.0), 2, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"target_probs must have shape \(gamma \+ 1, V\) = \(3, 3\), got \(3, 4\)"):
        speculative_verify(TOKENS, Q2, np.full((3, 4), 0.25), np.random.default_rng(0))


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ([0.2, 0.3, 0.4], r"draft_probs must sum to 1 .* in row \(1,\)"),
        ([0.6, -0.1, 0.5], r"draft_probs contains a negative probability \(-0.1\) in row \(1,\)"),
        ([np.nan, 0.5, 0.5], r"draft_probs contains NaN in row \(1,\)"),
    ],
)
def test_draft_probs_rows_must_be_distributions(row, message):
    with pytest.raises(ValueError, match=message):
        speculative_verify(TOKENS, np.array([Q2[0], row]), P3, np.random.default_rng(0))


def test_target_probs_rows_must_be_distributions():
    with pytest.raises(ValueError, match=r"target_probs must sum to 1 .* in row \(2,\)"):
        speculative_verify(TOKENS, Q2, np.array([P3[0], P3[1], [0.5, 0.5, 0.5]]), np.random.default_rng(0))


def test_a_draft_token_must_have_positive_probability_under_its_row():
    with pytest.raises(ValueError, match=r"draft token 0 \(2\) has probability 0 under draft_probs row 0"):
        speculative_verify(np.array([2, 2]), Q2, P3, np.random.default_rng(0))


@pytest.mark.parametrize(
    ("draft_probs", "target_probs", "message"),
    [
        (np.vstack([Q2, Q2[:1]]), P3, r"draft_probs must have one row per draft token: shape \(2, V\), got \(3, 3\)"),
        (Q2[:1], P3, r"draft_probs must have one row per draft token: shape \(2, V\), got \(1, 3\)"),
        (Q2, P3[:2], r"target_probs must have shape \(gamma \+ 1, V\) = \(3, 3\), got \(2, 3\)"),
        (Q2, np.vstack([P3, P3[:1]]), r"target_probs must have shape \(gamma \+ 1, V\) = \(3, 3\), got \(4, 3\)"),
    ],
    ids=["gamma+1 draft rows", "gamma-1 draft rows", "gamma target rows", "gamma+2 target rows"],
)
def test_wrong_numbers_of_rows_are_refused_naming_both_shapes(draft_probs, target_probs, message):
    with pytest.raises(ValueError, match=message):
        speculative_verify(TOKENS, draft_probs, target_probs, np.random.default_rng(0))


@pytest.mark.parametrize(
    ("gamma", "error", "message"),
    [
        (0, ValueError, r'gamma must be an integer >= 1 or "auto", got 0'),
        (-2, ValueError, r'gamma must be an integer >= 1 or "auto", got -2'),
        (2.5, TypeError, r'gamma must be an integer >= 1 or "auto", got 2.5'),
        (2.0, TypeError, r'gamma must be an integer >= 1 or "auto", got 2.0'),
        (True, TypeError, r'gamma must be an integer >= 1 or "auto", got True'),
        (None, TypeError, r'gamma must be an integer >= 1 or "auto", got None'),
    ],
)
def test_gamma_must_be_an_integer_at_least_one(gamma, error, message):
    target, draft = toy_pair()
    with pytest.raises(error, match=message):
        speculative_generate(target, draft, [0], 3, SamplingParams(1.0), gamma, np.random.default_rng(0))


def test_numpy_integer_gamma_is_accepted():
    target, draft = toy_pair()
    result = speculative_generate(target, draft, [0], 5, SamplingParams(1.0), np.int64(2), np.random.default_rng(0))
    assert result.tokens.size == 5


@pytest.mark.parametrize(
    ("prompt_size", "max_new", "message"),
    [
        (17, 1, r"prompt \(17 tokens\) \+ max_new_tokens \(1\) needs 17 positions, more than target's max_context 16"),
        (9, 1, r"prompt \(9 tokens\) \+ max_new_tokens \(1\) needs 9 positions, more than draft's max_context 8"),
        (6, 4, r"prompt \(6 tokens\) \+ max_new_tokens \(4\) needs 9 positions, more than draft's max_context 8"),
    ],
    ids=["longer than the target's context", "longer than the draft's context", "no room for the new tokens"],
)
def test_prompts_longer_than_either_models_context_are_refused(prompt_size, max_new, message):
    target, draft = toy_pair(target_context=16, draft_context=8)
    with pytest.raises(ValueError, match=message):
        speculative_generate(target, draft, [0] * prompt_size, max_new, SamplingParams(0), 2)


def test_a_prompt_that_just_fits_both_contexts_is_fine():
    target, draft = toy_pair(target_context=16, draft_context=8)
    result = speculative_generate(target, draft, [0] * 6, 3, SamplingParams(1.0), 4, np.random.default_rng(0))
    assert result.tokens.size == 3


def test_prompt_longer_than_the_bundled_targets_context(bundled_pair):
    target, draft = bundled_pair
    with pytest.raises(ValueError, match=r"prompt \(257 tokens\) .* more than target's max_context 256"):
        speculative_generate(target, draft, [5] * 257, 1, SamplingParams(0), 4)


@pytest.mark.parametrize(
    ("max_new", "error", "message"),
    [
        (-1, ValueError, r"max_new_tokens must be an integer >= 0, got -1"),
        (2.0, TypeError, r"max_new_tokens must be an integer >= 0, got 2.0"),
    ],
)
def test_max_new_tokens_must_be_a_non_negative_integer(max_new, error, message):
    target, draft = toy_pair()
    with pytest.raises(error, match=message):
        speculative_generate(target, draft, [0], max_new, SamplingParams(1.0), 2, np.random.default_rng(0))


def test_sampling_needs_a_generator_and_params_must_be_sampling_params():
    target, draft = toy_pair()
    with pytest.raises(TypeError, match="rng must be a np.random.Generator when temperature > 0, got None"):
        speculative_generate(target, draft, [0], 3, SamplingParams(1.0), 2)
    with pytest.raises(TypeError, match="rng must be a np.random.Generator"):
        speculative_generate(target, draft, [0], 3, SamplingParams(1.0), 2, 42)
    with pytest.raises(TypeError, match="params must be a SamplingParams, got float"):
        speculative_generate(target, draft, [0], 3, 1.0, 2, np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng must be a np.random.Generator"):
        speculative_verify(TOKENS, Q2, P3, np.random.RandomState(0))
    with pytest.raises(ValueError, match=r"draft_tokens must be in \[0, 3\), got 0..3"):
        speculative_verify(np.array([0, 3]), Q2, P3, np.random.default_rng(0))
