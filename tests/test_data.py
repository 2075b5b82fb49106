"""Data (model.md §2): teacher, spiked/max sampling, masks, seeds, zarr store round trip.

Tolerances: Monte Carlo means within 4 standard errors (s.e. = sample std/√n); variances within 4
s.e. of the variance estimator, √((m4 − s⁴)/n). A correct sampler fails one such check with
probability ~6e-5.
"""

import math

import numpy as np
import pytest

from slrpipe.data import SLRDataset, SLRTask, make_teacher, sample_chunk, write_dataset
from slrpipe.scores import softmax


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


def test_spiked_fields_sqrt_nu_at_eps():
    # ν = 4: χ*_{ε*} ~ N(√ν = 2, 1) — would read N(4, 1) if ν entered instead of √ν.
    task = SLRTask("spiked", 4.0, 3, 0.0, 2000)
    k, v = make_teacher(task.D, 0)
    ch = sample_chunk(task, k, v, seed=1, index=0, size=2000)
    chi, _ = _teacher_fields(ch.X, k, v)
    rows = np.arange(len(chi))
    at = chi[rows, ch.eps]
    other = chi[np.arange(3)[None, :] != ch.eps[:, None]]
    for ok, info in (_mean_ok(at, 2.0), _var_ok(at, 1.0), _mean_ok(other, 0.0), _var_ok(other, 1.0)):
        assert ok, info
    # ε* uniform on {0, 1, 2}: each frequency within 4 s.e. of 1/3
    for ell in range(3):
        assert _mean_ok(ch.eps == ell, 1 / 3)[0]


def test_max_inf_eps_is_argmax_with_variable_length():
    task = SLRTask("max", math.inf, {1: 0.2, 2: 0.3, 3: 0.5}, 0.0, 200)
    k, v = make_teacher(task.D, 3)
    ch = sample_chunk(task, k, v, seed=4, index=2, size=3000)
    chi, _ = _teacher_fields(ch.X, k, v)
    assert np.array_equal(ch.eps, np.argmax(np.where(ch.mask, chi, -np.inf), axis=1))
    assert (ch.eps < ch.lengths).all()


def test_max_finite_nu_eps_follows_softmax_posterior():
    # E[1{ε* = ℓ} − softmax(ν χ*)_ℓ] = 0 for every ℓ (the sampling law), within 4 s.e.
    task = SLRTask("max", 1.5, {2: 0.5, 3: 0.5}, 0.0, 200)
    k, v = make_teacher(task.D, 3)
    ch = sample_chunk(task, k, v, seed=9, index=0, size=6000)
    chi, _ = _teacher_fields(ch.X, k, v)
    p = softmax(1.5 * chi, ch.mask)
    assert np.allclose(p[~ch.mask], 0)
    for ell in range(3):
        ok, info = _mean_ok((ch.eps == ell) - p[:, ell], 0.0)
        assert ok, (ell, info)
    # the tilt is real: ε* is the argmax much more often than 1/L would give
    assert np.mean(ch.eps == np.argmax(np.where(ch.mask, chi, -np.inf), 1)) > 0.6


def test_masks_padding_and_length_law():
    law = {1: 0.25, 3: 0.75}
    task = SLRTask("spiked", 2.0, law, 0.3, 64)
    k, v = make_teacher(task.D, 0)
    ch = sample_chunk(task, k, v, seed=2, index=0, size=4000)
    assert ch.X.dtype == np.float32 and ch.X.shape == (4000, 3, 64) and ch.mask.dtype == bool
    assert (ch.X[~ch.mask] == 0).all()
    assert np.array_equal(ch.mask, np.arange(3)[None] < ch.lengths[:, None])
    assert (ch.eps >= 0).all() and (ch.eps < ch.lengths).all()
    assert set(np.unique(ch.lengths)) == {1, 3}
    assert _mean_ok(ch.lengths == 1, 0.25)[0]


def test_labels_mean_and_variance():
    # y = z*_{ε*} + Δξ: E y = 0, Var y = 1 + Δ² (z* ⊥ the spike since k* ⊥ v*)
    for model, nu in (("spiked", 3.0), ("max", 2.0)):
        task = SLRTask(model, nu, 2, 0.5, 100)
        k, v = make_teacher(task.D, 1)
        ch = sample_chunk(task, k, v, seed=3, index=0, size=20000)
        assert ch.y.dtype == np.float64
        for ok, info in (_mean_ok(ch.y, 0.0), _var_ok(ch.y, 1.25)):
            assert ok, (model, info)
        _, z = _teacher_fields(ch.X, k, v)
        resid = ch.y - z[np.arange(len(z)), ch.eps]
        assert _var_ok(resid, 0.25)[0]


def test_seeds_deterministic_and_chunks_independent():
    task = SLRTask("max", 1.0, 3, 0.1, 50)
    k, v = make_teacher(task.D, 0)
    a = sample_chunk(task, k, v, 7, 0, 500)
    b = sample_chunk(task, k, v, 7, 0, 500)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    c = sample_chunk(task, k, v, 7, 1, 500)
    d = sample_chunk(task, k, v, 8, 0, 500)
    for other in (c, d):
        x, y = a.X.ravel().astype(float), other.X.ravel().astype(float)
        r = np.corrcoef(x, y)[0, 1]
        assert abs(r) < 4 / math.sqrt(x.size), r  # s.e. of a null correlation ≈ 1/√N


def test_store_roundtrip_bit_identical(tmp_path):
    task = SLRTask("max", 2.0, {1: 0.5, 2: 0.5}, 0.2, 40)
    ds = SLRDataset(task, 1000, teacher_seed=3, data_seed=4, chunk_size=300)
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

    attrs = dict(zarr.open_group(str(tmp_path / "d.zarr"), mode="r").attrs)
    for key in ("model", "nu", "L", "delta", "D", "n", "teacher_seed", "data_seed", "chunk_size", "slrpipe_version"):
        assert key in attrs
    assert not list(tmp_path.glob(".tmp-*"))


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="nu"):
        SLRTask("spiked", math.inf, 2, 0.0, 10)
    with pytest.raises(ValueError, match="model"):
        SLRTask("foo", 1.0, 2, 0.0, 10)
    with pytest.raises(ValueError, match="L"):
        SLRTask("max", 1.0, {0: 1.0}, 0.0, 10)
    with pytest.raises(ValueError, match="n"):
        SLRDataset(SLRTask("max", 1.0, 2, 0.0, 10), 0, 0, 0)
    with pytest.raises(ValueError, match="data"):
        SLRDataset.open("/nonexistent/store.zarr")


def test_length_law_text_round_trips():
    from slrpipe.lengths import format_L, parse_L

    for L in (3, {1: 0.5, 2: 0.5}, {1: 1 / 3, 2: 1 / 3, 3: 1 / 3}, {1: 0.2, 3: 0.8}):
        assert parse_L(format_L(L)) == pytest.approx(SLRTask("max", 1.0, L, 0.0, 2).L)
    assert format_L({1: 1 / 3, 2: 1 / 3, 3: 1 / 3}) == "uniform:1,2,3" and format_L(3) == "3"
    with pytest.raises(ValueError, match="L: "):
        parse_L("three")
