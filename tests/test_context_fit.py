"""A request that exactly fills the context runs; one token more is refused (check_room, specdec/validation.py).

The rule (check_room): every token but the last generated one passes through the model, so a prompt of P
tokens and N new tokens need P + N - 1 positions, which must be at most max_context. The last token is
never read. Both generators are run at the exact fit, P + N - 1 = max_context, on table models that refuse
to read past their context, and the target is checked to have read exactly max_context tokens; one more new
token must be refused up front by check_room (its message), not by the model halfway through.
"""

import numpy as np
import pytest
from test_speculative import DRAFT_LOGITS, TARGET_LOGITS

from specdec import SamplingParams, generate, speculative_generate
from specdec.exact import TableModel

CONTEXT = 10
GREEDY, T1 = SamplingParams(0.0), SamplingParams(1.0)


class ReadingModel(TableModel):
    """A table model (it refuses to read past max_context) that records the most tokens any of its states read."""

    def __init__(self, logits, name: str, max_context: int):
        super().__init__(logits, name, max_context=max_context)
        self.most_read = 0

    def score(self, tokens, state):
        logits = super().score(tokens, state)
        self.most_read = max(self.most_read, state.length)
        return logits


def refused(prompt_size: int, max_new: int, context: int, name: str) -> str:
    """check_room's message for a request one position too long."""
    needed = prompt_size + max_new - 1
    return (
        rf"prompt \({prompt_size} tokens\) \+ max_new_tokens \({max_new}\) needs {needed} positions, "
        rf"more than {name}'s max_context {context}"
    )


@pytest.mark.parametrize("prompt_size", [1, 4, CONTEXT])
@pytest.mark.parametrize("params", [GREEDY, T1], ids=["greedy", "T=1"])
def test_generate_fills_the_context_exactly_and_refuses_one_more(prompt_size, params):
    """P + N - 1 = 10: N = 11 - P tokens come out and the model read all 10 positions; N + 1 is refused."""
    max_new = CONTEXT + 1 - prompt_size
    model = ReadingModel(TARGET_LOGITS, "target", CONTEXT)
    result = generate(model, [0] * prompt_size, max_new, params, np.random.default_rng(0))
    assert result.tokens.size == max_new
    assert model.most_read == CONTEXT  # every token but the last was read: the whole context
    with pytest.raises(ValueError, match=refused(prompt_size, max_new + 1, CONTEXT, "target")):
        generate(model, [0] * prompt_size, max_new + 1, params, np.random.default_rng(0))


def test_a_prompt_longer_than_the_context_is_refused_even_for_no_new_tokens():
    """N = 0 needs P positions (max(0, N - 1) = 0): P = 10 is fine (nothing is read), P = 11 is refused."""
    model = ReadingModel(TARGET_LOGITS, "target", CONTEXT)
    assert generate(model, [0] * CONTEXT, 0, GREEDY).tokens.size == 0
    with pytest.raises(ValueError, match=r"prompt \(11 tokens\) \+ max_new_tokens \(0\) needs 11 positions"):
        generate(model, [0] * (CONTEXT + 1), 0, GREEDY)


@pytest.mark.parametrize("gamma", [1, 3, 8, "auto"])
@pytest.mark.parametrize("params", [GREEDY, T1], ids=["greedy", "T=1"])
@pytest.mark.parametrize("prompt_size", [1, 4])
def test_speculative_generate_fills_the_context_exactly_and_refuses_one_more(prompt_size, params, gamma):
    """Target and draft both of context 10: P + N - 1 = 10 runs for every gamma and seed, the target reading all 10.

    Every emitted token but the last is read by the target, as a draft it verified or as the next round's
    pending token, so its states reach exactly P + N - 1 = 10; the draft never reads its last draft.
    """
    max_new = CONTEXT + 1 - prompt_size
    for seed in range(5):
        target, draft = ReadingModel(TARGET_LOGITS, "target", CONTEXT), ReadingModel(DRAFT_LOGITS, "draft", CONTEXT)
        result = speculative_generate(
            target, draft, [0] * prompt_size, max_new, params, gamma, np.random.default_rng(seed)
        )
        assert result.tokens.size == max_new
        assert target.most_read == CONTEXT and draft.most_read <= CONTEXT
    with pytest.raises(ValueError, match=refused(prompt_size, max_new + 1, CONTEXT, "target")):
        speculative_generate(target, draft, [0] * prompt_size, max_new + 1, params, gamma, np.random.default_rng(0))


@pytest.mark.parametrize(
    ("target_context", "draft_context", "short"), [(CONTEXT, 20, "target"), (20, CONTEXT, "draft")]
)
def test_speculative_generate_checks_the_smaller_context_of_the_two(target_context, draft_context, short):
    """With one model's context 10 and the other's 20, P + N - 1 = 10 runs and N + 1 is refused naming the short one."""
    prompt_size = 3
    max_new = CONTEXT + 1 - prompt_size
    target = ReadingModel(TARGET_LOGITS, "target", target_context)
    draft = ReadingModel(DRAFT_LOGITS, "draft", draft_context)
    result = speculative_generate(target, draft, [0] * prompt_size, max_new, T1, 4, np.random.default_rng(1))
    assert result.tokens.size == max_new and target.most_read == CONTEXT
    with pytest.raises(ValueError, match=refused(prompt_size, max_new + 1, CONTEXT, short)):
        speculative_generate(target, draft, [0] * prompt_size, max_new + 1, T1, 4, np.random.default_rng(1))
