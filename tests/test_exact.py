"""The course's oracle (specdec/exact.py, notebook 09): exact laws by enumeration, and the table model.

test_speculative.py checks it against an independently written walk, rule by rule; test_block.py runs
block verification's law through it. Here: hand-computed values, the target's law for the exact
rule on models whose rows depend on the whole context, every shortcut measurably off, and TableModel's
contract.
"""

import numpy as np
import pytest

from specdec.exact import RULES, Rule, TableModel, bigram, round_law, target_law, text_law
from specdec.logits import softmax

P_TOY = np.array([[0.60, 0.30, 0.10], [0.20, 0.00, 0.80], [0.25, 0.50, 0.25]])
Q_TOY = np.array([[0.40, 0.60, 0.00], [0.30, 0.30, 0.40], [0.25, 0.50, 0.25]])


def test_the_law_of_one_verification_by_hand():
    q = np.array([[0.5, 0.25, 0.25], [0.5, 0.5, 0.0]])  # (2, 3)
    p = np.array([[0.25, 0.5, 0.25], [0.25, 0.25, 0.5], [0.4, 0.4, 0.2]])  # (3, 3)
    law = Rule().verify_law((1, 0), q, p)
    # draft 1 has p/q = 2: always kept; draft 0 then has p/q = 1/2; its residual is (0, 0, 1)
    assert law == pytest.approx({(1, 2): 0.5, (1, 0, 0): 0.5 * 0.4, (1, 0, 1): 0.5 * 0.4, (1, 0, 2): 0.5 * 0.2})


def context_model(seed: int, vocab: int = 3):
    """Rows that depend on the last two tokens, with zeros: a model a bigram table cannot express."""
    rng = np.random.default_rng(seed)
    rows = {}

    def model(context):
        key = tuple(context[-2:])
        if key not in rows:
            row = rng.dirichlet(np.full(vocab, 0.7))
            row[rng.random(vocab) < 0.2] = 0.0
            row[rng.integers(vocab)] += 0.1
            rows[key] = row / row.sum()
        return rows[key]

    return model


@pytest.mark.parametrize("gamma", [1, 2, 3])
@pytest.mark.parametrize("seed", range(3))
def test_the_exact_rule_gives_the_targets_law_of_the_text(seed, gamma):
    target, draft = context_model(seed), context_model(seed + 100)
    law = text_law(Rule(), target, draft, (0, 1), gamma, 3)  # (V, V, V)
    assert law.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(law, target_law(target, (0, 1), 3), rtol=0, atol=1e-12)


@pytest.mark.parametrize("rule", RULES[1:], ids=lambda rule: rule.name)
def test_every_shortcut_is_measurably_off_on_the_tiny_language(rule):
    target, draft = bigram(P_TOY), bigram(Q_TOY)
    law = text_law(rule, target, draft, (0,), 2, 3)
    assert law.sum() == pytest.approx(1.0, abs=1e-12)
    total_variation = 0.5 * np.abs(law - target_law(target, (0,), 3)).sum()
    assert total_variation > 0.02, rule.name


def test_a_round_law_sums_to_one_and_a_round_that_never_emits_is_refused():
    law = round_law(Rule(), bigram(P_TOY), bigram(Q_TOY), (0,), 2)
    assert sum(law.values()) == pytest.approx(1.0, abs=1e-15)
    never = Rule("emits nothing", uniforms="fresh", on_reject="nothing")
    same = bigram([[0.0, 1.0], [1.0, 0.0]]), bigram([[1.0, 0.0], [0.0, 1.0]])  # every draft has p = 0
    with pytest.raises(ValueError, match="never emits a token"):
        text_law(never, *same, (0,), 1, 2)


def test_the_table_model_scores_by_table_lookup_and_keeps_its_contract():
    logits = np.log(P_TOY + 1e-300)
    model = TableModel(logits, "toy", max_context=4)
    state = model.start()
    np.testing.assert_array_equal(model.score([0, 2], state), logits[[0, 2]])
    assert (state.length, model.calls, model.vocab_size) == (2, 1, 3)
    state.rollback(1)
    assert state.tokens == [0]
    with pytest.raises(ValueError, match="context overflow"):
        model.score([1, 1, 1, 1], state)
    with pytest.raises(ValueError, match="token ids must be in"):
        model.score([3], state)
    np.testing.assert_allclose(softmax(model.logits), P_TOY, atol=1e-12)
