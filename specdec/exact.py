# Generated from notebooks/09_exact_speculative_sampling.ipynb by tools/export.py: edit the notebook, not this file.
"""Exact laws by enumeration (notebook 09): what speculative decoding emits, walked branch by branch.

A model maps a context (token ids) to the next token's distribution; a rule (`Rule`, notebook 11's `BlockRule`)
gives a round's `draft_law` and `verify_law`. The course's one oracle for exactness."""

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from specdec.protocol import TokenHistory
from specdec.validation import check_score
from specdec.verify import residual_distribution

Model = Callable[[tuple], np.ndarray]  # a context (token ids) -> the next token's distribution, (V,)


def bigram(table) -> Model:
    """The model whose next-token distribution after any context is table[its last token]."""
    rows = np.asarray(table, dtype=np.float64)  # (V, V) row t: after token t
    return lambda context: rows[context[-1]]


@dataclass(frozen=True)
class Rule:
    """How a round treats its drafts. The defaults are the exact algorithm; each shortcut changes one field."""

    name: str = "exact"
    draft: str = "sample"  # "sample": x ~ q.  "argmax": the draft's most likely token, with q still in the ratio
    uniforms: str = "fresh"  # "fresh": one per position.  "shared": one per round.  "none": accept every draft
    on_reject: str = "residual"  # or "p": draw from p.  "nothing": keep only the accepted prefix.  "redraft"
    bonus_row: int = 0  # 0: the target's row after the last draft.  -1: the row of the last draft itself

    def draft_law(self, p, q) -> np.ndarray:
        """The distribution a draft token comes from (p, q: the rows at its position)."""
        if self.on_reject == "redraft":  # what drafting again until acceptance keeps
            overlap = np.minimum(p, q)  # (V,)
            return overlap / overlap.sum()
        if self.draft == "argmax":
            return np.eye(q.size)[np.argmax(q)]
        return q

    def acceptance_law(self, ratios) -> list[float]:
        """[P(exactly k drafts accepted) for k = 0..gamma], from the ratios a_i = min(1, p_i(x_i) / q_i(x_i))."""
        gamma, nexts = len(ratios), [*ratios, 0.0]  # nexts[k]: the ratio after k accepted (none after the last)
        if self.uniforms == "none" or self.on_reject == "redraft":
            return [0.0] * gamma + [1.0]
        if self.uniforms == "fresh":
            return [math.prod(ratios[:k]) * (1 - nexts[k]) for k in range(gamma + 1)]
        # one u for all: accepted up to k and rejected at k + 1 iff nexts[k] <= u < min(ratios[:k])
        return [max(0.0, min(ratios[:k], default=1.0) - nexts[k]) for k in range(gamma + 1)]

    def verify_law(self, drafts: tuple, q, p) -> dict:
        """{emitted tokens: probability} of verifying the fixed drafts, q (gamma, V) and p (gamma + 1, V)."""
        gamma = len(drafts)
        ratios = [min(1.0, p[i, x] / q[i, x]) for i, x in enumerate(drafts)]
        law = {}
        for k, prob_k in enumerate(self.acceptance_law(ratios)):
            if prob_k == 0:
                continue
            if k == gamma:  # all accepted: the bonus token
                last = p[gamma + self.bonus_row]
            elif self.on_reject == "residual":
                last = residual_distribution(p[k], q[k])
            elif self.on_reject == "p":
                last = p[k]
            else:  # "nothing": fall back to the last accepted token, emit no more
                law[drafts[:k]] = law.get(drafts[:k], 0.0) + prob_k
                continue
            for t in np.flatnonzero(last).tolist():
                law[drafts[:k] + (t,)] = law.get(drafts[:k] + (t,), 0.0) + prob_k * last[t]
        return law


RULES = [
    Rule(),
    Rule("fall back to the last accepted token", on_reject="nothing"),  # the blog post of notebook 00 (its errata #7)
    Rule("re-draft until accepted", on_reject="redraft"),  # the blog's errata #7
    Rule("resample from p", on_reject="p"),
    Rule("one uniform per round", uniforms="shared"),
    Rule("argmax draft, softmax q", draft="argmax"),
    Rule("always accept", uniforms="none"),
    Rule("bonus from the wrong row", bonus_row=-1),
]


def round_law(rule, target: Model, draft: Model, context: tuple, gamma: int) -> dict:
    """{emitted tokens: probability} of one round after `context`, for any rule: every drafted block, walked."""
    vocab = len(target(context))
    law = {}
    for drafts in itertools.product(range(vocab), repeat=gamma):  # every sequence of drafts
        contexts = [context + drafts[:i] for i in range(gamma + 1)]  # contexts[i]: the text before draft i
        p = np.array([target(c) for c in contexts])  # (gamma + 1, V)
        q = np.array([draft(c) for c in contexts[:gamma]]).reshape(gamma, vocab)  # (gamma, V)
        prob = math.prod(rule.draft_law(p[i], q[i])[x] for i, x in enumerate(drafts))  # P(this block is drafted)
        if prob == 0:
            continue
        for emitted, prob_emitted in rule.verify_law(drafts, q, p).items():
            law[emitted] = law.get(emitted, 0.0) + prob * prob_emitted
    return law


def text_law(rule, target: Model, draft: Model, context: tuple, gamma: int, n: int) -> np.ndarray:
    """(V,) * n: the exact law of the first n tokens of the text, rounds chained as generation does."""
    law = np.zeros((len(target(context)),) * n)  # (V,) * n
    one_round = round_law(rule, target, draft, context, gamma)
    empty = one_round.pop((), 0.0)  # a round that emits nothing (a shortcut's) is repeated as it was: left out
    if empty > 1 - 1e-12:
        raise ValueError(f"after {context} a round never emits a token: generation would loop forever")
    for emitted, prob in one_round.items():
        prob /= 1.0 - empty
        if len(emitted) >= n:
            law[emitted[:n]] += prob
        else:  # the text goes on with further rounds after what this one emitted
            law[emitted] += prob * text_law(rule, target, draft, context + emitted, gamma, n - len(emitted))
    return law


def target_law(target: Model, context: tuple, n: int) -> np.ndarray:
    """(V,) * n: P(t1 | context) P(t2 | context, t1) ...: the law of sampling the target alone."""
    vocab = len(target(context))
    law = np.zeros((vocab,) * n)
    for tokens in itertools.product(range(vocab), repeat=n):
        law[tokens] = math.prod(target(context + tokens[:i])[t] for i, t in enumerate(tokens))
    return law


class TableModel:
    """A LanguageModel whose logits depend on the last token only: row t of a (V, V) table follows token t.

    Fast, and exactly known: with `bigram(softmax(logits))` the laws above say what any generator
    run on it must produce. `calls` counts score calls.
    """

    def __init__(self, logits, name: str = "table", max_context: int = 64):
        self.logits = np.asarray(logits, dtype=np.float64)  # (V, V) row t: the logits after token t
        self.name, self.vocab_size, self.max_context = name, self.logits.shape[1], max_context
        self.calls = 0

    def start(self) -> TokenHistory:
        return TokenHistory()  # what it has read of one text: the tokens seen

    def score(self, tokens, state: TokenHistory) -> np.ndarray:
        tokens = check_score(tokens, state, TokenHistory, self)  # (n,) and room for them
        state.tokens += tokens.tolist()
        self.calls += 1
        return self.logits[tokens]  # (n, V)
