"""Data (model.md §2): teacher, spiked/max sampling, masks, seeds, zarr store round trip — each
law check run on both samplers (numpy on the host, jax on the device: two draws of one law).

Tolerances: Monte Carlo means within 4 standard errors (s.e. = sample std/√n); variances within 4
s.e. of the variance estimator, √((m4 − s⁴)/n). A correct sampler fails one such check with
probability ~6e-5.
"""

import math

import numpy as np
import pytest

from slrpipe.data import Chunk, SLRDataset, SLRTask, make_teacher, sample_chunk, write_dataset
from slrpipe.data.device import sample_chunk_device
from slrpipe.scores import softmax
from slrpipe.setting import Setting
from slrpipe.vocabulary import SAMPLERS


def _on_host(*args, **kwargs) -> Chunk:
    return Chunk(*(np.asarray(a) for a in sample_chunk_device(*args, **kwargs)))


@pytest.fixture(params=SAMPLERS)
def draw(request):
    """A sampler's chunk as host arrays: ``sample_chunk`` or the device sampler's, copied back."""
    return sample_chunk if request.param == "numpy" else _on_host


def _mean_ok(x, mu, k=4.0):
    x = np.asarray(x, float)
    se = x.std(ddof=1) / math.sqrt(x.size)
    return abs(x.mean() - mu) < k * se, (x.mean(), mu, se)


def _var_ok(x, var, k=4.0):
    x = np.asarray(x, float) - np.mean(x)
    s2 = x.var(ddof=1)
    se = math.sqrt((np.mean(x**4) - s2**2) / x.size)
    return abs(s2 - var) < k * se, (s2, var, se)


def _teacher_fields(X, k, v):
    D = X.shape[-1]
    return X.astype(float) @ k / math.sqrt(D), X.astype(float) @ v / math.sqrt(D)


def test_teacher_orthogonal_normalised_deterministic():
    k, v = make_teacher(300, 5)
    assert abs(k @ v) < 1e-9 * 300
    np.testing.assert_allclose([k @ k, v @ v], [300, 300], rtol=1e-12)
    k2, v2 = make_teacher(300, 5)
    assert np.array_equal(k, k2) and np.array_equal(v, v2)
    assert not np.allclose(make_teacher(300, 6)[0], k)
    with pytest.raises(ValueError, match="D"):
        make_teacher(1, 0)


def test_spiked_fields_sqrt_nu_at_eps(draw):
    # ν = 4: χ*_{ε*} ~ N(√ν = 2, 1) — would read N(4, 1) if ν entered instead of √ν.
    task = SLRTask(Setting("spiked", 4.0, 3, 0.0), 2000)
    k, v = make_teacher(task.D, 0)
    ch = draw(task, k, v, seed=1, index=0, size=2000)
    chi, _ = _teacher_fields(ch.X, k, v)
    rows = np.arange(len(chi))
    at = chi[rows, ch.eps]
    other = chi[np.arange(3)[None, :] != ch.eps[:, None]]
    for ok, info in (_mean_ok(at, 2.0), _var_ok(at, 1.0), _mean_ok(other, 0.0), _var_ok(other, 1.0)):
        assert ok, info
    # ε* uniform on {0, 1, 2}: each frequency within 4 s.e. of 1/3
    for ell in range(3):
        assert _mean_ok(ch.eps == ell, 1 / 3)[0]


def test_max_inf_eps_is_argmax_with_variable_length(draw):
    task = SLRTask(Setting("max", math.inf, {1: 0.2, 2: 0.3, 3: 0.5}, 0.0), 200)
    k, v = make_teacher(task.D, 3)
    ch = draw(task, k, v, seed=4, index=2, size=3000)
    chi, _ = _teacher_fields(ch.X, k, v)
    assert np.array_equal(ch.eps, np.argmax(np.where(ch.mask, chi, -np.inf), axis=1))
    assert (ch.eps < ch.lengths).all()


def test_max_finite_nu_eps_follows_softmax_posterior(draw):
    # E[1{ε* = ℓ} − softmax(ν χ*)_ℓ] = 0 for every ℓ (the sampling law), within 4 s.e.
    task = SLRTask(Setting("max", 1.5, {2: 0.5, 3: 0.5}, 0.0), 200)
    k, v = make_teacher(task.D, 3)
    ch = draw(task, k, v, seed=9, index=0, size=6000)
    chi, _ = _teacher_fields(ch.X, k, v)
    p = softmax(1.5 * chi, ch.mask)
    assert np.allclose(p[~ch.mask], 0)
    for ell in range(3):
        ok, info = _mean_ok((ch.eps == ell) - p[:, ell], 0.0)
        assert ok, (ell, info)
    # the tilt is real: ε* is the argmax much more often than 1/L would give
    assert np.mean(ch.eps == np.argmax(np.where(ch.mask, chi, -np.inf), 1)) > 0.6


def test_masks_padding_and_length_law(draw):
    law = {1: 0.25, 3: 0.75}
    task = SLRTask(Setting("spiked", 2.0, law, 0.3), 64)
    k, v = make_teacher(task.D, 0)
    ch = draw(task, k, v, seed=2, index=0, size=4000)
    assert ch.X.dtype == np.float32 and ch.X.shape == (4000, 3, 64) and ch.mask.dtype == bool
    assert (ch.X[~ch.mask] == 0).all()
    assert np.array_equal(ch.mask, np.arange(3)[None] < ch.lengths[:, None])
    assert (ch.eps >= 0).all() and (ch.eps < ch.lengths).all()
    assert set(np.unique(ch.lengths)) == {1, 3}
    assert _mean_ok(ch.lengths == 1, 0.25)[0]


def test_labels_mean_and_variance(draw):
    # y = z*_{ε*} + Δξ: E y = 0, Var y = 1 + Δ² (z* ⊥ the spike since k* ⊥ v*)
    for model, nu in (("spiked", 3.0), ("max", 2.0)):
        task = SLRTask(Setting(model, nu, 2, 0.5), 100)
        k, v = make_teacher(task.D, 1)
        ch = draw(task, k, v, seed=3, index=0, size=20000)
        assert ch.y.dtype == np.float64
        for ok, info in (_mean_ok(ch.y, 0.0), _var_ok(ch.y, 1.25)):
            assert ok, (model, info)
        _, z = _teacher_fields(ch.X, k, v)
        resid = ch.y - z[np.arange(len(z)), ch.eps]
        assert _var_ok(resid, 0.25)[0]


def test_seeds_deterministic_and_chunks_independent(draw):
    task = SLRTask(Setting("max", 1.0, 3, 0.1), 50)
    k, v = make_teacher(task.D, 0)
    a = draw(task, k, v, 7, 0, 500)
    b = draw(task, k, v, 7, 0, 500)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    c = draw(task, k, v, 7, 1, 500)
    d = draw(task, k, v, 8, 0, 500)
    for other in (c, d):
        x, y = a.X.ravel().astype(float), other.X.ravel().astype(float)
        r = np.corrcoef(x, y)[0, 1]
        assert abs(r) < 4 / math.sqrt(x.size), r  # s.e. of a null correlation ≈ 1/√N


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_store_roundtrip_bit_identical(tmp_path, sampler):
    task = SLRTask(Setting("max", 2.0, {1: 0.5, 2: 0.5}, 0.2), 40)
    ds = SLRDataset(task, 1000, teacher_seed=3, data_seed=4, chunk_size=300, sampler=sampler)
    stored = write_dataset(tmp_path / "d.zarr", ds)
    opened = SLRDataset.open(tmp_path / "d.zarr")
    assert opened == ds and opened.n_chunks == 4 and opened.bounds(3) == (900, 1000)
    for i in range(ds.n_chunks):
        for src in (stored, opened):
            assert all(np.array_equal(x, y) for x, y in zip(ds.chunk(i), src.chunk(i)))
    full = opened.load()
    assert full.X.shape == (1000, 2, 40)
    # chunk 2 regenerated alone equals rows 600:900 of the stored whole
    assert np.array_equal(ds.regenerated().chunk(2).X, full.X[600:900])
    import zarr
    from conftest import assert_self_describing

    group = zarr.open_group(str(tmp_path / "d.zarr"), mode="r")
    assert_self_describing(group, "d.zarr", global_attrs=False)  # history: a CLI's (tests/test_workflow.py)
    assert group.attrs["Conventions"].startswith("CF-") and group["X"].attrs["long_name"] == "token embeddings"
    attrs = dict(group.attrs)
    for key in ("model", "nu", "L", "delta", "D", "n", "teacher_seed", "data_seed", "chunk_size", "slrpipe_version"):
        assert key in attrs
    assert attrs["sampler"] == sampler and opened.sampler == sampler
    assert not list(tmp_path.glob(".tmp-*"))


def test_device_sampler_keeps_the_set_on_the_device_and_any_chunk_regenerates_alone():
    import jax

    task = SLRTask(Setting("spiked", 1.0, {2: 0.5, 3: 0.5}, 0.1), 30)
    ds = SLRDataset(task, 700, teacher_seed=1, data_seed=2, chunk_size=300, sampler="jax")
    full = ds.load()
    assert all(isinstance(a, jax.Array) for a in full)
    assert [a.dtype for a in full] == [np.float32, bool, np.float64, np.int64, np.int64]
    assert full.X.shape == (700, 3, 30)
    for i in (2, 0, 1):  # any order, each drawn alone
        a, b = ds.bounds(i)
        assert all(np.array_equal(np.asarray(x)[a:b], np.asarray(y)) for x, y in zip(full, ds.chunk(i)))
    # another sampler, another draw of the same law
    host = SLRDataset(task, 700, teacher_seed=1, data_seed=2, chunk_size=300).load()
    assert not np.array_equal(host.X, np.asarray(full.X))
    with pytest.raises(ValueError, match="sampler"):
        SLRDataset(task, 700, 1, 2, sampler="torch")
    with pytest.raises(ValueError, match="2\\*\\*32"):
        sample_chunk_device(task, *make_teacher(task.D, 1), 2**32, 0, 10)


def _gpu():
    import jax

    try:
        return jax.devices("gpu")[0]
    except RuntimeError:
        return None


@pytest.mark.gpu
@pytest.mark.skipif(_gpu() is None, reason="needs a GPU")
def test_device_sampler_draws_the_same_numbers_on_cpu_and_gpu():
    # threefry's bits are the same on every backend; the Gaussian transform may round differently
    import jax

    task = SLRTask(Setting("max", 2.0, {2: 0.5, 3: 0.5}, 0.3), 200)
    k, v = make_teacher(task.D, 0)
    out = {}
    for dev in (jax.devices("cpu")[0], _gpu()):
        with jax.default_device(dev):
            out[dev.platform] = Chunk(*(np.asarray(a) for a in sample_chunk_device(task, k, v, 5, 3, 4000)))
    cpu, gpu = out["cpu"], out["gpu"]
    for name in ("mask", "lengths"):
        assert np.array_equal(getattr(cpu, name), getattr(gpu, name))
    np.testing.assert_allclose(gpu.X, cpu.X, rtol=1e-5, atol=1e-6)
    # a rounding difference can move ε* only where two tokens' odds tie to float precision
    assert np.mean(cpu.eps == gpu.eps) > 0.999
    same = cpu.eps == gpu.eps
    np.testing.assert_allclose(gpu.y[same], cpu.y[same], rtol=1e-5, atol=1e-6)


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="nu"):
        SLRTask(Setting("spiked", math.inf, 2, 0.0), 10)
    with pytest.raises(ValueError, match="model"):
        SLRTask(Setting("foo", 1.0, 2, 0.0), 10)
    with pytest.raises(ValueError, match="L"):
        SLRTask(Setting("max", 1.0, {0: 1.0}, 0.0), 10)
    with pytest.raises(ValueError, match="n"):
        SLRDataset(SLRTask(Setting("max", 1.0, 2, 0.0), 10), 0, 0, 0)
    with pytest.raises(ValueError, match="data"):
        SLRDataset.open("/nonexistent/store.zarr")


def test_length_law_text_round_trips():
    from slrpipe.lengths import format_L, parse_L

    for L in (3, {1: 0.5, 2: 0.5}, {1: 1 / 3, 2: 1 / 3, 3: 1 / 3}, {1: 0.2, 3: 0.8}):
        assert parse_L(format_L(L)) == pytest.approx(SLRTask(Setting("max", 1.0, L, 0.0), 2).L)
    assert format_L({1: 1 / 3, 2: 1 / 3, 3: 1 / 3}) == "uniform:1,2,3" and format_L(3) == "3"
    with pytest.raises(ValueError, match="L: "):
        parse_L("three")
