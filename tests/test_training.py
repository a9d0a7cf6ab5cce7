"""The training code (training/train_gpt.py, training/corpus.py): its backward pass is the derivative of
its forward pass, its forward pass is specdec.gpt.GPT's, the optimiser descends, the corpus split is
deterministic and disjoint, and saved weights load with specdec.models.load_model."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "training"))

import corpus  # noqa: E402
import train_gpt  # noqa: E402

from specdec.gpt import GPT  # noqa: E402
from specdec.models import load_model  # noqa: E402

V, T, D, LAYERS, HEADS = 98, 8, 16, 2, 2


def tiny_params(seed: int = 0, dtype=np.float64) -> dict:
    """A tiny model whose gains and biases are random too, so every gradient is non-trivial."""
    rng = np.random.default_rng(seed)
    params = train_gpt.init_params(V, T, D, LAYERS, rng)
    return {name: (p + 0.1 * rng.standard_normal(p.shape)).astype(dtype) for name, p in params.items()}


def tiny_batch(seed: int = 1, batch: int = 3):
    rng = np.random.default_rng(seed)
    return rng.integers(0, V, size=(batch, T)), rng.integers(0, V, size=(batch, T))  # (B, T), (B, T)


def test_backward_matches_finite_differences_for_every_parameter():
    params = tiny_params()
    tokens, targets = tiny_batch()
    _, _, cache = train_gpt.forward(params, tokens, HEADS, targets)
    grads = train_gpt.backward(params, cache)
    assert set(grads) == set(params)
    rng = np.random.default_rng(2)
    h = 1e-6
    for name, p in params.items():
        assert grads[name].shape == p.shape, name
        flat = p.reshape(-1)  # a view: perturbing it perturbs the model
        checked = rng.choice(flat.size, size=min(flat.size, 12), replace=False)
        if name == "wte":  # make sure rows that are looked up (not only unembedded) are checked
            checked = np.concatenate([checked, tokens[0, :3] * D])
        for i in checked:
            original = flat[i]
            flat[i] = original + h
            loss_plus = train_gpt.forward(params, tokens, HEADS, targets)[1]
            flat[i] = original - h
            loss_minus = train_gpt.forward(params, tokens, HEADS, targets)[1]
            flat[i] = original
            numeric = (loss_plus - loss_minus) / (2 * h)
            analytic = grads[name].reshape(-1)[i]
            assert abs(numeric - analytic) <= 1e-7 + 1e-5 * abs(numeric), (name, int(i), numeric, analytic)


def test_positions_beyond_the_sequence_get_zero_gradient():
    params = tiny_params()
    tokens, targets = tiny_batch()
    _, _, cache = train_gpt.forward(params, tokens[:, :5], HEADS, targets[:, :5])
    grads = train_gpt.backward(params, cache)
    assert np.all(grads["wpe"][5:] == 0) and np.any(grads["wpe"][:5] != 0)


def test_training_forward_gives_the_inference_models_logits():
    params = tiny_params(dtype=np.float32)
    tokens, _ = tiny_batch(batch=2)
    logits, _, _ = train_gpt.forward(params, tokens, HEADS)  # (B, T, V)
    for row in range(2):
        model = GPT(params, n_head=HEADS)
        np.testing.assert_allclose(model.score(tokens[row], model.start()), logits[row], atol=1e-5, rtol=0)
        cache = model.start()  # and incrementally: the first 3 tokens, then the rest
        incremental = np.concatenate([model.score(tokens[row, :3], cache), model.score(tokens[row, 3:], cache)])
        np.testing.assert_allclose(incremental, logits[row], atol=1e-5, rtol=0)


def test_loss_is_the_mean_negative_log_likelihood():
    params = tiny_params()
    tokens, targets = tiny_batch()
    logits, loss, _ = train_gpt.forward(params, tokens, HEADS, targets)
    log_probs = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    expected = -np.take_along_axis(log_probs, targets[..., None], axis=-1).mean()
    assert loss == pytest.approx(expected, rel=1e-12)


def test_adamw_steps_reduce_the_loss_on_a_fixed_batch():
    params = tiny_params(dtype=np.float32)
    tokens, targets = tiny_batch()
    optimizer = train_gpt.AdamW(params, weight_decay=0.1)
    losses = []
    for _ in range(3):
        _, loss, cache = train_gpt.forward(params, tokens, HEADS, targets)
        grads = train_gpt.backward(params, cache)
        train_gpt.clip_gradients(grads, 1.0)
        optimizer.step(params, grads, lr=1e-2)
        losses.append(loss)
    assert losses[2] < losses[1] < losses[0]


def test_weight_decay_acts_on_matrices_only():
    params = tiny_params(dtype=np.float32)
    before = {name: p.copy() for name, p in params.items()}
    zero = {name: np.zeros_like(p) for name, p in params.items()}
    train_gpt.AdamW(params, weight_decay=0.5).step(params, zero, lr=0.1)
    for name, p in params.items():
        factor = 1 - 0.1 * 0.5 if p.ndim == 2 else 1.0
        np.testing.assert_allclose(p, before[name] * factor, rtol=1e-6, err_msg=name)


def test_gradient_clipping_caps_the_global_norm():
    grads = {"a": np.full((2, 2), 3.0, dtype=np.float32), "b": np.full(1, 4.0, dtype=np.float32)}
    norm = train_gpt.clip_gradients(grads, max_norm=1.0)
    assert norm == pytest.approx(math.sqrt(4 * 9 + 16))
    assert math.sqrt(sum(float((g**2).sum()) for g in grads.values())) == pytest.approx(1.0, rel=1e-6)


def test_learning_rate_warms_up_then_decays_to_the_final_fraction():
    lrs = [train_gpt.learning_rate(step, 100, peak=1.0, warmup=10, final_fraction=0.1) for step in range(100)]
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:], strict=False))
    assert train_gpt.learning_rate(100, 100, peak=1.0, warmup=10) == pytest.approx(0.1)


def test_saved_weights_load_with_load_model(tmp_path):
    params = tiny_params(dtype=np.float32)
    path = tmp_path / "tiny.npz"
    train_gpt.save(params, path, n_head=HEADS, dtype=np.float16)
    model = load_model(str(path))
    assert (model.vocab_size, model.max_context, model.n_layer, model.n_head) == (V, T, LAYERS, HEADS)
    tokens, _ = tiny_batch(batch=1)
    expected, _, _ = train_gpt.forward(train_gpt.rounded(params, np.float16), tokens, HEADS)
    np.testing.assert_allclose(model.score(tokens[0], model.start()), expected[0], atol=1e-5, rtol=0)
    with np.load(path, allow_pickle=False) as archive:
        assert archive["h0.attn.w_qkv"].dtype == np.float16 and archive["h0.ln1.gain"].dtype == np.float32


def test_split_rule_is_a_stable_hash_of_the_path():
    assert corpus.is_heldout("ast.py") and corpus.is_heldout("enum.py")  # pinned: sha256 never changes
    assert not corpus.is_heldout("os.py") and not corpus.is_heldout("asyncio/tasks.py")
    assert [corpus.is_heldout(f"m{i}.py") for i in range(200)] == [corpus.is_heldout(f"m{i}.py") for i in range(200)]
    assert 0.02 < np.mean([corpus.is_heldout(f"pkg/module_{i}.py") for i in range(2000)]) < 0.08


def test_exclusions():
    for path in ["site-packages/numpy/core.py", "test/test_os.py", "lib2to3/tests/data/x.py", "pydoc_data/topics.py"]:
        assert corpus.excluded(path), path
    assert corpus.excluded("idlelib/idle_test/test_x.py") and corpus.excluded("_sysconfigdata__linux_x86_64.py")
    assert corpus.excluded(
        "encodings/cp1252.py", '""" Python Character Mapping Codec cp1252 generated ... gencodec.py.'
    )
    assert not corpus.excluded("encodings/utf_8.py", '""" Python \'utf-8\' Codec') and not corpus.excluded("os.py")


@pytest.fixture(scope="module")
def stdlib_corpus():
    return corpus.load_corpus()


def test_corpus_split_is_deterministic_and_disjoint(stdlib_corpus):
    files = corpus.corpus_files()
    assert files == sorted(files) == corpus.corpus_files()
    train, heldout = set(stdlib_corpus.train_files), set(stdlib_corpus.heldout_files)
    assert not train & heldout
    assert train | heldout == set(files) - corpus_excluded_by_text(files) - set(stdlib_corpus.skipped)
    assert all(corpus.is_heldout(f) for f in heldout) and not any(corpus.is_heldout(f) for f in train)
    assert 0.01 < len(heldout) / len(files) < 0.1


def corpus_excluded_by_text(files: list[str]) -> set[str]:
    return {f for f in files if f.startswith("encodings/") and corpus.excluded(f, (corpus.STDLIB / f).read_text())}


def test_token_streams_are_the_tokenised_files_each_followed_by_end(stdlib_corpus):
    from specdec.tokenizer import END, CharTokenizer

    first = CharTokenizer().encode((corpus.STDLIB / stdlib_corpus.heldout_files[0]).read_text(encoding="utf-8"))
    assert stdlib_corpus.heldout[: len(first) + 1].tolist() == [*first, END]
    assert (stdlib_corpus.train == END).sum() == len(stdlib_corpus.train_files)
    assert (stdlib_corpus.heldout == END).sum() == len(stdlib_corpus.heldout_files)


def test_heldout_windows_are_consecutive_slices(stdlib_corpus):
    windows = corpus.heldout_windows(stdlib_corpus.heldout, 3, context=16)  # (3, 17)
    assert windows.shape == (3, 17)
    assert windows.reshape(-1).tolist() == stdlib_corpus.heldout[:51].tolist()
    with pytest.raises(ValueError, match="windows"):
        corpus.heldout_windows(stdlib_corpus.heldout[:10], 1, context=16)
