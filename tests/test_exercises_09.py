"""Notebook 09's exercise checkers: the reference solutions pass, realistic wrong answers and the stub fail."""

import time

import numpy as np
import pytest
from helpers import copy_of, load_solution

import specdec
from checkers import ex09
from specdec.drawing import draw
from specdec.verify import residual_distribution

residual_solution = load_solution("ex09_residual_distribution")
accepts_solution = load_solution("ex09_accepts")
last_token_solution = load_solution("ex09_last_token")
verify_solution = load_solution("ex09_speculative_verify")


def stub(*args):
    raise NotImplementedError


# --- residual_distribution -----------------------------------------------------------------


def not_normalised(p, q):  # the excess itself: sums to 1 - alpha, not 1
    return np.maximum(np.asarray(p) - np.asarray(q), 0.0)


def no_fallback(p, q):  # 0 / 0 = NaN when p == q
    excess = np.maximum(np.asarray(p, dtype=np.float64) - np.asarray(q, dtype=np.float64), 0.0)
    with np.errstate(invalid="ignore"):
        return excess / excess.sum(axis=-1, keepdims=True)


def swapped(p, q):  # norm(max(0, q - p)): where the draft over-offers
    return residual_distribution(q, p)


def absolute_difference(p, q):  # norm(|p - q|)
    gap = np.abs(np.asarray(p, dtype=np.float64) - np.asarray(q, dtype=np.float64))
    mass = gap.sum(axis=-1, keepdims=True)
    return np.where(mass > 0, gap / np.where(mass > 0, mass, 1.0), p)


def normalised_over_everything(p, q):  # one sum over the whole batch instead of one per row
    p = np.asarray(p, dtype=np.float64)
    excess = np.maximum(p - np.asarray(q, dtype=np.float64), 0.0)
    return excess / excess.sum() if excess.sum() > 0 else p


def uniform_fallback(p, q):  # falls back to the uniform distribution instead of p
    p = np.asarray(p, dtype=np.float64)
    excess = np.maximum(p - np.asarray(q, dtype=np.float64), 0.0)
    mass = excess.sum(axis=-1, keepdims=True)
    return np.where(mass > 0, excess / np.where(mass > 0, mass, 1.0), 1.0 / p.shape[-1])


def in_float32(p, q):  # right values, but float32: rejected for precision, and told so
    return residual_solution.residual_distribution(p, q).astype(np.float32)


def delegates_residual(p, q):  # calls the reference the exercise asks for
    return specdec.residual_distribution(p, q)


def subtracts_in_place(p, q):  # right values, but `p -= q` overwrites the caller's array
    p = np.asarray(p, dtype=np.float64)  # no copy for a float64 input: p is the caller's array
    original = p.copy()
    p -= np.asarray(q, dtype=np.float64)
    np.maximum(p, 0.0, out=p)
    mass = p.sum(axis=-1, keepdims=True)
    return np.where(mass > 0, p / np.where(mass > 0, mass, 1.0), original)


def unguarded_where(p, q):  # right values, but 0 / 0 in the branch np.where throws away: a RuntimeWarning
    p = np.asarray(p, dtype=np.float64)
    excess = np.maximum(p - np.asarray(q, dtype=np.float64), 0.0)
    mass = excess.sum(axis=-1, keepdims=True)
    return np.where(mass > 0, excess / mass, p)


def test_residual_solution_passes():
    assert ex09.check_residual_distribution(residual_solution.residual_distribution)
    assert ex09.check_residual_distribution(copy_of(residual_distribution))
    assert not ex09.check_residual_distribution(residual_distribution)  # the reference itself


@pytest.mark.parametrize(
    "wrong",
    [
        not_normalised,
        no_fallback,
        swapped,
        absolute_difference,
        normalised_over_everything,
        uniform_fallback,
        in_float32,
        delegates_residual,
        subtracts_in_place,
        unguarded_where,
    ],
)
def test_residual_wrong_answers_fail(wrong, capsys):
    assert not ex09.check_residual_distribution(wrong)
    assert "✗ residual_distribution" in capsys.readouterr().out


def test_residual_nan_is_explained(capsys):
    ex09.check_residual_distribution(no_fallback)
    assert "NaN" in capsys.readouterr().out


def test_residual_float32_is_said_to_be_a_precision_problem(capsys):
    ex09.check_residual_distribution(in_float32)
    out = capsys.readouterr().out
    assert "returned float32 probabilities where float64 is asked (compute in float64" in out
    assert "casting the answer at the end keeps its rounding" in out and "only the dtype is wrong" not in out


def keeps_the_input_dtype(p, q):  # right for float64 rows, but float32 rows give float32 back
    p, q = np.asarray(p), np.asarray(q)
    excess = np.maximum(p - q, 0.0)
    mass = excess.sum(axis=-1, keepdims=True)
    return np.where(mass > 0, excess / np.where(mass > 0, mass, 1.0), p)


def float32_arithmetic(p, q):  # float64 at the end, float32 on the way: right to about 1e-7 only
    return keeps_the_input_dtype(p, q).astype(np.float64)


def float32_throughout(p, q):  # float64 rows turned into float32 first: float32 arithmetic, float32 answer
    return keeps_the_input_dtype(np.asarray(p, dtype=np.float32), np.asarray(q, dtype=np.float32))


def float32_throughout_cast_back(p, q):  # the same, cast to float64 at the end: the dtype is right, the digits not
    return float32_throughout(p, q).astype(np.float64)


def test_residual_float32_input_must_give_float64(capsys):
    assert not ex09.check_residual_distribution(keeps_the_input_dtype)
    out = capsys.readouterr().out
    assert "float32 rows" in out and "returned float32 probabilities" in out and "float64 is asked" in out


@pytest.mark.parametrize(
    ("wrong", "said", "given_as_float32"),
    [
        # float32 rows, answer kept in their dtype: the cure is to compute in float64, not only to cast
        (
            keeps_the_input_dtype,
            "returned float32 probabilities where float64 is asked (compute in float64,"
            " np.asarray(p, dtype=np.float64), even for float32 rows",
            True,
        ),
        # float64 rows computed in float32: the same cure, without the "even for float32 rows"
        (
            float32_throughout,
            "returned float32 probabilities where float64 is asked (compute in float64,"
            " np.asarray(p, dtype=np.float64): float32 holds about 6 digits",
            False,
        ),
        # float32 arithmetic cast back to float64: the dtype is right, the values are float32's
        (float32_throughout_cast_back, "the values are right only to about", False),
        (float32_arithmetic, "the values are right only to about", True),
    ],
)
def test_residual_float32_answers_are_told_their_cause_first(wrong, said, given_as_float32, capsys):
    """Every float32 answer is told what is wrong and how to cure it, before the arrays it failed on."""
    assert not ex09.check_residual_distribution(wrong)
    out = capsys.readouterr().out
    assert out.startswith("✗ residual_distribution: ") and said in out
    assert out.index(said) < out.index("(for ")  # the diagnosis first, the arrays after
    assert ("(given as float32 rows)" in out) == given_as_float32
    assert "only the dtype is wrong" not in out  # casting a float32 answer would not be enough
    if "right only to about" in said:
        assert "float32 arithmetic somewhere? compute in float64" in out


def test_residual_float32_arithmetic_is_said_to_be_a_precision_problem(capsys):
    assert not ex09.check_residual_distribution(float32_arithmetic)
    out = capsys.readouterr().out
    assert "float32 rows" in out and "right only to about" in out and "compute in float64" in out


def test_residual_changing_the_input_is_refused_with_a_counterexample(capsys):
    ex09.check_residual_distribution(subtracts_in_place)
    out = capsys.readouterr().out
    assert "changed its input `p` in place" in out and "it was [0.5, 0.3, 0.2]" in out


def test_residual_warning_in_the_discarded_branch_is_explained(capsys):
    ex09.check_residual_distribution(unguarded_where)
    out = capsys.readouterr().out
    assert "RuntimeWarning" in out and "both branches" in out and "p = [" in out


def swapped_by_hand(p, q):  # norm(max(0, q - p)), written out: where the draft over-offers
    excess = np.maximum(np.asarray(q, dtype=np.float64) - np.asarray(p, dtype=np.float64), 0.0)
    mass = excess.sum(axis=-1, keepdims=True)
    return np.where(mass > 0, excess / np.where(mass > 0, mass, 1.0), p)


def zeros_without_excess(p, q):  # 0 instead of p for a row with no excess
    p = np.asarray(p, dtype=np.float64)
    excess = np.maximum(p - np.asarray(q, dtype=np.float64), 0.0)
    mass = excess.sum(axis=-1, keepdims=True)
    return np.where(mass > 0, excess / np.where(mass > 0, mass, 1.0), 0.0)


@pytest.mark.parametrize(
    ("wrong", "said"),
    [
        (
            normalised_over_everything,
            "row 0 of your output sums to 0.20, not 1: normalise each row by its own excess"
            " (sum(axis=-1, keepdims=True)), not by the whole batch's",
        ),
        (not_normalised, "your output sums to 0.30, not 1: divide max(0, p - q) by its sum"),
        (zeros_without_excess, "a row with p <= q everywhere must return p, not zeros"),
        (uniform_fallback, "a row with p <= q everywhere (no excess to normalise) must return p itself"),
        (absolute_difference, "your output is norm(|p - q|)"),
        (swapped_by_hand, "your output is norm(max(0, q - p))"),
    ],
)
def test_residual_mistakes_are_named_before_the_arrays(wrong, said, capsys):
    assert not ex09.check_residual_distribution(wrong)
    out = capsys.readouterr().out
    assert out.startswith(f"✗ residual_distribution: {said}"), out
    assert out.index(said) < out.index("(for ")


def test_residual_delegation_is_named(capsys):
    ex09.check_residual_distribution(delegates_residual)
    assert "calls residual_distribution" in capsys.readouterr().out
    assert specdec.residual_distribution is residual_distribution  # restored after the check


# --- accepts -------------------------------------------------------------------------------


def less_or_equal(u, p_x, q_x):  # u <= p/q: accepts a token the target forbids when u == 0
    return bool(u <= p_x / q_x)


def inverted_ratio(u, p_x, q_x):  # u < q/p: divides by 0 for p = 0, and favours the wrong tokens
    return bool(u < q_x / p_x)


def greater(u, p_x, q_x):  # the inequality the wrong way round
    return bool(u > p_x / q_x)


def ignores_u(u, p_x, q_x):  # "accept when the target likes it at least as much": deterministic
    return bool(p_x >= q_x)


def ignores_q(u, p_x, q_x):  # u < p(x): accepts too rarely
    return bool(u < p_x)


def returns_the_ratio(u, p_x, q_x):  # the probability of accepting, not the decision
    return min(1.0, p_x / q_x)


def compares_in_float32(u, p_x, q_x):  # float32 rounds the largest u, 1 - 2**-53, up to 1.0
    return bool(np.float32(u) < np.float32(p_x) / np.float32(q_x))


def test_accepts_in_float32_is_told_that_u_rounds_to_one(capsys):
    assert not ex09.check_accepts(compares_in_float32)
    out = capsys.readouterr().out
    assert "expected True, got False" in out and "float32 rounds u = 0.9999999999999999 up to 1.0" in out


def test_accepts_solution_and_min_form_pass():
    assert ex09.check_accepts(accepts_solution.accepts)
    assert ex09.check_accepts(lambda u, p_x, q_x: u < min(1.0, p_x / q_x))
    assert ex09.check_accepts(lambda u, p_x, q_x: np.float64(u) < np.float64(p_x) / np.float64(q_x))


@pytest.mark.parametrize(
    "wrong", [less_or_equal, inverted_ratio, greater, ignores_u, ignores_q, returns_the_ratio, compares_in_float32]
)
def test_accepts_wrong_answers_fail(wrong, capsys):
    assert not ex09.check_accepts(wrong)
    assert "✗ accepts" in capsys.readouterr().out


def test_accepts_less_or_equal_is_caught_at_p_zero(capsys):
    ex09.check_accepts(less_or_equal)
    out = capsys.readouterr().out
    said = "the test must be strict: u <= p/q accepts a token the target forbids when u = 0"
    assert out.startswith(f"✗ accepts: {said}") and "u = 0.0, p_x = 0.0" in out
    assert out.index(said) < out.index("(for u = ")


def test_accepts_less_or_equal_only_where_p_is_positive_is_caught_at_u_equal_to_the_ratio(capsys):
    assert not ex09.check_accepts(lambda u, p_x, q_x: p_x > 0 and u <= p_x / q_x)
    out = capsys.readouterr().out
    assert out.startswith("✗ accepts: the test must be strict: u <= p/q accepts u equal to p/q")
    assert "(for u = 0.5, p_x = 0.25, q_x = 0.5" in out


# --- last_token (spot the bug) -------------------------------------------------------------


def blog_fall_back(p_rows, q_rows, drafts, n_accepted):  # the blog post: nothing after a rejection
    return p_rows[n_accepted] if n_accepted == len(drafts) else None


def fall_back_to_p(p_rows, q_rows, drafts, n_accepted):  # resample from p itself
    return p_rows[n_accepted]


def fall_back_to_q(p_rows, q_rows, drafts, n_accepted):  # draft again, once, and keep it
    return p_rows[n_accepted] if n_accepted == len(drafts) else q_rows[n_accepted]


def accepted_part(p_rows, q_rows, drafts, n_accepted):  # norm(min(p, q)): what re-drafting until accepted draws
    if n_accepted == len(drafts):
        return p_rows[n_accepted]
    overlap = np.minimum(p_rows[n_accepted], q_rows[n_accepted])
    return overlap / overlap.sum() if overlap.sum() > 0 else p_rows[n_accepted]


def bonus_off_by_one(p_rows, q_rows, drafts, n_accepted):  # the bonus from the last draft's own row
    if n_accepted == len(drafts):
        return p_rows[n_accepted - 1]
    return residual_distribution(p_rows[n_accepted], q_rows[n_accepted])


def residual_of_the_first_position(p_rows, q_rows, drafts, n_accepted):  # always row 0
    if n_accepted == len(drafts):
        return p_rows[n_accepted]
    return residual_distribution(p_rows[0], q_rows[0])


def residual_swapped(p_rows, q_rows, drafts, n_accepted):
    if n_accepted == len(drafts):
        return p_rows[n_accepted]
    return residual_distribution(q_rows[n_accepted], p_rows[n_accepted])


def no_bonus(p_rows, q_rows, drafts, n_accepted):  # correct on rejection, but skips the free bonus token
    return None if n_accepted == len(drafts) else residual_distribution(p_rows[n_accepted], q_rows[n_accepted])


def last_token_float32(p_rows, q_rows, drafts, n_accepted):  # right distribution, float32
    return np.asarray(last_token_solution.last_token(p_rows, q_rows, drafts, n_accepted), dtype=np.float32)


def test_last_token_solution_passes():
    assert ex09.check_last_token(last_token_solution.last_token)


def test_skipping_the_bonus_is_refused_with_a_counterexample(capsys):
    """Skipping the bonus keeps the law (the next round draws it) but drops the token the call paid for."""
    assert not ex09.check_last_token(no_bonus)
    out = capsys.readouterr().out
    assert "after all 1 drafts were accepted" in out and "bonus token is missing" in out and "p_rows[1]" in out


def test_last_token_float32_is_said_to_be_a_precision_problem(capsys):
    assert not ex09.check_last_token(last_token_float32)
    out = capsys.readouterr().out
    assert "returned float32 probabilities where float64 is asked (compute in float64" in out
    assert "np.asarray(p_rows, dtype=np.float64)" in out and "only the dtype is wrong" not in out


def last_token_float32_arithmetic(p_rows, q_rows, drafts, n_accepted):  # the residual in float32, returned as float64
    p, q = np.asarray(p_rows, dtype=np.float32), np.asarray(q_rows, dtype=np.float32)
    if n_accepted == len(drafts):
        return p[n_accepted].astype(np.float64)
    excess = np.maximum(p[n_accepted] - q[n_accepted], np.float32(0))
    return (excess / excess.sum() if excess.sum() > 0 else p[n_accepted]).astype(np.float64)


def test_last_token_float32_arithmetic_is_not_called_a_wrong_distribution(capsys):
    """Rows summing to 1 only to float32's precision: the cause is float32 arithmetic, not a wrong distribution."""
    assert not ex09.check_last_token(last_token_float32_arithmetic)
    out = capsys.readouterr().out
    assert "right only to about" in out and "float32 arithmetic somewhere? compute in float64" in out
    assert "not a distribution" not in out and "total variation" not in out


@pytest.mark.parametrize(
    "wrong",
    [
        blog_fall_back,
        fall_back_to_p,
        fall_back_to_q,
        accepted_part,
        bonus_off_by_one,
        residual_of_the_first_position,
        residual_swapped,
        no_bonus,
    ],
)
def test_last_token_wrong_answers_fail(wrong, capsys):
    assert not ex09.check_last_token(wrong)
    out = capsys.readouterr().out
    assert "✗ last_token" in out


def test_last_token_reports_the_total_variation(capsys):
    ex09.check_last_token(blog_fall_back)
    out = capsys.readouterr().out
    assert "total variation" in out and "a three-token bigram language" in out
    assert out.index("total variation") < out.index("(in a three-token")  # the diagnosis first


def test_the_demo_of_the_blog_rule_does_not_give_the_answer_away(capsys):
    """compare_last_token (the exercise's demo) shows the gap and the branch, not what the rule draws there."""
    assert not ex09.compare_last_token(blog_fall_back)
    out = capsys.readouterr().out
    assert "total variation 0.1947" in out and "n_accepted = 0 (drafts[0] rejected): it returned None" in out
    assert "residual" not in out and "the rule draws" not in out and "max(0, p - q)" not in out
    assert ex09.compare_last_token(last_token_solution.last_token)


def test_last_token_names_the_branch_that_is_wrong(capsys):
    ex09.check_last_token(blog_fall_back)
    out = capsys.readouterr().out
    assert "n_accepted = 0 (drafts[0] rejected)" in out and "returned None" in out and "the residual" in out
    ex09.check_last_token(bonus_off_by_one)
    out = capsys.readouterr().out
    assert "(all 1 accepted: the bonus)" in out and "p_rows[1]" in out


def test_last_token_not_a_distribution(capsys):
    assert not ex09.check_last_token(lambda p_rows, q_rows, drafts, n: p_rows[n] * 2)
    assert "not a distribution" in capsys.readouterr().out


def test_enumeration_matches_the_target_exactly():
    for world in ex09.WORLDS:
        for gamma in (1, 2, 3):
            tv, gap, *_ = ex09.law_gap(last_token_solution.last_token, world, gamma)
            assert gap < 1e-14 and tv < 1e-13


# --- speculative_verify (the block verifier) ------------------------------------------------


def verifier(shared_u=False, non_strict=False, resample_from_p=False, bonus=True, always=False, bonus_row=None):
    """A verifier with speculative_verify's contract, right except for the one shortcut asked for."""

    def verify(draft_tokens, draft_probs, target_probs, rng):
        tokens, q, p = np.asarray(draft_tokens), np.asarray(draft_probs), np.asarray(target_probs)
        gamma, n = tokens.size, 0
        u = rng.random()
        while n < gamma:
            ratio = p[n, tokens[n]] / q[n, tokens[n]]
            if not (always or (u <= ratio if non_strict else u < ratio)):
                break
            n += 1
            u = u if shared_u else rng.random()
        if n == gamma:
            if not bonus:
                return tokens.copy(), n
            row = gamma if bonus_row is None else max(gamma + bonus_row, 0)
            return np.append(tokens, draw(p[row], rng)), n
        last = draw(p[n] if resample_from_p else residual_distribution(p[n], q[n]), rng)
        return np.append(tokens[:n], last), n

    return verify


right_verifier = verifier()
one_uniform_per_round = verifier(shared_u=True)  # u drawn once and reused for every position
less_or_equal_in_the_block = verifier(non_strict=True)  # u <= p/q: accepts p(x) = 0 when u = 0
resample_from_p = verifier(resample_from_p=True)  # a rejection draws from p, not from the residual
missing_bonus = verifier(bonus=False)  # a full accept emits the drafts only
always_accept = verifier(always=True)
bonus_from_the_last_draft_row = verifier(bonus_row=-1)  # p[gamma - 1] instead of p[gamma]


def emit(tokens, q, p, n, rng):
    """The tail the wrong verifiers below share: the n accepted drafts, then p[n]'s draw or the residual's."""
    last = draw(p[n] if n == tokens.size else residual_distribution(p[n], q[n]), rng)
    return np.append(tokens[:n], last).astype(np.int64), n


def global_uniforms_non_strict(draft_tokens, draft_probs, target_probs, rng):
    """u <= p/q with uniforms from numpy's global state: the probe with uniforms 0.0 never reaches it."""
    tokens, q, p = np.asarray(draft_tokens), np.asarray(draft_probs), np.asarray(target_probs)
    n = 0
    while n < tokens.size and np.random.rand() <= p[n, tokens[n]] / q[n, tokens[n]]:  # noqa: NPY002 (the bug)
        n += 1
    return emit(tokens, q, p, n, rng)


def new_generator_non_strict(draft_tokens, draft_probs, target_probs, rng):
    """u <= p/q with uniforms from a fresh, unseeded generator instead of the rng argument."""
    tokens, q, p = np.asarray(draft_tokens), np.asarray(draft_probs), np.asarray(target_probs)
    mine = np.random.default_rng()
    n = 0
    while n < tokens.size and mine.random() <= p[n, tokens[n]] / q[n, tokens[n]]:
        n += 1
    return emit(tokens, q, p, n, rng)


def reseeds_inside_non_strict(draft_tokens, draft_probs, target_probs, rng):
    """u <= p/q with a generator seeded inside: reproducible, but the rng argument is never used."""
    rng = np.random.default_rng(0)
    return less_or_equal_in_the_block(draft_tokens, draft_probs, target_probs, rng)


def unseeded_last_token(draft_tokens, draft_probs, target_probs, rng):
    """Right law, but the last token comes from a generator of its own: not reproducible from the seed."""
    tokens, q, p = np.asarray(draft_tokens), np.asarray(draft_probs), np.asarray(target_probs)
    n = 0
    while n < tokens.size and rng.random() < p[n, tokens[n]] / q[n, tokens[n]]:
        n += 1
    return emit(tokens, q, p, n, np.random.default_rng())


def emitted_as_a_list(draft_tokens, draft_probs, target_probs, rng):
    emitted, n = verify_solution.my_speculative_verify(draft_tokens, draft_probs, target_probs, rng)
    return emitted.tolist(), n


def emitted_as_a_tuple(draft_tokens, draft_probs, target_probs, rng):
    emitted, n = verify_solution.my_speculative_verify(draft_tokens, draft_probs, target_probs, rng)
    return tuple(emitted.tolist()), n


def residual_into_target_probs(draft_tokens, draft_probs, target_probs, rng):
    """Right law, but the residual is written over the caller's row of target_probs."""
    tokens, q, p = np.asarray(draft_tokens), np.asarray(draft_probs), np.asarray(target_probs)
    n = 0
    while n < tokens.size and rng.random() < p[n, tokens[n]] / q[n, tokens[n]]:
        n += 1
    if n < tokens.size:
        p[n] = residual_distribution(p[n], q[n])  # changes the array the caller passed
    return np.append(tokens[:n], draw(p[n], rng)).astype(np.int64), n


def delegates_verify(draft_tokens, draft_probs, target_probs, rng):
    return specdec.speculative_verify(draft_tokens, draft_probs, target_probs, rng)


def float_tokens(draft_tokens, draft_probs, target_probs, rng):
    emitted, n = verify_solution.my_speculative_verify(draft_tokens, draft_probs, target_probs, rng)
    return emitted.astype(np.float64), n


def for_loop_last_index(draft_tokens, draft_probs, target_probs, rng):
    """n = i in a for loop: after a full accept n is gamma - 1, and the last draft counts as rejected."""
    tokens, q, p = np.asarray(draft_tokens), np.asarray(draft_probs), np.asarray(target_probs)
    gamma, n = tokens.size, 0
    for i in range(gamma):
        n = i
        if rng.random() >= p[i, tokens[i]] / q[i, tokens[i]]:
            break
    return emit(tokens, q, p, n, rng)


def p_over_p_plus_q(draft_tokens, draft_probs, target_probs, rng):
    """Keeps draft i with probability p / (p + q): below 1 even where p >= q."""
    tokens, q, p = np.asarray(draft_tokens), np.asarray(draft_probs), np.asarray(target_probs)
    n = 0
    while n < tokens.size and rng.random() < p[n, tokens[n]] / (p[n, tokens[n]] + q[n, tokens[n]]):
        n += 1
    return emit(tokens, q, p, n, rng)


def accepts_when_p_at_least_q(draft_tokens, draft_probs, target_probs, rng):
    """No uniform at all: keeps a draft iff p >= q (the only uniforms taken are the last token's)."""
    tokens, q, p = np.asarray(draft_tokens), np.asarray(draft_probs), np.asarray(target_probs)
    n = 0
    while n < tokens.size and p[n, tokens[n]] >= q[n, tokens[n]]:
        n += 1
    return emit(tokens, q, p, n, rng)


def skips_rejected_drafts(draft_tokens, draft_probs, target_probs, rng):
    """Tests every draft and keeps the accepted ones: a rejection in the middle does not stop the round."""
    tokens, q, p = np.asarray(draft_tokens), np.asarray(draft_probs), np.asarray(target_probs)
    kept = [int(x) for i, x in enumerate(tokens) if rng.random() < p[i, x] / q[i, x]]
    n = len(kept)
    last = draw(p[n] if n == tokens.size else residual_distribution(p[n], q[n]), rng)
    return np.append(np.array(kept, dtype=np.int64), last).astype(np.int64), n


def counts_every_acceptance(draft_tokens, draft_probs, target_probs, rng):
    """Tests every draft and counts the accepted ones: the prefix is right, n_accepted is not."""
    tokens, q, p = np.asarray(draft_tokens), np.asarray(draft_probs), np.asarray(target_probs)
    n = sum(bool(rng.random() < p[i, x] / q[i, x]) for i, x in enumerate(tokens))
    return emit(tokens, q, p, n, rng)


def argmin_of_the_acceptances(draft_tokens, draft_probs, target_probs, rng):
    """n = argmin(accepted): 0 when every draft is accepted (np.argmin of an all-True array is 0)."""
    tokens, q, p = np.asarray(draft_tokens), np.asarray(draft_probs), np.asarray(target_probs)
    gamma = tokens.size
    accepted = rng.random(gamma) < p[np.arange(gamma), tokens] / q[np.arange(gamma), tokens]
    n = int(np.argmin(accepted)) if gamma else 0
    return emit(tokens, q, p, n, rng)


@pytest.mark.parametrize(
    ("wrong", "said"),
    [
        (
            skips_rejected_drafts,
            "draft 0 (token 1) was rejected, yet your function went on testing later drafts and kept some: at the"
            " first rejection emit one residual token and stop",
        ),
        (
            counts_every_acceptance,
            "draft 0 was rejected (its uniform 0.99 is not below p/q = 0.5), yet your function went on testing"
            " later drafts",
        ),
        (
            argmin_of_the_acceptances,
            "every ratio p/q is >= 1 here, so all 2 drafts are accepted",
        ),
        (one_uniform_per_round, "drafts are kept together too often: is u fresh for each draft?"),
        (
            bonus_from_the_last_draft_row,
            "the bonus token follows target_probs[2], the row draft 2 was tested against; it must come from"
            " target_probs[3]",
        ),
        (less_or_equal_in_the_block, "the test must be strict: u <= p/q accepts a token the target forbids when u = 0"),
    ],
)
def test_verify_mistakes_are_named_before_the_arrays(wrong, said, capsys):
    assert not ex09.check_speculative_verify(wrong)
    out = capsys.readouterr().out
    assert out.startswith(f"✗ speculative_verify: {said}"), out
    assert out.index(said) < out.index("(for draft_tokens = ")
    if wrong is counts_every_acceptance:
        assert "at the first rejection emit one residual token and stop" in out
    if wrong is argmin_of_the_acceptances:
        assert "np.argmin of an all-True array is 0" in out


@pytest.mark.parametrize(
    ("wrong", "said"),
    [
        (for_loop_last_index, "so all 2 drafts are accepted (n_accepted = 2, then a bonus token)"),
        (p_over_p_plus_q, "so all 2 drafts are accepted (n_accepted = 2, then a bonus token)"),
    ],
)
def test_verify_rejecting_a_draft_with_ratio_at_least_one_is_named(wrong, said, capsys):
    assert not ex09.check_speculative_verify(wrong)
    out = capsys.readouterr().out
    assert out.startswith(f"✗ speculative_verify: every ratio p/q is >= 1 here, {said}") and "draft_tokens = [" in out
    if wrong is for_loop_last_index:
        assert "After a full accept n_accepted is 2, not the last index 1" in out


def test_verify_rejecting_one_draft_with_ratio_at_least_one_is_named():
    """Where only some ratios are >= 1, the rejected one is named with its ratio."""
    tokens, q_rows, p_rows = ex09.VERIFY_CASES["mostly accepted, with a bonus"]  # ratios 5/3 and 0.8
    lasts = ex09.allowed_last_tokens(tokens, q_rows, p_rows)
    emitted, why = ex09.read_output((np.array([1]), 0), tokens, q_rows, p_rows, lasts)
    assert emitted is None and "it rejected draft 0 (token 1), whose ratio p/q" in why
    assert "so it is always accepted" in why


def test_verify_no_uniform_for_a_tested_draft_is_named(capsys):
    assert not ex09.check_speculative_verify(accepts_when_p_at_least_q)
    out = capsys.readouterr().out
    assert "counting the last token's draw" in out and "a tested draft got no uniform" in out


def test_verify_solution_passes_quickly():
    start = time.perf_counter()
    assert ex09.check_speculative_verify(verify_solution.my_speculative_verify)
    assert ex09.check_speculative_verify(right_verifier)  # uniforms drawn lazily, one at a time
    assert time.perf_counter() - start < 20  # a few seconds each on a quiet machine


def test_a_crash_is_reported_with_its_input_and_no_memory_address(capsys):
    def crashes_without_drafts(draft_tokens, draft_probs, target_probs, rng):
        if len(draft_tokens) == 0:
            return np.array([int(np.argmin(np.array([])))]), 0  # argmin of an empty array raises
        return verify_solution.my_speculative_verify(draft_tokens, draft_probs, target_probs, rng)

    assert not ex09.check_speculative_verify(crashes_without_drafts)
    out = capsys.readouterr().out
    assert "draft_tokens = []" in out and "raised ValueError" in out and " at 0x" not in out


def test_verify_other_samplers_and_integer_types_are_fine():
    def with_choice(draft_tokens, draft_probs, target_probs, rng):  # rng.choice and rng.uniform, n as np.int64
        tokens, q, p = np.asarray(draft_tokens), np.asarray(draft_probs), np.asarray(target_probs)
        u = rng.uniform(size=tokens.size)  # (gamma,) all drawn at once, like verify_drawn
        n = 0
        while n < tokens.size and u[n] < p[n, tokens[n]] / q[n, tokens[n]]:
            n += 1
        row = p[n] if n == tokens.size else residual_distribution(p[n], q[n])
        return np.append(tokens[:n], rng.choice(row.size, p=row)).astype(np.int64), np.int64(n)

    assert ex09.check_speculative_verify(with_choice)


def test_verify_refuses_token_ids_of_another_integer_dtype(capsys):
    def int32_tokens(draft_tokens, draft_probs, target_probs, rng):  # speculative_verify's tokens are int64
        emitted, n = verify_solution.my_speculative_verify(draft_tokens, draft_probs, target_probs, rng)
        return emitted.astype(np.int32), n

    assert not ex09.check_speculative_verify(int32_tokens)
    assert "your function returned int32 emitted tokens where int64 is asked" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong", "said"),
    [
        (one_uniform_per_round, "does not follow the exact law"),
        (less_or_equal_in_the_block, "With every uniform equal to 0.0"),
        (resample_from_p, "under the residual"),
        (missing_bonus, "the bonus token, drawn from target_probs[2], is missing"),
        (always_accept, "must always be rejected"),
        (bonus_from_the_last_draft_row, "does not follow the exact law"),
        (delegates_verify, "calls speculative_verify"),
        (specdec.speculative_verify, "you passed the package's speculative_verify itself"),
        (float_tokens, "returned float64 emitted tokens where int64 is asked"),
        (global_uniforms_non_strict, "draws from numpy's global random state"),
        (new_generator_non_strict, "draws from a generator other than the given `rng`"),
        (unseeded_last_token, "draws from a generator other than the given `rng`"),
        (reseeds_inside_non_strict, "took only 0 uniform(s) from it"),
        (emitted_as_a_list, "returned a list where a numpy array is asked"),
        (emitted_as_a_tuple, "returned a tuple where a numpy array is asked"),
        (residual_into_target_probs, "changed its input `target_probs` in place"),
    ],
)
def test_verify_wrong_answers_fail_with_a_counterexample(wrong, said, capsys):
    assert not ex09.check_speculative_verify(wrong)
    out = capsys.readouterr().out
    assert "✗ speculative_verify" in out and said in out
    if "calls" not in said:
        assert "draft_tokens = [" in out and "target_probs = [[" in out  # the input of the counterexample


def test_verify_references_are_restored_after_a_check():
    ex09.check_speculative_verify(delegates_verify)
    assert specdec.speculative_verify.__name__ == "speculative_verify"
    assert specdec.speculative.verify_drawn is specdec.verify.verify_drawn
    assert specdec.verify.verify_drawn.__name__ == "verify_drawn"


# --- every checker -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "checker",
    [ex09.check_residual_distribution, ex09.check_accepts, ex09.check_last_token, ex09.check_speculative_verify],
)
def test_a_stub_is_not_attempted_yet(checker, capsys):
    assert not checker(stub)
    assert "not attempted yet" in capsys.readouterr().out
