"""Block verification (specdec/block.py) is exact, never emits fewer tokens than token-level, and keeps its contract.

The evidence, as for token-level verification (test_speculative.py):

1. hand-computed weights and stop probabilities on the paper's two-token example, and its expected
   lengths: 10/9 accepted drafts per round token by token, 11/9 jointly (Sun et al., ICLR 2025, sec. 3);
2. exact enumeration of every branch of block verification, round after round: the law of the first
   tokens of the text equals the target's on random context-dependent pairs, to 1e-12; the same
   enumeration puts the porting mistakes (the plain residual, a ratio computed with q = 1 but a
   residual with q, stopping at the first failed prefix) measurably off, while verifying with
   q = 1 throughout (a draft treated as certain) stays exact and only keeps fewer drafts;
3. over random pairs, the exact expected number of emitted tokens per round is never below
   token-level verification's;
4. chi-square tests over 10^5 rounds of the library's block_verify_drawn with the toy tables of
   test_speculative.py, and the same tests rejecting each mistake wherever enumeration says it shows;
5. speculative_generate(verify="block"): the same chi-square tests end to end, greedy identical to
   generate, and the argument checked.
"""

import itertools
from functools import cache

import numpy as np
import pytest
from test_speculative import (
    DRAFT_LOGITS,
    PROMPT,
    SETTINGS,
    TARGET_LOGITS,
    V,
    tables,
)

from specdec import SamplingParams, block_verify, generate, speculative_generate, speculative_verify
from specdec.block import BlockRule, block_keeps, block_verify_drawn, block_weights
from specdec.drawing import chi_square_test, draw
from specdec.exact import Rule, TableModel, bigram, round_law, target_law, text_law

ALPHA = 1e-3  # the exact algorithm must not be rejected at this level (fixed seeds: a deterministic verdict)
REJECT = 1e-6  # a mistake must be rejected at this level by the very same test
GAMMA = 2
MAX_NEW = 3
N_DRAWS = 100_000
N_CONTROL = 10_000
# The plain residual is wrong only after a kept prefix whose weight fell below 1, a few percent of the
# rounds here: its shift needs as many runs as the exact rule gets (visible() checks it exactly).
CONTROL_RUNS = {"plain residual": N_DRAWS}

# --- the mistakes: same signature as block_verify_drawn -----------------------------------------


def plain_residual(tokens, q, p, rng):
    """Mistake: after a kept prefix, resample from norm(max(0, p - q)) instead of the weighted residual."""
    gamma = tokens.size
    _, h = block_weights(tokens, q, p)
    kept = np.flatnonzero(rng.random(gamma) < h[1:])
    tau = int(kept[-1]) + 1 if kept.size else 0
    if tau == gamma:
        return np.append(tokens, draw(p[gamma], rng)).astype(np.int64), tau
    excess = np.maximum(p[tau] - q[tau], 0.0)
    law = excess / excess.sum() if excess.sum() > 0 else p[tau]
    return np.append(tokens[:tau], draw(law, rng)).astype(np.int64), tau


def q_is_one(tokens, q, p, rng):
    """Not a mistake: verifying as if the draft were certain, q_i = point mass on x_i (exact, keeps fewer)."""
    point_masses = np.eye(q.shape[1])[tokens]  # (gamma, V)
    return block_verify_drawn(tokens, point_masses, p, rng)


def ratio_with_q_one(tokens, q, p, rng):
    """Mistake: the running ratio computed with q(x) = 1 (as if no probabilities were known), the residual with q."""
    gamma = tokens.size
    point_masses = np.eye(q.shape[1])[tokens]  # (gamma, V)
    w, h = block_weights(tokens, point_masses, p)
    kept = np.flatnonzero(rng.random(gamma) < h[1:])
    tau = int(kept[-1]) + 1 if kept.size else 0
    if tau == gamma:
        return np.append(tokens, draw(p[gamma], rng)).astype(np.int64), tau
    excess = np.maximum(w[tau] * p[tau] - q[tau], 0.0)
    law = excess / excess.sum() if excess.sum() > 0 else p[tau]
    return np.append(tokens[:tau], draw(law, rng)).astype(np.int64), tau


def first_failure_stops(tokens, q, p, rng):
    """Mistake: keep the prefix before the FIRST failed test (token-level's habit), not the longest passing one."""
    gamma = tokens.size
    w, h = block_weights(tokens, q, p)
    failed = np.flatnonzero(rng.random(gamma) >= h[1:])
    tau = int(failed[0]) if failed.size else gamma
    if tau == gamma:
        return np.append(tokens, draw(p[gamma], rng)).astype(np.int64), tau
    excess = np.maximum(w[tau] * p[tau] - q[tau], 0.0)
    law = excess / excess.sum() if excess.sum() > 0 else p[tau]
    return np.append(tokens[:tau], draw(law, rng)).astype(np.int64), tau


MISTAKES = {
    "plain residual": plain_residual,
    "ratio with q = 1": ratio_with_q_one,
    "first failure stops": first_failure_stops,
}


# --- 1. the paper's example ---------------------------------------------------------------------


def test_weights_and_stop_probabilities_by_hand():
    """p = (1/3, 2/3), q = (2/3, 1/3) at both positions, drafts (a, b): w = (1, 1/2, 1); h_1 = 0, h_2 = 1."""
    p, q = np.array([[1 / 3, 2 / 3]] * 3), np.array([[2 / 3, 1 / 3]] * 2)
    w, h = block_weights(np.array([0, 1]), q, p)
    np.testing.assert_allclose(w, [1.0, 0.5, 1.0], atol=1e-15)
    # after a: r_1 = sum max(0, p/2 - q) = 0, so h_1 = 0: keeping "a" alone is never chosen
    np.testing.assert_allclose(h[1:], [0.0, 1.0], atol=1e-15)
    w, h = block_weights(np.array([1, 0]), q, p)  # (b, a): w = (1, 1, 1/2)
    np.testing.assert_allclose(w, [1.0, 1.0, 0.5], atol=1e-15)
    np.testing.assert_allclose(h[1:], [1.0, 0.5], atol=1e-15)  # r_1 = 1/3, 1 - w_1 = 0: h_1 = 1; h_2 = w_2


def test_h_is_exactly_one_where_the_running_ratio_is_one():
    """block_weights computes R + (1 - w): where w_i = 1 the denominator is R_i itself and h_i is 1 exactly.

    (R + 1 - w rounds R + 1 first: here it gives 0.9999999999999994, a pass that fails once in 10^15.)
    """
    tokens, q, p = np.array([0, 0]), np.array([[0.5, 0.5], [0.7, 0.3]]), np.array([[0.6, 0.4], [0.6, 0.4], [0.5, 0.5]])
    w, h = block_weights(tokens, q, p)  # ratio 0.6 / 0.5 caps w_1 at 1; R_1 = 0.1 > 0
    assert w[1] == 1.0 and h[1] == 1.0
    rng = np.random.default_rng(0)
    q_rows, p_rows = rng.dirichlet(np.ones(5), size=6)[:3], rng.dirichlet(np.ones(5), size=7)[:4]
    below_one_the_other_way = 0  # blocks where R + 1 - w would have given h_i < 1
    for tokens in itertools.product(range(5), repeat=3):
        w, h = block_weights(np.array(tokens), q_rows, p_rows)
        assert np.all(h[:3][w[:3] == 1.0] == 1.0)
        r = np.maximum(w[1:3, None] * p_rows[1:3] - q_rows[1:3], 0.0).sum(axis=-1)  # (2,) R_1, R_2
        below_one_the_other_way += int(np.sum((w[1:3] == 1.0) & (r > 0) & (r / (r + 1.0 - w[1:3]) < 1.0)))
    assert below_one_the_other_way > 0  # the check above could have failed


def token_keeps(tokens, q, p) -> list[float]:
    """Exact P(n accepted = i | drafts), i = 0..gamma, for token-level verification (block_keeps' counterpart)."""
    return Rule().acceptance_law([min(1.0, p[i, x] / q[i, x]) for i, x in enumerate(tokens)])


def expected_accepted(P, Q, gamma: int, law) -> float:
    """E[drafts kept per round] for context-free rows P (gamma + 1, V), Q (gamma, V), law block_keeps or token_keeps."""
    total = 0.0
    for drafts in itertools.product(range(Q.shape[1]), repeat=gamma):
        weight = np.prod([Q[i, x] for i, x in enumerate(drafts)])
        if weight > 0:
            total += weight * (np.asarray(law(drafts, Q, P)) * np.arange(gamma + 1)).sum()
    return total


def test_the_papers_example_keeps_11_ninths_of_a_draft_against_10_ninths():
    p, q = np.array([[1 / 3, 2 / 3]] * 3), np.array([[2 / 3, 1 / 3]] * 2)
    assert expected_accepted(p, q, 2, token_keeps) == pytest.approx(10 / 9, abs=1e-12)
    assert expected_accepted(p, q, 2, block_keeps) == pytest.approx(11 / 9, abs=1e-12)


# --- 2. exact enumeration on tiny context-dependent languages -----------------------------------


def random_pair(seed: int, vocab: int = 3, concentration: float = 0.6):
    """A target and a draft whose rows depend on the last two tokens: dicts filled on first use."""
    rng = np.random.default_rng(seed)
    target_rows, draft_rows = {}, {}

    def row(rows, context):
        key = tuple(context[-2:])
        if key not in rows:
            x = rng.gamma(concentration, size=vocab)
            x[rng.random(vocab) < 0.15] = 0.0  # some zeros, as top-k leaves them
            if x.sum() == 0:
                x[rng.integers(vocab)] = 1.0
            rows[key] = x / x.sum()
        return rows[key]

    return (lambda c: row(target_rows, c)), (lambda c: row(draft_rows, c))


class Variant:
    """A variant of block verification as a rule of specdec.exact (drafts come from q), for rule() below.

    "q = 1" verifies every draft as if the draft were certain: BlockRule's law with point masses for q
    (a valid verifier, and wasteful). "ratio with q = 1" and "first failure stops" are mistakes of MISTAKES.
    """

    def __init__(self, name: str):
        self.name = name

    def draft_law(self, p, q):
        return q

    def verify_law(self, drafts: tuple, q, p) -> dict:
        gamma, vocab = len(drafts), p.shape[1]
        point_masses = np.eye(vocab)[list(drafts)]  # (gamma, V)
        if self.name == "q = 1":
            return BlockRule().verify_law(drafts, point_masses, p)
        if self.name == "ratio with q = 1":  # stops and weights as if q were 1, the residual with q
            stops, w = block_keeps(drafts, point_masses, p), block_weights(np.array(drafts), point_masses, p)[0]
        else:  # "first failure stops": the prefix before the first failed test, the weighted residual
            w, h = block_weights(np.array(drafts), q, p)
            stops = np.array([np.prod(h[1 : i + 1]) * (1 - h[i + 1] if i < gamma else 1.0) for i in range(gamma + 1)])
        law = {}
        for tau in range(gamma + 1):
            if stops[tau] == 0:
                continue
            if tau == gamma:
                last = p[gamma]
            else:
                excess = np.maximum(w[tau] * p[tau] - q[tau], 0.0)
                last = excess / excess.sum() if excess.sum() > 0 else p[tau]
            for y in np.flatnonzero(last):
                key = drafts[:tau] + (int(y),)
                law[key] = law.get(key, 0.0) + stops[tau] * last[y]
        return law


def rule(name: str):
    """Block verification ("block") or one of its variants, as a rule of specdec.exact (drafts come from q).

    "block" is specdec.block.BlockRule's law and "plain residual" BlockRule's residual="plain"; the
    other names are Variant's. Only the law of one verification given its drafts is written here: the
    walk over drafted blocks and the chaining of rounds are specdec.exact's, the course's one oracle.
    """
    if name == "block":
        return BlockRule()
    if name == "plain residual":
        return BlockRule(name, residual="plain")
    return Variant(name)


def law_gap(target, draft, gamma: int, verifier: str, k: int = 4) -> float:
    """max |law - target's law| over the first k tokens of the text, both by enumeration."""
    law = text_law(rule(verifier), target, draft, (0,), gamma, k)  # (V,) * k
    assert abs(law.sum() - 1) < 1e-9
    return float(np.abs(law - target_law(target, (0,), k)).max())


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("gamma", [1, 2, 3])
def test_exact_enumeration_of_the_first_four_tokens_equals_the_targets_law(seed, gamma):
    target, draft = random_pair(seed)
    assert law_gap(target, draft, gamma, "block") < 1e-12


def test_verifying_with_q_one_is_exact_but_keeps_fewer_drafts():
    """q = 1 for every drafted token is a valid (deterministic-draft) verifier: exact, and wasteful."""
    for seed in range(3):
        target, draft = random_pair(seed)
        assert law_gap(target, draft, 3, "q = 1") < 1e-12
    rng = np.random.default_rng(2)
    q, p = rng.dirichlet(np.ones(4), size=3), rng.dirichlet(np.ones(4), size=4)
    as_certain = expected_accepted(p, q, 3, lambda d, q_rows, p_rows: block_keeps(d, np.eye(4)[list(d)], p_rows))
    assert as_certain < expected_accepted(p, q, 3, block_keeps) - 0.05


@pytest.mark.parametrize("mistake", MISTAKES)
def test_the_enumeration_puts_every_mistake_off(mistake):
    """The comparison above can fail: on some pair each mistake's law of the first four tokens is off by > 1e-3."""
    gaps = [law_gap(*random_pair(seed), 3, mistake) for seed in range(4)]
    assert max(gaps) > 1e-3, gaps


# --- 3. never fewer tokens than token-level ---------------------------------------------------


def test_block_keeps_at_least_as_many_drafts_as_token_level_in_expectation():
    rng = np.random.default_rng(11)
    gains = []
    for _ in range(60):
        gamma, vocab = int(rng.integers(1, 5)), int(rng.integers(2, 5))
        q = rng.dirichlet(np.full(vocab, 0.7), size=gamma)  # (gamma, V)
        p = rng.dirichlet(np.full(vocab, 0.7), size=gamma + 1)  # (gamma + 1, V)
        block, token = expected_accepted(p, q, gamma, block_keeps), expected_accepted(p, q, gamma, token_keeps)
        assert block >= token - 1e-12, (block, token)
        gains.append(block - token)
    assert max(gains) > 0.05  # and it is sometimes clearly more
    assert min(g for g in gains) > -1e-12
    # gamma = 1 has nothing to judge jointly: the two rules keep the same expected number
    p, q = rng.dirichlet(np.ones(4), size=2), rng.dirichlet(np.ones(4), size=1)
    assert expected_accepted(p, q, 1, block_keeps) == pytest.approx(expected_accepted(p, q, 1, token_keeps), abs=1e-12)


# --- 4. chi-square tests on the library's code, and the same tests on the mistakes --------------

POSITIONS = ["first token", "third token", "tokens 1 and 2"]


@cache
def simulate(setting: str, verifier_name: str, n_runs: int) -> np.ndarray:
    """n_runs texts of MAX_NEW tokens after PROMPT, each round through `verifier` (tokens (n_runs, MAX_NEW))."""
    P, Q = tables(setting)
    verifier = block_verify_drawn if verifier_name == "block" else MISTAKES[verifier_name]
    rng = np.random.default_rng([7, list(SETTINGS).index(setting), n_runs, len(verifier_name)])
    texts = np.zeros((n_runs, MAX_NEW), dtype=np.int64)
    for run in range(n_runs):
        text = []
        while len(text) < MAX_NEW:
            last = text[-1] if text else PROMPT
            g = min(GAMMA, MAX_NEW - len(text) - 1)
            if g == 0:
                text.append(int(draw(P[last], rng)))
                continue
            drafts, context = [], last
            for _ in range(g):
                context = int(draw(Q[context], rng))
                drafts.append(context)
            contexts = [last] + drafts
            emitted, _ = verifier(np.array(drafts), Q[contexts[:g]], P[contexts], rng)
            text += emitted.tolist()
        texts[run] = text[:MAX_NEW]
    return texts


def observed(position: str, texts: np.ndarray) -> np.ndarray:
    if position == "first token":
        return np.bincount(texts[:, 0], minlength=V)
    if position == "third token":
        return np.bincount(texts[:, 2], minlength=V)
    return np.bincount(texts[:, 0] * V + texts[:, 1], minlength=V * V)


def expected(position: str, setting: str) -> np.ndarray:
    P, _ = tables(setting)
    if position == "first token":
        return P[PROMPT]
    if position == "third token":
        return P[PROMPT] @ P @ P
    return (P[PROMPT][:, None] * P).ravel()


@cache
def exact_cells(setting: str, verifier: str, position: str) -> np.ndarray:
    """The exact law of a position's cells under `verifier`, by enumeration with the toy tables."""
    P, Q = tables(setting)
    target, draft = bigram(P), bigram(Q)

    def law(context, k):  # rounds of min(GAMMA, remaining - 1) drafts, as speculative_generate drafts
        if k == 0:
            return {(): 1.0}
        g = min(GAMMA, k - 1)
        if g == 0:  # an ordinary decoding step
            rounds = {(int(y),): P[context[-1], y] for y in range(V)}
        else:
            rounds = round_law(rule(verifier), target, draft, tuple(context), g)
        out = {}
        for emitted, prob in rounds.items():
            for rest, prob_rest in law(list(context) + list(emitted), k - len(emitted)).items():
                out[emitted + rest] = out.get(emitted + rest, 0.0) + prob * prob_rest
        return out

    return sum(prob * observed(position, np.array([tokens])) for tokens, prob in law([PROMPT], MAX_NEW).items())


def visible(setting: str, mistake: str, position: str) -> bool:
    """Exactly, before sampling: at its number of runs the mistake's statistic lands far above p = 1e-6."""
    runs = CONTROL_RUNS.get(mistake, N_CONTROL)
    cells, target = exact_cells(setting, mistake, position), expected(position, setting)
    noncentrality = runs * ((cells - target)[target > 0] ** 2 / target[target > 0]).sum()
    return noncentrality > 150 or runs * cells[target == 0].sum() > 20


ALL_CONTROLS = [(s, m, pos) for s in SETTINGS for m in MISTAKES for pos in POSITIONS]


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("position", POSITIONS)
def test_the_expected_laws_are_what_block_enumeration_gives(position, setting):
    np.testing.assert_allclose(exact_cells(setting, "block", position), expected(position, setting), atol=1e-12)


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("position", POSITIONS)
def test_block_verification_follows_the_target(position, setting):
    result = chi_square_test(observed(position, simulate(setting, "block", N_DRAWS)), expected(position, setting))
    assert result.p_value > ALPHA, result


def test_every_mistake_shows_somewhere_and_every_test_rejects_some_mistake():
    for mistake in MISTAKES:
        assert any(visible(s, mistake, pos) for s in SETTINGS for pos in POSITIONS), mistake
    for position in POSITIONS:
        assert any(visible(s, m, position) for s in SETTINGS for m in MISTAKES), position


# A mistake may leave a statistic's law (nearly) unchanged, as the plain residual does for the first
# token (it only touches tokens after a kept prefix): only the cases enumeration calls visible are run.
@pytest.mark.parametrize(("setting", "mistake", "position"), [case for case in ALL_CONTROLS if visible(*case)])
def test_the_same_tests_reject_each_mistake_wherever_it_shows(setting, mistake, position):
    texts = simulate(setting, mistake, CONTROL_RUNS.get(mistake, N_CONTROL))
    result = chi_square_test(observed(position, texts), expected(position, setting))
    assert result.p_value < REJECT, result


# --- 5. the contract, and speculative_generate(verify="block") ----------------------------------

BAD_ROUNDS = [
    ([0, 1], np.full((2, 3), 1 / 3), np.full((2, 3), 1 / 3)),  # a target row too few
    ([0, 1], np.full((1, 3), 1 / 3), np.full((3, 3), 1 / 3)),  # a draft row too few
    ([0.0, 1.0], np.full((2, 3), 1 / 3), np.full((3, 3), 1 / 3)),  # float token ids
    ([0, 3], np.full((2, 3), 1 / 3), np.full((3, 3), 1 / 3)),  # a token outside the vocabulary
    ([0, 2], np.array([[0.5, 0.5, 0.0]] * 2), np.full((3, 3), 1 / 3)),  # a draft its row cannot produce
    ([0, 1], np.array([[0.5, 0.6, 0.0]] * 2), np.full((3, 3), 1 / 3)),  # a row that is not a distribution
    ([[0, 1]], np.full((2, 3), 1 / 3), np.full((3, 3), 1 / 3)),  # 2-D tokens
]


@pytest.mark.parametrize(("tokens", "q", "p"), BAD_ROUNDS)
def test_block_verify_refuses_what_speculative_verify_refuses_with_the_same_message(tokens, q, p):
    with pytest.raises((TypeError, ValueError)) as token_level:
        speculative_verify(tokens, q, p, np.random.default_rng(0))
    with pytest.raises(token_level.type) as block_level:
        block_verify(tokens, q, p, np.random.default_rng(0))
    assert str(block_level.value) == str(token_level.value)


def test_block_verify_needs_a_generator():
    with pytest.raises(TypeError, match="rng"):
        block_verify([0], np.full((1, 2), 0.5), np.full((2, 2), 0.5), 0)


def test_block_verify_is_block_verify_drawn_after_its_checks_and_returns_int64():
    rng = np.random.default_rng(3)
    for seed in range(50):
        q, p = rng.dirichlet(np.full(6, 0.5), size=4), rng.dirichlet(np.full(6, 0.5), size=5)
        tokens = np.array([int(np.argmax(row)) for row in q])
        first = block_verify(tokens, q, p, np.random.default_rng(seed))
        second = block_verify_drawn(tokens, q, p, np.random.default_rng(seed))
        assert first[0].dtype == np.int64 and first[0].tolist() == second[0].tolist() and first[1] == second[1]
        assert first[0].size == first[1] + 1 and first[0][: first[1]].tolist() == tokens[: first[1]].tolist()


def test_point_masses_make_block_and_token_verification_the_same_rule():
    """A draft that is certain (q a point mass, as prompt lookup drafts) and p = q: every draft is kept."""
    p = np.eye(4)[[1, 2, 3, 0]]  # (4, V)
    out, tau = block_verify(np.array([1, 2, 3]), p[:3], p, np.random.default_rng(0))
    assert out.tolist() == [1, 2, 3, 0] and tau == 3


@cache
def run_end_to_end(setting: str, n_runs: int) -> np.ndarray:
    target, draft = TableModel(TARGET_LOGITS, "target"), TableModel(DRAFT_LOGITS, "draft")
    rng = np.random.default_rng([5, list(SETTINGS).index(setting)])
    return np.array(
        [
            speculative_generate(target, draft, [PROMPT], MAX_NEW, SETTINGS[setting], GAMMA, rng, verify="block").tokens
            for _ in range(n_runs)
        ]
    )


@pytest.mark.parametrize("position", POSITIONS)
def test_speculative_generate_with_block_verification_follows_the_target(position):
    setting = "T=0.7,top_k=3"
    result = chi_square_test(observed(position, run_end_to_end(setting, 10_000)), expected(position, setting))
    assert result.p_value > ALPHA, result


def test_speculative_generate_calls_block_verify_drawn_when_asked(monkeypatch):
    import specdec.speculative

    calls = []

    def recording(tokens, q, p, rng):
        calls.append(tokens.size)
        return block_verify_drawn(tokens, q, p, rng)

    monkeypatch.setattr(specdec.speculative, "block_verify_drawn", recording)
    target, draft = TableModel(TARGET_LOGITS, "target"), TableModel(DRAFT_LOGITS, "draft")
    speculative_generate(target, draft, [0], 12, SamplingParams(1.0), 3, np.random.default_rng(0), verify="token")
    assert calls == []
    speculative_generate(target, draft, [0], 12, SamplingParams(1.0), 3, np.random.default_rng(0), verify="block")
    assert calls and max(calls) == 3


@pytest.mark.parametrize("gamma", [1, 3, 6, "auto"])
def test_greedy_with_block_verification_is_greedy_decoding_token_for_token(gamma):
    target, draft = TableModel(TARGET_LOGITS, "target", 200), TableModel(DRAFT_LOGITS, "draft", 200)
    for prompt in ([0], [3, 1], [4, 4, 2]):
        plain = generate(target, prompt, 60, SamplingParams(0.0)).tokens
        fast = speculative_generate(target, draft, prompt, 60, SamplingParams(0.0), gamma, verify="block")
        assert fast.tokens.tolist() == plain.tolist()


@pytest.mark.parametrize("verify", ["Block", "tree", "", None, 1, ("block",)])
def test_verify_must_name_a_rule(verify):
    target, draft = TableModel(TARGET_LOGITS, "target"), TableModel(DRAFT_LOGITS, "draft")
    with pytest.raises(ValueError, match='verify must be "token" or "block"'):
        speculative_generate(target, draft, [0], 4, SamplingParams(1.0), 2, np.random.default_rng(0), verify=verify)
