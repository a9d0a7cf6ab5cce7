"""Notebook 06's `linear`: a few rows as a stack of matrix-vector products, the same products.

The stack path must give every row exactly the numbers that row alone gives (a one-row call's
gemv), agree with the core's `x @ w + b` to float32 rounding for every n, be chosen only on the
measured kernels, and leave the GPT's outputs what they were: greedy speculative decoding still
writes plain greedy's text. Negative controls: products with a bug (a row's bias dropped, rows
paired with the wrong row) that the same comparisons must catch.
"""

import numpy as np
import pytest

import specdec
from specdec import gpt
from specdec.gpt import linear, linear_gemm
from specdec.threads import blas_kernels


@pytest.fixture(scope="module")
def target():
    return specdec.load_model("target")


def products(target):
    """Every (w, b) a layer multiplies by: qkv, attention output, the MLP's two (d_in, d_out) shapes."""
    layer = target.layers[0]
    return [(layer[2], layer[3]), (layer[4], layer[5]), (layer[8], layer[9]), (layer[10], layer[11])]


def rows_alone(x, w, b):
    """Each row of x through the core's one-row product, one call per row."""
    return np.stack([linear_gemm(row[None], w, b)[0] for row in x])


def stack_problems(product, target, n_max=9) -> list[str]:
    """Where `product` (with the stack forced on) differs from one row at a time, bit for bit."""
    found = []
    rng = np.random.default_rng(1)
    for w, b in products(target):
        for n in range(1, n_max + 1):
            x = rng.standard_normal((n, w.shape[0])).astype(np.float32)  # (n, d_in)
            if not np.array_equal(product(x, w, b), rows_alone(x, w, b)):
                found.append(f"{w.shape} n={n}")
    return found


def test_the_stack_gives_each_row_what_it_gives_alone(target, monkeypatch):
    monkeypatch.setattr(gpt, "STACKED_ROWS", 9)
    assert stack_problems(linear, target) == []


@pytest.mark.parametrize("stacked_rows", [0, 7, 9])
def test_linear_agrees_with_the_core_for_every_n(target, monkeypatch, stacked_rows):
    monkeypatch.setattr(gpt, "STACKED_ROWS", stacked_rows)
    rng = np.random.default_rng(2)
    for w, b in products(target):
        for n in (1, 2, 3, 6, 7, 8, 9, 16, 64):
            x = rng.standard_normal((n, w.shape[0])).astype(np.float32)
            got, core = linear(x, w, b), linear_gemm(x, w, b)
            assert got.shape == core.shape == (n, w.shape[1]) and got.dtype == np.float32
            np.testing.assert_allclose(got, core, rtol=1e-5, atol=1e-5)


def test_the_stack_is_used_only_on_the_measured_kernels():
    expected = 7 if blas_kernels() & {"Haswell"} else 0
    assert gpt.STACKED_KERNELS == frozenset({"Haswell"}) and gpt.STACKED_ROWS == expected
    assert gpt.linear is not gpt.linear_gemm  # the package's GPT multiplies through the faster linear


@pytest.mark.parametrize("stacked_rows", [0, 7])
def test_greedy_speculative_still_writes_plain_greedys_text(target, monkeypatch, stacked_rows):
    monkeypatch.setattr(gpt, "STACKED_ROWS", stacked_rows)
    draft = specdec.load_model("draft")
    greedy = specdec.SamplingParams(temperature=0)
    prompt = specdec.load_tokenizer().encode("    def __init__(self, name):\n        self.")
    plain = specdec.generate(target, prompt, 80, greedy).tokens
    for gamma in (2, 4, 6, "auto"):
        fast = specdec.speculative_generate(target, draft, prompt, 80, greedy, gamma=gamma).tokens
        np.testing.assert_array_equal(fast, plain)


def test_multi_token_scores_match_one_token_calls(target, monkeypatch):
    """With the stack, n tokens in one call give the logits of n one-token calls (attention adds in another
    order, so to float32 rounding, not bit for bit)."""
    monkeypatch.setattr(gpt, "STACKED_ROWS", 7)
    tokens = specdec.load_tokenizer().encode("for i in range(10):\n    print(i)")
    for n in (2, 5, 7, 8):
        cache = target.start()
        target.score(tokens[:20], cache)
        together = target.score(tokens[20 : 20 + n], cache)  # (n, V)
        cache.rollback(20)
        one_by_one = np.concatenate([target.score([t], cache) for t in tokens[20 : 20 + n]])  # (n, V)
        np.testing.assert_allclose(together, one_by_one, rtol=1e-4, atol=1e-4)


# --- Negative controls ---------------------------------------------------------------------------


def test_the_comparison_catches_a_stack_without_its_bias(target):
    def no_bias(x, w, b):
        return (x[:, None, :] @ w)[:, 0] + (b if x.shape[0] == 1 else 0)

    assert stack_problems(no_bias, target)


def test_the_comparison_catches_rows_paired_with_the_wrong_row(target):
    def rolled(x, w, b):
        return (np.roll(x, 1, axis=0)[:, None, :] @ w)[:, 0] + b

    assert stack_problems(rolled, target)
