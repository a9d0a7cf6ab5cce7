"""specdec.models.load_model refuses bad weights files with a ValueError that says what is wrong,
and never unpickles (unpickling runs code chosen by whoever wrote the file)."""

import numpy as np
import pytest

from specdec.gpt import GPT, expected_shapes
from specdec.models import load_model

V, T, D, LAYERS, HEADS = 98, 16, 8, 1, 2


def good_arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    arrays = {
        name: (0.1 * rng.standard_normal(shape)).astype(np.float32)
        for name, shape in expected_shapes(V, T, D, LAYERS).items()
    }
    arrays.update(kind=np.array("gpt"), n_head=np.array(HEADS), n_layer=np.array(LAYERS))
    return arrays


def write(tmp_path, arrays: dict, name: str = "model.npz", allow_pickle: bool = False):
    path = tmp_path / name
    np.savez(path, allow_pickle=allow_pickle, **arrays)
    return path


def test_a_good_file_loads(tmp_path):
    """The positive control: the files below differ from this one in one way each."""
    model = load_model(str(write(tmp_path, good_arrays())))
    assert isinstance(model, GPT)
    assert (model.vocab_size, model.max_context, model.n_layer, model.n_head) == (V, T, LAYERS, HEADS)
    assert model.score([2, 3, 4], model.start()).shape == (3, V)


def test_missing_file(tmp_path):
    with pytest.raises(ValueError, match="not found"):
        load_model(str(tmp_path / "nowhere.npz"))


def test_not_a_model_name():
    with pytest.raises(ValueError, match=r"name must be one of \['draft', 'target'\] or a path to an .npz file"):
        load_model("tagret")


def test_truncated_file(tmp_path):
    path = write(tmp_path, good_arrays())
    data = path.read_bytes()
    for size in (len(data) // 2, 100, 0):
        path.write_bytes(data[:size])
        with pytest.raises(ValueError, match="weights file"):
            load_model(str(path))


@pytest.mark.parametrize("missing", ["h0.attn.w_qkv", "ln_f.bias", "wpe"])
def test_missing_array(tmp_path, missing):
    arrays = good_arrays()
    del arrays[missing]
    with pytest.raises(ValueError, match=missing.replace(".", r"\.")):
        load_model(str(write(tmp_path, arrays)))


@pytest.mark.parametrize("missing", ["kind", "n_head", "n_layer"])
def test_missing_scalar(tmp_path, missing):
    arrays = good_arrays()
    del arrays[missing]
    with pytest.raises(ValueError, match=f"missing scalar '{missing}'"):
        load_model(str(write(tmp_path, arrays)))


def test_misshaped_array(tmp_path):
    arrays = good_arrays()
    arrays["h0.mlp.w_in"] = arrays["h0.mlp.w_in"].T.copy()
    with pytest.raises(ValueError, match=r"'h0\.mlp\.w_in' has shape \(32, 8\), expected \(8, 32\)"):
        load_model(str(write(tmp_path, arrays)))


def test_more_layers_announced_than_stored(tmp_path):
    arrays = good_arrays()
    arrays["n_layer"] = np.array(2)
    with pytest.raises(ValueError, match=r"missing array 'h1\."):
        load_model(str(write(tmp_path, arrays)))


def test_fewer_layers_announced_than_stored(tmp_path):
    arrays = good_arrays()
    arrays["n_layer"] = np.array(0)
    with pytest.raises(ValueError, match="'n_layer' must be an integer >= 1"):
        load_model(str(write(tmp_path, arrays)))
    arrays = {
        **good_arrays(),
        **{key.replace("h0.", "h1."): value for key, value in good_arrays().items() if "h0." in key},
    }
    with pytest.raises(ValueError, match="holds more layers than n_layer = 1"):
        load_model(str(write(tmp_path, arrays)))


@pytest.mark.parametrize("n_head", [0, -2, 2.7, True])
def test_bad_head_counts(tmp_path, n_head):
    arrays = good_arrays()
    arrays["n_head"] = np.array(n_head)
    with pytest.raises(ValueError, match="'n_head' must be an integer >= 1"):
        load_model(str(write(tmp_path, arrays)))


def test_non_finite_weights_are_refused(tmp_path):
    arrays = good_arrays()
    arrays["h0.mlp.w_in"][0, 0] = np.nan
    with pytest.raises(ValueError, match="'h0.mlp.w_in' must hold finite floats"):
        load_model(str(write(tmp_path, arrays)))


def test_a_text_file_is_not_mistaken_for_a_pickle(tmp_path):
    path = tmp_path / "notes.npz"
    path.write_text("just some text")
    with pytest.raises(ValueError, match="not an .npz archive"):
        load_model(str(path))


def test_heads_that_do_not_divide_the_width(tmp_path):
    arrays = good_arrays()
    arrays["n_head"] = np.array(3)
    with pytest.raises(ValueError, match="multiple of n_head"):
        load_model(str(write(tmp_path, arrays)))


def test_unknown_kind(tmp_path):
    arrays = good_arrays()
    arrays["kind"] = np.array("rnn")
    with pytest.raises(ValueError, match="unknown model kind 'rnn'"):
        load_model(str(write(tmp_path, arrays)))


class Payload:
    """Unpickling this object calls open(path, "w"), creating a file: proof that code ran."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return open, (self.path, "w")


@pytest.mark.parametrize("key", ["h0.attn.w_qkv", "kind", "smuggled"])
def test_pickled_object_array_is_refused_and_never_executed(tmp_path, key):
    marker = tmp_path / "code-ran"
    arrays = good_arrays()
    arrays[key] = np.array([Payload(marker)], dtype=object)
    path = write(tmp_path, arrays, allow_pickle=True)
    with pytest.raises(ValueError, match="pickled"):
        load_model(str(path))
    assert not marker.exists()
    # the negative control: the same file, loaded carelessly, does run the payload
    with np.load(path, allow_pickle=True) as archive:
        archive[key]
    assert marker.exists()


def test_an_implausible_context_length_is_refused_before_its_mask_is_allocated(tmp_path):
    """40,000 positions of width 4 fit in a small file; their causal mask would take 6 GiB."""
    arrays = good_arrays()
    wide = {name: value for name, value in arrays.items() if name not in ("wte", "wpe")}
    shapes = expected_shapes(V, 40_000, 4, LAYERS)
    wide.update({name: np.zeros(shape, dtype=np.float32) for name, shape in shapes.items()})
    path = tmp_path / "long.npz"
    np.savez_compressed(path, **wide)
    assert path.stat().st_size < 1 << 20  # a small file
    with pytest.raises(ValueError, match=r"max_context 40000 \(the rows of 'wpe'\) is more than 4096: .* 6\.0 GiB"):
        load_model(str(path))


def test_a_model_too_large_for_memory_is_refused_before_it_is_built(tmp_path):
    arrays = good_arrays()
    big = {name: value for name, value in arrays.items() if name not in expected_shapes(V, T, D, LAYERS)}
    big.update({name: np.zeros(shape, dtype=np.float32) for name, shape in expected_shapes(V, 4096, 8, 1).items()})
    big["n_layer"], big["n_head"] = np.array(1), np.array(2)
    np.savez_compressed(tmp_path / "ok.npz", **big)
    assert load_model(str(tmp_path / "ok.npz")).max_context == 4096  # the largest context allowed still loads


def test_an_array_header_announcing_gigabytes_is_refused_before_reading(tmp_path):
    """A compressed archive can claim a huge array in a few bytes: the header is read, the data never."""
    import zipfile

    path = tmp_path / "huge.npz"
    with zipfile.ZipFile(path, "w") as archive, archive.open("wte.npy", "w") as member:
        header = {"descr": "<f4", "fortran_order": False, "shape": (1 << 20, 1 << 10)}  # 4 GiB of float32
        np.lib.format.write_array_header_1_0(member, header)  # no data follows
    with pytest.raises(ValueError, match=r"array 'wte' of shape \(1048576, 1024\) would take 4\.0 GiB"):
        load_model(str(path))
