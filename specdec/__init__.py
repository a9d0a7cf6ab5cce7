"""specdec: sampling and exact speculative decoding in numpy, built notebook by notebook.

The modules imported below are generated from the course notebooks (see their headers);
`import specdec` needs numpy only.
"""

from specdec.batch import generate_batch, speculative_generate_batch
from specdec.block import block_verify
from specdec.drawing import sample
from specdec.generation import GenerationResult, generate
from specdec.logits import log_softmax, softmax
from specdec.lookup import PromptLookupDraft
from specdec.models import load_model, load_tokenizer
from specdec.nucleus import top_p_filter
from specdec.pipeline import SamplingParams, min_p_filter, sample_token, sampling_probs
from specdec.protocol import DecodingState, LanguageModel
from specdec.speculative import SpeculativeResult, speculative_generate
from specdec.topk import top_k_filter
from specdec.verify import residual_distribution, speculative_verify

__all__ = [
    "DecodingState",
    "GenerationResult",
    "LanguageModel",
    "PromptLookupDraft",
    "SamplingParams",
    "SpeculativeResult",
    "block_verify",
    "generate",
    "generate_batch",
    "load_model",
    "load_tokenizer",
    "log_softmax",
    "min_p_filter",
    "sample",
    "sample_token",
    "residual_distribution",
    "sampling_probs",
    "softmax",
    "speculative_generate",
    "speculative_generate_batch",
    "speculative_verify",
    "top_k_filter",
    "top_p_filter",
]
