"""The bundled target model reproduces the held-out loss its model card records.

The card (specdec/weights/MODEL_CARD.md) has an "Evaluation record" block of `key: value` lines;
this test rebuilds the held-out sample from this machine's standard library, checks it is the very
sample the card was measured on (by its sha256), scores it with the inference model
specdec.gpt.GPT exactly as the card describes, and compares. Where the standard library differs
(another Python version), the sample differs and the test skips, saying so.
"""

import hashlib
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from specdec.logits import log_softmax
from specdec.models import WEIGHTS, load_model

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "training"))

import corpus  # noqa: E402

CARD = WEIGHTS / "MODEL_CARD.md"
TOLERANCE = 0.005  # bits per token; float32 vs float64 rounding and BLAS differences are ~1e-5


def card_record() -> dict[str, str]:
    text = CARD.read_text(encoding="utf-8")
    block = text.split("## Evaluation record", 1)[1].split("```")[1]
    return dict(re.findall(r"^(\w+): (\S+)", block, flags=re.MULTILINE))


def sample_sha256(windows: np.ndarray) -> str:
    return hashlib.sha256(windows.astype(np.uint8).tobytes()).hexdigest()


def bits_per_token(model, windows: np.ndarray) -> float:
    """Mean -log2 p(next token): each window scored from an empty cache, reading row[:-1], predicting row[1:]."""
    total = 0.0
    for row in windows:
        log_probs = log_softmax(model.score(row[:-1], model.start()))  # (T, V) natural log
        total -= log_probs[np.arange(row.size - 1), row[1:]].sum()
    return total / (windows.shape[0] * (windows.shape[1] - 1)) / np.log(2)


def test_bundled_target_reproduces_the_recorded_heldout_loss():
    record = card_record()
    context, n_windows = int(record["context"]), int(record["test_windows"])
    heldout = corpus.load_corpus().heldout
    different = (
        f"this machine's standard library (Python {corpus.PYTHON_VERSION}) does not give the held-out sample "
        f"the model card was measured on (Python {record['python_version']}'s), so its loss cannot be reproduced here"
    )
    if heldout.size < n_windows * (context + 1):
        pytest.skip(different)
    windows = corpus.heldout_windows(heldout, n_windows, context)  # (W, T + 1)
    if sample_sha256(windows) != record["test_sample_sha256"]:
        pytest.skip(different)
    model = load_model("target")
    assert model.max_context == context
    with threadpool_limits(limits=1, user_api="blas"):  # small products: one thread is faster and steadier
        measured = bits_per_token(model, windows)
    assert measured == pytest.approx(float(record["test_bits_per_token"]), abs=TOLERANCE)


def test_card_records_the_full_evaluation_too():
    record = card_record()
    assert int(record["eval_windows"]) * int(record["context"]) >= 200_000
    assert int(record["test_windows"]) <= int(record["eval_windows"])
    assert float(record["test_bits_per_token"]) > 0 and float(record["eval_bits_per_token"]) > 0
