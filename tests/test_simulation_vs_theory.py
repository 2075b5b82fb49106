"""Simulation = theory (model.md §4): the risk of a predictor with prescribed overlaps, measured on
explicit data (D = 200, 10⁵ test sequences streamed chunk by chunk through the ``Attention``
code path), equals the population formula ``risk`` on the manifold and ``risk_gram`` off it.

For fixed (k, v) the per-token fields (χ*, z*, χ, z) are exactly Gaussian with covariance the Gram
matrix of [k*, v*, k, v]/D at any D ≥ 4 (the teacher is exactly orthonormal up to √D, the
predictor is built on exact Gram values; the spike / tilt acts on χ* only), so the only
discrepancy is Monte Carlo, whose error depends on the number of test sequences and not on D (D
sets only the cost of drawing them): tolerance 4 standard errors of the mean squared error (plus
the theory's quadrature error, ≤ 1e-4 as measured by the theory module, negligible against
s.e. ≈ 3e-3).
"""

import math
from functools import partial

import jax
import numpy as np
import pytest

from slrpipe.data import SLRDataset, SLRTask
from slrpipe.models import attention_apply
from slrpipe.setting import Setting
from slrpipe.vocabulary import SIGMAS

population = pytest.importorskip("slrpipe.theory.population")

D, N_TEST, CHUNK = 200, 100_000, 10_000

#: (m_k, q_k, m_v, q_v, c) per σ: generic points (not the optima), q > m² so the noise directions matter
POINTS = {
    "softmax": (1.2, 1.8, 0.8, 0.9, 0.0),
    "linear": (0.5, 0.4, 0.3, 0.2, 0.0),
    "erf": (0.7, 0.8, 0.4, 0.3, 0.4),
    "softplus_norm": (1.5, 2.5, 0.9, 1.0, 0.0),
}
#: an off-manifold Gram matrix of (k*, v*, k, v)/D: cross overlaps k·v*/D, v·k*/D, k·v/D ≠ 0
G_OFF = np.array([[1.0, 0.0, 1.0, -0.4], [0.0, 1.0, 0.5, 0.7], [1.0, 0.5, 2.0, -0.2], [-0.4, 0.7, -0.2, 1.0]])
TASKS = {
    "spiked": SLRTask(Setting("spiked", 1.0, 2, 0.0), D),
    "max": SLRTask(Setting("max", 2.0, {1: 0.3, 2: 0.3, 3: 0.4}, 0.2), D),
}


def quad(task):
    """The theory's default rule for spiked L = 2; scrambled Sobol (8 × 2¹⁵ points, error ~1e-5) for
    the variable-length max case, where the default tensor rule over (χ*, η) at L = 3 needs a
    ~30 GB grid when q_k > m_k² (reported to the theory module's owner)."""
    from slrpipe.theory.quadrature import QuadSpec

    return None if task.model == "spiked" else QuadSpec(method="qmc", qmc_log2=15)


def gram_on_manifold(m_k, q_k, m_v, q_v):
    G = np.eye(4)
    G[0, 2] = G[2, 0] = m_k
    G[1, 3] = G[3, 1] = m_v
    G[2, 2], G[3, 3] = q_k, q_v
    return G


def predictor_from_gram(k_star, v_star, G, seed=0):
    """(k, v) with [k*, v*, k, v]ᵀ[k*, v*, k, v]/D = G exactly: W = √D E R, E orthonormal with
    e1 = k*/√D, e2 = v*/√D and two random orthogonal noise directions, R the Cholesky factor of G."""
    rng = np.random.default_rng(seed)
    E, _ = np.linalg.qr(np.column_stack([k_star, v_star, rng.standard_normal((D, 2))]))
    E *= np.sign(np.diag(E.T @ np.column_stack([k_star, v_star, np.ones((D, 2))])))  # e1 ∥ +k*, e2 ∥ +v*
    R = np.linalg.cholesky(G).T
    W = math.sqrt(D) * E @ R
    np.testing.assert_allclose(W[:, 0], k_star, atol=1e-9)
    np.testing.assert_allclose(W[:, 1], v_star, atol=1e-9)
    return W[:, 2], W[:, 3]


@pytest.fixture(scope="module", params=list(TASKS))
def measured(request):
    """Squared-error means and s.e. of every predictor on one streamed 10⁵-sequence test set."""
    task = TASKS[request.param]
    ds = SLRDataset(task, N_TEST, teacher_seed=11, data_seed=12, chunk_size=CHUNK)
    k_star, v_star = ds.teacher
    preds = {}
    for sigma, (m_k, q_k, m_v, q_v, c) in POINTS.items():
        preds[sigma] = (gram_on_manifold(m_k, q_k, m_v, q_v), c)
    for sigma in ("softmax", "linear"):
        preds[f"{sigma}_off"] = (G_OFF, 0.0)
    params = {}
    for name, (G, c) in preds.items():
        k, v = predictor_from_gram(k_star, v_star, G)
        params[name] = {"k": np.float32(k), "v": np.float32(v), "c": np.float32(c)}
    fns = {name: jax.jit(partial(attention_apply, p, sigma=name.removesuffix("_off"))) for name, p in params.items()}
    s1 = {name: 0.0 for name in fns}
    s2 = dict(s1)
    for ch in ds.chunks():
        for name, fn in fns.items():
            sq = (ch.y - np.asarray(fn(ch.X, ch.mask), np.float64)) ** 2
            s1[name] += sq.sum()
            s2[name] += (sq**2).sum()
    out = {}
    for name in fns:
        mean = s1[name] / N_TEST
        out[name] = (mean, math.sqrt((s2[name] / N_TEST - mean**2) / (N_TEST - 1)))
    return task, preds, out


@pytest.mark.parametrize("sigma", SIGMAS)
def test_risk_on_manifold(measured, sigma):
    task, preds, out = measured
    m_k, q_k, m_v, q_v, c = POINTS[sigma]
    theory = population.risk(sigma, task.setting, (m_k, q_k, m_v, q_v), c=c, quad=quad(task))
    mean, se = out[sigma]
    assert abs(mean - theory) < 4 * se, (task.model, sigma, mean, se, theory)
    assert se < 0.01  # the test has power: 4 s.e. ≪ the spread of risks between σ


@pytest.mark.parametrize("sigma", ["softmax", "linear"])
def test_risk_off_manifold(measured, sigma):
    task, preds, out = measured
    theory = population.risk_gram(sigma, task.setting, G_OFF, quad=quad(task))
    mean, se = out[f"{sigma}_off"]
    assert abs(mean - theory) < 4 * se, (task.model, sigma, mean, se, theory)
    # the cross overlaps matter: the on-manifold formula with the same diagonal overlaps is far off
    on = population.risk(
        sigma,
        task.setting,
        (G_OFF[0, 2], G_OFF[2, 2], G_OFF[1, 3], G_OFF[3, 3]),
        quad=quad(task),
    )
    assert abs(on - theory) > 8 * se
