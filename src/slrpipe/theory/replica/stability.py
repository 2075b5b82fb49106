"""Replica-symmetry (de Almeida–Thouless) stability of a zero-temperature RS fixed point.

docs/theory.md §11. At a fixed point (m, q, V on the manifold, fixed ``Fields``) the replicon map
acts on symmetric 2×2 perturbations δQ of the inter-replica overlap:
    T(δQ) = α E Σ_{ℓ,ℓ'} A_{ℓℓ'} δQ A_{ℓℓ'}ᵀ,   A = ∂h^prox/∂ω − I = H⁻¹V⁻¹ − I  (2L × 2L),
(A_{ℓℓ'} the 2×2 block of token ℓ's fields against token ℓ''s centre; the ridge prior contributes
V δQ̂ V, absorbed in A = V ∂f/∂ω). RS is stable iff the spectral radius ρ(T) < 1.
Where the global prox jumps (a non-convex per-sample problem, docs/theory.md §4), ∂h/∂ω has Dirac
masses on the switching surfaces, their square is not integrable and the zero-temperature
replicon is +∞: RS is then unstable. What is computed:
  * ``replicon``: ρ(T) with the pointwise Jacobian at the global prox (the exact replicon where the
    prox does not jump; otherwise the part away from the switching surfaces); its per-sample terms
    can be heavy-tailed (``replicon_tail_index``, Hill; ``replicon_top_share``, the largest
    antithetic pair's share of tr T), and ``replicon_se`` is NaN where the index is ≤ 2;
  * ``replicon_jump_slope``: ρ of the jump part K, with T_β ≈ T + β K for the soft-min channel at
    inverse temperature β (docs/theory.md §11): the strength of the divergence;
  * ``prox_tie_fraction``: fraction of samples whose second-best local minimum is within
    ``tie_tol`` of the global one in ψ; ``prox_multi_fraction``: with any second local minimum;
  * ``vhat_jump_k``, ``vhat_jump_v``: the Dirac masses' first moment −α E[δ(ψ₁ − ψ₂) Σ_ℓ Δf_ℓa²]
    from the same window, to be compared with ``Vhat_*_stein − Vhat_*_jac`` (a consistency check
    of the window estimate; both returned).
``rs_stable`` = replicon < 1 and no switching surface detected (no tie within ``tie_tol``).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from slrpipe.scores import score
from slrpipe.theory.replica.channel import centres, channel
from slrpipe.theory.replica.fields import Fields
from slrpipe.theory.replica.newton import phi, psi  # the per-sample objective, one definition

#: outputs of :func:`rs_stability` that the sweep stores per (λ, α)
STABILITY = (
    "replicon",
    "replicon_se",
    "replicon_tail_index",
    "replicon_top_share",
    "replicon_jump_slope",
    "replicon_jump_slope_se",
    "rs_stable",
    "prox_tie_fraction",
    "prox_multi_fraction",
    "vhat_jump_k",
    "vhat_jump_v",
    "vhat_stein_minus_jac_k",
    "vhat_stein_minus_jac_v",
)
#: default window in ψ for a "tie" of the two best local minima: 1/β of the solver's soft-min
TIE_TOL = 0.01
#: a runner-up minimum counts as distinct (a jump of the prox) when it is farther than this (relative)
#: from the global one: flat minima are located only to ~√(tol/λ_min(H)), and a smaller jump
#: contributes nothing measurable to K
MIN_JUMP = 1e-3
#: fraction of the antithetic pairs (at least 10) in the Hill estimate of the replicon's tail index
TAIL_FRACTION = 0.01
#: ∫ (σ'(u))² du for the logistic σ: the soft-min ramp's squared slope, T_β ≈ T + β K
_RAMP = 1.0 / 6.0
_SYM = np.array([[[1.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]]])


@functools.partial(jax.jit, static_argnames=("sigma",))
def _at_minima(chi, chi2, wk, wv, y, Vk, Vv, sigma):
    """Per sample: H = ∇²φ at the global prox (2L × 2L), z at both minima, ψ at both."""

    def one(c, c2, a, b, e):
        def zf(cc):
            s = score(sigma, cc, xp=jnp)
            return b + Vv * s * (e - s @ b) / (1 + Vv * (s @ s))

        z, z2 = zf(c), zf(c2)
        H = jax.hessian(phi)(jnp.concatenate([c, z]), a, b, e, Vk, Vv, sigma)
        return H, z, z2, psi(c, a, b, e, Vk, Vv, sigma), psi(c2, a, b, e, Vk, Vv, sigma)

    return jax.vmap(one)(chi, chi2, wk, wv, y)


def sym_operator(t: np.ndarray) -> np.ndarray:
    """The map δQ ↦ Σ_cd t[..., a, c, b, d] δQ_cd on symmetric 2×2 matrices, as (..., 3, 3)
    matrices in the coordinates (δQ_kk, δQ_vv, δQ_kv)."""
    cols = np.einsum("...acbd,jcd->...jab", t, _SYM)  # (..., 3 inputs, 2, 2)
    return np.stack([cols[..., 0, 0], cols[..., 1, 1], cols[..., 0, 1]], axis=-1).swapaxes(-1, -2)


def smooth_tensor(A: np.ndarray) -> np.ndarray:
    """Per-sample t[i, a, c, b, d] = Σ_{ℓℓ'} A[i, aℓ, cℓ'] A[i, bℓ, dℓ'] from A (N, 2L, 2L), rows
    and columns ordered (χ_1..χ_L, z_1..z_L)."""
    N, n2, _ = A.shape
    B = A.reshape(N, 2, n2 // 2, 2, n2 // 2)  # [i, a, ℓ, c, ℓ']
    return np.einsum("ialcm,ibldm->iacbd", B, B)


def jump_tensor(dh: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Per-sample t[i, a, c, b, d] = (Σ_ℓ Δh_ℓa Δh_ℓb)(Σ_ℓ' Δf_ℓ'c Δf_ℓ'd), Δf = V⁻¹Δh, from the
    jump Δh (N, 2, L) of the prox between its two best minima (docs/theory.md §11)."""
    df = dh / V[None, :, None]
    return (
        np.einsum("ial,ibl->iab", dh, dh)[:, :, None, :, None] * np.einsum("icl,idl->icd", df, df)[:, None, :, None, :]
    )


def spectral_radius(M: np.ndarray, per_pair: np.ndarray | None = None) -> tuple[float, float]:
    """ρ(M) of a 3×3 operator, and its standard error by the delta method from the per-pair
    contributions ``per_pair`` (P, 3, 3) whose mean is M (dρ = uᵀ dM w / uᵀw with u, w the left and
    right eigenvectors of the dominant eigenvalue); NaN error if per_pair is None."""
    ev, W = np.linalg.eig(M)
    j = int(np.argmax(np.abs(ev)))
    rho = float(np.abs(ev[j]))
    if per_pair is None or per_pair.shape[0] < 2 or rho == 0.0:
        return rho, math.nan
    evl, U = np.linalg.eig(M.T)
    u = U[:, int(np.argmin(np.abs(evl - ev[j])))]
    w = W[:, j]
    g = np.real(np.einsum("a,pab,b->p", u, per_pair, w) / (u @ w))
    return rho, float(g.std(ddof=1) / math.sqrt(g.size))


def tail_index(x: np.ndarray, frac: float = TAIL_FRACTION) -> float:
    """Hill estimate of the index γ of a power-law upper tail P(X > c) ~ c^−γ of positive samples x,
    from the largest k = max(10, frac·n): γ̂ = 1 / mean(log(x_(i)/x_(k+1))), i ≤ k. inf for a tail
    without spread (e.g. constant x); NaN with fewer than 20 positive samples. γ̂ ≤ 2: the variance
    is infinite and a standard error means nothing; γ̂ ≤ 1: not even the mean exists."""
    x = np.sort(x[np.isfinite(x) & (x > 0)])[::-1]
    if x.size < 20:
        return math.nan
    k = min(max(10, int(frac * x.size)), x.size - 1)
    h = float(np.mean(np.log(x[:k] / x[k])))
    return math.inf if h <= 0 else 1.0 / h


def _pair_mean(x: np.ndarray) -> np.ndarray:
    """Average antithetic halves (sample i and i + N/2): (N, ...) → (N/2, ...)."""
    h = x.shape[0] // 2
    return 0.5 * (x[:h] + x[h:])


def _pair_stats(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, per-pair values) of per-sample operators M (N, 3, 3); pairs with a NaN left out."""
    p = _pair_mean(M)
    p = p[np.all(np.isfinite(p), axis=(1, 2))]
    return p.mean(0), p


def smooth_operator(A: np.ndarray, alpha: float) -> np.ndarray:
    """Per-sample contributions (N, 3, 3) to T = α E Σ_{ℓℓ'} A_ℓℓ' δQ A_ℓℓ'ᵀ (coordinates of
    :func:`sym_operator`) from A = ∂h/∂ω − I, shape (N, 2L, 2L) ordered (χ_1..χ_L, z_1..z_L)."""
    return alpha * sym_operator(smooth_tensor(A))


def jump_operator(
    dh: np.ndarray, gap: np.ndarray, V: np.ndarray, alpha: float, tie_tol: float
) -> tuple[np.ndarray, np.ndarray]:
    """Window estimates of the jump terms (docs/theory.md §11), per sample.

    Args:
        dh: (N, 2, L) jump h₂ − h₁ of the prox between its two best minima (columns k, v).
        gap: (N,) ψ₂ − ψ₁ ≥ 0 (inf where there is no second minimum).  V: (2,) = (V_k, V_v).
        alpha: n/D.  tie_tol: window t > 0; E[δ(X) g] ≈ mean(1{gap < t} g)/(2t).
    Returns:
        (K (N, 3, 3): contributions to K = (α/6) E[δ(X) (Σ_ℓ Δh_ℓΔh_ℓᵀ)(Σ_ℓ' Δf_ℓ'ᵀ δQ Δf_ℓ')],
         vj (N, 2): contributions to the V̂ jump −α E[δ(X) Σ_ℓ Δf_ℓa²], a = k, v).
    """
    w = np.where(gap < tie_tol, 1.0 / (2 * tie_tol), 0.0)
    K = _RAMP * alpha * w[:, None, None] * sym_operator(jump_tensor(dh, V))
    vj = -alpha * w[:, None] * ((dh / V[None, :, None]) ** 2).sum(2)
    return K, vj


class _Minima(NamedTuple):
    """The two best local minima of every sample's prox: χ and z at each (N, L), ψ at each (N,),
    and the Hessian H = ∇²φ (N, 2L, 2L) at the global one."""

    chi: np.ndarray
    chi2: np.ndarray
    z: np.ndarray
    z2: np.ndarray
    psi: np.ndarray
    psi2: np.ndarray
    H: np.ndarray


def _minima(sigma, fields: Fields, state, ch) -> _Minima:
    """:class:`_Minima` at ``state`` from the hard channel pass ``ch`` there (its warm starts)."""
    m_k, q_k, V_k, m_v, q_v, V_v = state
    wk, wv, _, _ = centres(fields, m_k, q_k, m_v, q_v)
    chi, chi2 = ch["warm"][:, 0], ch["warm"][:, 1]
    with jax.enable_x64(True):
        H, z, z2, psi, psi2 = (
            np.asarray(a)
            for a in _at_minima(
                jnp.asarray(chi),
                jnp.asarray(chi2),
                jnp.asarray(wk),
                jnp.asarray(wv),
                jnp.asarray(fields.y),
                float(V_k),
                float(V_v),
                sigma,
            )
        )
    return _Minima(chi, chi2, z, z2, psi, psi2, H)


def _replicon(H, Vd, alpha) -> dict:
    """The smooth replicon ρ(T) from the Hessians H (N, 2L, 2L) at V = Vd (2,): replicon,
    replicon_se (NaN where the tail index is ≤ 2), replicon_tail_index, replicon_top_share and
    n_singular."""
    L = H.shape[1] // 2
    # A = H⁻¹ V⁻¹ − I; a singular H (a degenerate global minimum, measure zero) is left out
    vinv = np.repeat(1.0 / Vd, L)
    ok = np.linalg.eigvalsh(H)[:, 0] > 1e-10 * np.max(vinv)
    Hs = np.where(ok[:, None, None], H, np.eye(2 * L))
    A = np.linalg.solve(Hs, np.broadcast_to(np.diag(vinv), H.shape)) - np.eye(2 * L)
    A[~ok] = np.nan
    M, per_pair = _pair_stats(smooth_operator(A, alpha))
    rep, rep_se = spectral_radius(M, per_pair)
    # heavy tails: near cusps of the per-sample problem H is nearly singular (docs/theory.md §11)
    trace = per_pair[:, 0, 0] + per_pair[:, 1, 1]
    gamma = tail_index(trace)
    top_share = float(trace.max() / trace.sum()) if trace.sum() > 0 else 0.0
    if not gamma > 2:
        rep_se = math.nan  # infinite variance: no meaningful standard error
    return dict(
        replicon=rep,
        replicon_se=rep_se,
        replicon_tail_index=gamma,
        replicon_top_share=top_share,
        n_singular=int((~ok).sum()),
    )


def _jumps(mins: _Minima, Vd, alpha, tie_tol) -> dict:
    """The jump part (docs/theory.md §11): the jump between the two best minima and the window
    estimate of E[δ(ψ₁ − ψ₂) g]: the jump slope, the tie and multi-minimum fractions, the V̂ jumps
    (+ ``_se``), n_ties and the tie mask ``tie`` (N,)."""
    chi, chi2 = mins.chi, mins.chi2
    scale = 1.0 + np.max(np.abs(chi), axis=1)
    distinct = np.max(np.abs(chi2 - chi), axis=1) > MIN_JUMP * scale
    gap = np.where(distinct, mins.psi2 - mins.psi, np.inf)
    tie = gap < tie_tol
    dh = np.stack([chi2 - chi, mins.z2 - mins.z], axis=1)  # (N, 2, L)
    Mj, vj = jump_operator(dh, gap, Vd, alpha, tie_tol)
    slope, slope_se = spectral_radius(*_pair_stats(Mj))
    vjp = _pair_mean(vj)
    return dict(
        replicon_jump_slope=slope,
        replicon_jump_slope_se=slope_se,
        prox_tie_fraction=float(tie.mean()),
        prox_multi_fraction=float(distinct.mean()),
        vhat_jump_k=float(vjp[:, 0].mean()),
        vhat_jump_v=float(vjp[:, 1].mean()),
        vhat_jump_k_se=float(vjp[:, 0].std(ddof=1) / math.sqrt(len(vjp))),
        vhat_jump_v_se=float(vjp[:, 1].std(ddof=1) / math.sqrt(len(vjp))),
        tie=tie,
    )


def rs_stability(
    sigma: str, fields: Fields, alpha: float, state, *, tie_tol: float = TIE_TOL, n_steps: int = 25
) -> dict:
    """Replicon of the RS fixed point (m, q, V) and the proxies of the prox jumps (module docstring).

    Args:
        sigma: score name.  fields: the common random numbers of the solve (N samples, antithetic).
        alpha: n/D.  state: the converged order parameters (m_k, q_k, V_k, m_v, q_v, V_v) (any
            sequence in this order; q ≥ m², V > 0).
        tie_tol: window in ψ (absolute) for a tie of the two best local minima (> 0).
        n_steps: Newton steps per prox start (hard global prox, full multi-start search).
    Returns:
        dict with the keys of ``STABILITY`` (floats; rs_stable bool) plus vhat_jump_*_se, n_singular (samples with
        a singular Hessian at the global prox, left out of the replicon), n_ties (samples in the
        window) and tie_tol. Standard errors: over antithetic pairs, iid formula (an overestimate
        for QMC fields); replicon_se by the delta method.
    Raises:
        ValueError: tie_tol ≤ 0, α ≤ 0, invalid order parameters (from :func:`channel`).
    """
    if not tie_tol > 0:
        raise ValueError(f"tie_tol: must be > 0, got {tie_tol}")
    ch = channel(sigma, fields, alpha, state, vhat="stein", n_steps=n_steps, softmin=None)
    mins = _minima(sigma, fields, state, ch)
    Vd = np.array([state[2], state[5]])
    smooth, jumps = _replicon(mins.H, Vd, alpha), _jumps(mins, Vd, alpha, tie_tol)
    tie = jumps.pop("tie")
    return dict(
        replicon=smooth["replicon"],
        replicon_se=smooth["replicon_se"],
        replicon_tail_index=smooth["replicon_tail_index"],
        replicon_top_share=smooth["replicon_top_share"],
        replicon_jump_slope=jumps["replicon_jump_slope"],
        replicon_jump_slope_se=jumps["replicon_jump_slope_se"],
        rs_stable=bool(smooth["replicon"] < 1 and not tie.any()),
        prox_tie_fraction=jumps["prox_tie_fraction"],
        prox_multi_fraction=jumps["prox_multi_fraction"],
        vhat_jump_k=jumps["vhat_jump_k"],
        vhat_jump_v=jumps["vhat_jump_v"],
        vhat_jump_k_se=jumps["vhat_jump_k_se"],
        vhat_jump_v_se=jumps["vhat_jump_v_se"],
        vhat_stein_minus_jac_k=ch["Vhat_k_stein"] - ch["Vhat_k_jac"],
        vhat_stein_minus_jac_v=ch["Vhat_v_stein"] - ch["Vhat_v_jac"],
        n_singular=smooth["n_singular"],
        n_ties=int(tie.sum()),
        tie_tol=float(tie_tol),
    )
