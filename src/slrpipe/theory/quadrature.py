"""Weighted point sets for expectations over the teacher key fields χ* of SLR (model.md §2, §4).

A :class:`FieldRule` approximates E[h(ε*, χ*, η)] under the *tilted* law of the L teacher key
fields χ* (plus, optionally, L iid N(0, 1) student noises η) by

    Σ_i weight_i Σ_ℓ eps_prob_{iℓ} h(ℓ, chi_star_i, eta_i),

with ``eps_prob`` the conditional law of the hidden location ε* at each node. Three constructions:

* ``ordered`` (default for L ≤ 3) — "leader + gaps" tensor quadrature. The region where token j
  holds the largest χ* is parametrised by the leader value t = χ*_j (Gauss–Legendre panels
  graded towards t = 0) and the gaps y_ℓ = t − χ*_ℓ ≥ 0 of the other tokens (Gauss–Legendre on panels
  graded geometrically towards y = 0 and y = t, weight φ(t − y − μ_ℓ) included). The integrands
  (softmax of large fields, the max-SLR tilt softmax(νχ*), the ν = ∞ argmax) are steep or
  discontinuous only where two fields meet (y = 0), softplus-type scores where a field crosses 0
  (y = t); the graded panels resolve both, elsewhere the integrands are smooth and the rule
  converges exponentially. By exchangeability only the terms
  "spike token leads" and (L − 1) × "token 2 leads" (spiked) or L × "token 1 leads" (max) are needed.
* ``gh`` — plain tensor Gauss–Hermite over the L fields (a cross-check; slow for steep integrands).
* ``qmc`` (default for L ≥ 4) — randomised quasi-Monte Carlo: scrambled Sobol points mapped by the
  inverse normal CDF, ``n_scrambles`` independent scramblings (the ``group`` of each point) whose
  spread estimates the error. In max-SLR the points are mapped to the exact law of
  (leader, others): t = Φ⁻¹(u₁^{1/L}), χ*_ℓ = Φ⁻¹(u_ℓ Φ(t)), which removes the argmax
  discontinuity at ν = ∞ from the integrand.

Tilts (model.md §2): spiked — ε* = token 0 with χ*_0 ~ N(√ν, 1), others N(0, 1); max — χ* iid
N(0, 1), P(ε* = ℓ | χ*) = softmax(νχ*)_ℓ, the argmax at ν = ∞.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import combinations_with_replacement

import numpy as np
from scipy.special import factorial, ndtri, roots_hermitenorm, roots_legendre

from slrpipe.scores import softmax
from slrpipe.vocabulary import check_length, check_model_nu

METHODS = ("auto", "exact", "quadrature", "ordered", "gh", "qmc")

# Geometric grading of the gap panels next to kinks (resolves layers of width ≥ ~1e-4, i.e.
# m_k, ν ≲ 1e4); the tail ends at Y = max(t − μ, t, 0) + _TAIL: Gaussian mass < φ(9) ≈ 1e-18 beyond.
_GRADE = (1e-3, 1e-2, 1e-1)
_TAIL = 9.0
_MAX_TENSOR_NODES = 30_000_000  # beyond, (χ*, η) rules fall back to QMC (e.g. L = 3 with η)


@dataclass(frozen=True)
class QuadSpec:
    """How expectations over the fields are computed (hashable: rules are cached per spec).

    method: "auto" (the exact-in-L reductions of :mod:`slrpipe.theory.exact_length` where they
    exist, else as "quadrature"), "exact" (those reductions only: an error where none exists),
    "quadrature" (``ordered`` for L ≤ ``max_tensor_L``, else ``qmc``), "ordered", "gh", "qmc".
    n_t: Gauss–Legendre nodes on each outer panel of the leading field (ordered); None = default.
    n_y: Gauss–Legendre nodes per graded gap panel near y = 0 (ordered); None = default for L.
    n_mid, n_tail: Gauss–Legendre nodes on the middle panel of [0, t⁺] and on the tail panel.
    n_gh: nodes per dimension for method "gh".
    n_eta: Gauss–Hermite nodes per token for the student noise η (tensor methods, q_k > m_k²).
    qmc_log2: log2 of the Sobol points per scrambling; n_scrambles: independent scramblings.
    seed: seed of the scramblings (recorded in results).
    exact_level: node counts of the exact reductions × 1.5^exact_level (refinement checks).
    exact_min_L: under "auto", lengths below it use the tensor rule (L ≤ 2: the two agree to
    ~1e-14 and the tensor rule is ~10× faster there); from L = 3 on the exact reductions, except
    for cases marked slow (see :meth:`exact_from`).
    """

    method: str = "auto"
    n_t: int | None = None
    n_y: int | None = None
    n_mid: int | None = None
    n_tail: int | None = None
    n_gh: int = 60
    n_eta: int = 24
    qmc_log2: int = 13
    n_scrambles: int = 8
    seed: int = 0
    max_tensor_L: int = 3
    exact_level: float = 0.0
    exact_min_L: int = 3

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"method: must be one of {', '.join(METHODS)}, got {self.method!r}")
        for name in ("n_gh", "n_eta", "qmc_log2", "n_scrambles"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}: must be ≥ 1, got {getattr(self, name)}")
        if self.n_scrambles < 2 and self.method == "qmc":
            raise ValueError("n_scrambles: must be ≥ 2 for an error estimate")

    @property
    def allows_exact(self) -> bool:
        """Whether the exact-in-L reductions are used where they exist ("auto", "exact")."""
        return self.method in ("auto", "exact")

    def exact_from(self, slow: bool = False) -> float:
        """The smallest length at which the exact reductions (where they exist) are used: 1 under
        "exact", inf where never. ``slow``: a case whose reduction costs more than the tensor rule
        while that rule is exact (L ≤ ``max_tensor_L``): "auto" keeps the tensor rule there
        (docs/theory.md §12, Cost)."""
        if self.method == "exact":
            return 1
        if self.method != "auto":
            return math.inf
        return max(self.exact_min_L, self.max_tensor_L + 1 if slow else 0)

    def resolve(self, L: int) -> str:
        """The concrete field-quadrature method used at length L (where no exact reduction is used)."""
        if self.method not in ("auto", "exact", "quadrature"):
            return self.method
        return "ordered" if L <= self.max_tensor_L else "qmc"

    def coarse(self, L: int) -> QuadSpec:
        """A cheaper spec (≈½ nodes per dimension, ⅛ QMC points, ~0.55× exact-rule nodes: error
        ≲ 1e-6) for locating optimum basins."""
        n_t, n_y, n_mid, n_tail = _ordered_sizes(self, L)
        return replace(
            self,
            n_t=max(4, n_t // 2),
            n_y=max(2, n_y // 2),
            n_mid=max(4, n_mid // 2),
            n_tail=max(6, n_tail // 2),
            n_gh=max(10, self.n_gh // 2),
            qmc_log2=max(6, self.qmc_log2 - 3),
            exact_level=self.exact_level - 1.5,
        )

    def refined(self, L: int) -> QuadSpec:
        """A finer spec of the same method at length L (≈1.5× nodes per dimension, 4× QMC points)."""
        n_t, n_y, n_mid, n_tail = _ordered_sizes(self, L)
        return replace(
            self,
            n_t=int(1.5 * n_t),
            n_y=int(1.5 * n_y) + 1,
            n_mid=int(1.5 * n_mid),
            n_tail=int(1.5 * n_tail),
            n_gh=int(1.5 * self.n_gh),
            n_eta=int(1.5 * self.n_eta),
            qmc_log2=self.qmc_log2 + 2,
            exact_level=self.exact_level + 1,
        )


@dataclass(frozen=True, eq=False)
class FieldRule:
    """Nodes and weights for E over (ε*, χ*, η); see the module docstring.

    chi_star: (N, L) teacher key fields; eps_prob: (N, L) P(ε* = ℓ | node), rows sum to 1;
    weight: (N,) (sum 1 up to truncation); group: (N,) int index of the independent randomisation
    (QMC scrambling; all 0 for tensor rules); eta: (N, L) student noise or None.
    eta_grid (M, L), eta_weight (M,): alternatively, a grid for η in tensor product with every
    node (the N·M expanded nodes are formed block by block, never all at once).
    """

    chi_star: np.ndarray
    eps_prob: np.ndarray
    weight: np.ndarray
    group: np.ndarray
    n_groups: int
    eta: np.ndarray | None
    method: str
    eta_grid: np.ndarray | None = None
    eta_weight: np.ndarray | None = None

    @property
    def L(self) -> int:
        """The sequence length of the rule's fields."""
        return self.chi_star.shape[1]


def _ordered_sizes(spec: QuadSpec, L: int) -> tuple[int, int, int, int]:
    """(n_t, n_y, n_mid, n_tail) for length L; accuracy measured in tests/benchmarks."""
    n_t = spec.n_t or {1: 40, 2: 32, 3: 16}.get(L, 12)
    n_y = spec.n_y or {1: 8, 2: 8, 3: 4}.get(L, 3)
    n_mid = spec.n_mid or {1: 1, 2: 20, 3: 10}.get(L, 8)
    n_tail = spec.n_tail or {1: 1, 2: 30, 3: 16}.get(L, 12)
    return n_t, n_y, n_mid, n_tail


def _gauss_hermite(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Probabilists' Gauss–Hermite: nodes x, weights w with Σ w f(x) ≈ E f(N(0, 1))."""
    x, w = roots_hermitenorm(n)
    return x, w / math.sqrt(2 * math.pi)


def _panel(lo: np.ndarray, hi: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre on [lo, hi] for each row (lo, hi: (n_t,)); zero-width panels get zero weight."""
    x, w = roots_legendre(n)
    half = (hi - lo)[:, None] / 2
    return lo[:, None] + half * (x + 1), half * w


def _gap_nodes(t: np.ndarray, mu: float, n_y: int, n_mid: int, n_tail: int) -> tuple[np.ndarray, np.ndarray]:
    """Gap nodes y ≥ 0 and weights φ(t − y − mu) dy for each leader value t: shapes (n_t, K).

    Panel boundaries sit where integrands have kinks or steep layers: y = 0 (a field meets the
    leader) and y = t⁺ (the field crosses 0, e.g. softplus at large m_k), each graded
    geometrically (_GRADE) on both sides; [0, t⁺] is empty when t ≤ 0.
    """
    tp = np.maximum(t, 0.0)
    Y = np.maximum(np.maximum(t - mu, tp), 0.0) + _TAIL
    z = np.zeros_like(t)
    half = tp / 2
    # [0, t⁺]: graded towards both ends, middle panel; boundaries clipped so they stay ordered
    b = [z] + [np.minimum(g, half) for g in _GRADE] + [np.maximum(tp - g, half) for g in _GRADE[::-1]] + [tp]
    counts = [n_y] * len(_GRADE) + [n_mid] + [n_y] * len(_GRADE)
    # [t⁺, Y]: graded away from t⁺, then the tail
    b += [tp + g for g in _GRADE[1:]] + [tp + 1.0, Y]
    counts += [n_y] * (len(_GRADE) - 1) + [2 * n_y, n_tail]  # [t⁺+0.1, t⁺+1] is wide: 2 n_y
    ys, ws = zip(*(_panel(lo, hi, n) for lo, hi, n in zip(b[:-1], b[1:], counts)))
    y, w = np.concatenate(ys, axis=1), np.concatenate(ws, axis=1)
    return y, w * np.exp(-0.5 * (t[:, None] - y - mu) ** 2) / math.sqrt(2 * math.pi)


def _leader_nodes(mu: float, n_t: int, n_y: int) -> tuple[np.ndarray, np.ndarray]:
    """Leader values t and weights φ(t − mu) dt: Gauss–Legendre on [mu − 9.5, mu + 9.5] split at
    t = 0 and graded towards it (scores like softplus_norm at large m_k turn on when the leading
    field crosses 0, a kink in t); n_t nodes on the two outer panels, n_y on the graded ones."""
    lo, hi = mu - 9.5, mu + 9.5
    inner = sorted({-1.0, 1.0, 0.0, *_GRADE, *(-g for g in _GRADE)})
    b = np.clip([lo, *inner, hi], lo, hi)
    counts = [n_t, 2 * n_y] + [n_y] * (len(inner) - 3) + [2 * n_y, n_t]  # [0.1, 1] panels: 2 n_y
    ts, ws = zip(*(_panel(np.array([a]), np.array([c]), n) for a, c, n in zip(b[:-1], b[1:], counts)))
    t, w = np.concatenate(ts, axis=1)[0], np.concatenate(ws, axis=1)[0]
    return t, w * np.exp(-0.5 * (t - mu) ** 2) / math.sqrt(2 * math.pi)


def _sorted_tuples(K: int, r: int) -> tuple[np.ndarray, np.ndarray]:
    """Non-decreasing index tuples (nc, r) over range(K) and their multiplicities r!/Π(run length)!."""
    C = np.array(list(combinations_with_replacement(range(K), r)), dtype=np.int64).reshape(-1, r)
    same = (C[:, :, None] == C[:, None, :]).sum(axis=2)  # run length of each entry's value
    mult = math.factorial(r) / np.prod(factorial(same) ** (1.0 / same), axis=1)
    return C, np.rint(mult)


def _leader_term(mu: np.ndarray, j: int, n_t: int, n_y: int, n_mid: int, n_tail: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes (N, L) and weights (N,) for the region {token j holds the largest χ*}, χ*_ℓ ~ N(mu_ℓ, 1).

    Non-leading tokens with equal means are exchangeable (every integrand is symmetric under
    joint permutations of tokens with the same law), so only sorted gap tuples are kept, weighted
    by their multiplicity: K(K+1)/2 instead of K² nodes for two such tokens.
    """
    L = mu.size
    t, wt = _leader_nodes(float(mu[j]), n_t, n_y)
    keep = wt > 0
    t, wt = t[keep], wt[keep]
    groups: dict[float, list[int]] = {}
    for ell in range(L):
        if ell != j:
            groups.setdefault(float(mu[ell]), []).append(ell)
    chi = np.full((t.size, 1, L), np.nan)
    chi[:, 0, j] = t
    w = wt[:, None]
    for mu_g, toks in groups.items():
        y, wy = _gap_nodes(t, mu_g, n_y, n_mid, n_tail)  # (n_t, K)
        C, mult = _sorted_tuples(y.shape[1], len(toks))
        yc = y[:, C]  # (n_t, nc, r)
        wc = np.prod(wy[:, C], axis=2) * mult
        M, nc = chi.shape[1], C.shape[0]
        chi = np.repeat(chi, nc, axis=1)  # (n_t, M·nc, L): old index outer, new inner
        chi[:, :, toks] = np.tile(t[:, None, None] - yc, (1, M, 1))
        w = (w[:, :, None] * wc[:, None, :]).reshape(t.size, -1)
    return chi.reshape(-1, L), w.reshape(-1)


def _tilt(model: str, nu: float, chi_star: np.ndarray) -> np.ndarray:
    """P(ε* = ℓ | χ*): spiked — token 0; max — softmax(νχ*), the argmax at ν = ∞."""
    N, L = chi_star.shape
    if model == "spiked":
        p = np.zeros((N, L))
        p[:, 0] = 1.0
        return p
    if math.isinf(nu):
        return np.eye(L)[np.argmax(chi_star, axis=1)]
    return softmax(nu * chi_star)


def _ordered_rule(model: str, nu: float, L: int, spec: QuadSpec) -> FieldRule:
    n_t, n_y, n_mid, n_tail = _ordered_sizes(spec, L)
    if model == "spiked":
        mu = np.zeros(L)
        mu[0] = math.sqrt(nu)
        terms = [(0, 1.0)] + ([(1, L - 1.0)] if L > 1 else [])
    else:
        mu = np.zeros(L)
        terms = [(0, float(L))]  # exchangeable: L × (token 0 leads)
    chis, ws = [], []
    for j, mult in terms:
        c, w = _leader_term(mu, j, n_t, n_y, n_mid, n_tail)
        chis.append(c)
        ws.append(mult * w)
    chi = np.concatenate(chis)
    w = np.concatenate(ws)
    keep = w > 0  # drop empty panels and underflowed nodes (no contribution)
    chi, w = chi[keep], w[keep] / w[keep].sum()  # exact for constants (truncation error ~1e-9 at L = 3)
    return FieldRule(chi, _tilt(model, nu, chi), w, np.zeros(w.size, dtype=np.int64), 1, None, "ordered")


def _gh_rule(model: str, nu: float, L: int, spec: QuadSpec) -> FieldRule:
    x, wx = _gauss_hermite(spec.n_gh)
    grids = np.meshgrid(*([x] * L), indexing="ij")
    chi = np.stack([g.reshape(-1) for g in grids], axis=1)
    w = np.ones(chi.shape[0])
    for g in np.meshgrid(*([wx] * L), indexing="ij"):
        w = w * g.reshape(-1)
    if model == "spiked":
        chi[:, 0] += math.sqrt(nu)
    w = w / w.sum()
    return FieldRule(chi, _tilt(model, nu, chi), w, np.zeros(w.size, dtype=np.int64), 1, None, "gh")


def _qmc_rule(model: str, nu: float, L: int, spec: QuadSpec, with_eta: bool) -> FieldRule:
    from scipy.stats import qmc  # here: importing scipy.stats costs ~0.6 s, the tensor rules never need it

    d = 2 * L if with_eta else L
    n = 2**spec.qmc_log2
    us = []
    for ss in np.random.SeedSequence(spec.seed).spawn(spec.n_scrambles):
        u = qmc.Sobol(d, scramble=True, seed=np.random.default_rng(ss)).random_base2(spec.qmc_log2)
        us.append(u)
    u = np.clip(np.concatenate(us), 1e-16, 1 - 1e-16)
    group = np.repeat(np.arange(spec.n_scrambles), n)
    if model == "spiked":
        chi = ndtri(u[:, :L])
        chi[:, 0] += math.sqrt(nu)
    else:
        # exact law of (leader, others): P(max ≤ t) = Φ(t)^L, others iid N(0,1) truncated to < t
        one_minus_v = -np.expm1(np.log(u[:, 0]) / L)  # 1 − Φ(t), accurate near 1
        t = -ndtri(one_minus_v)
        v = 1.0 - one_minus_v
        chi = np.empty((u.shape[0], L))
        chi[:, 0] = t
        chi[:, 1:] = np.minimum(ndtri(u[:, 1:L] * v[:, None]), t[:, None])
    eta = ndtri(u[:, L:]) if with_eta else None
    w = np.full(u.shape[0], 1.0 / u.shape[0])
    return FieldRule(chi, _tilt(model, nu, chi), w, group, spec.n_scrambles, eta, "qmc")


def _with_eta(rule: FieldRule, n_eta: int) -> FieldRule:
    """Attach a Gauss–Hermite tensor grid for the L student noises η (expanded lazily, per block)."""
    L = rule.L
    x, wx = _gauss_hermite(n_eta)
    eta = np.stack([g.reshape(-1) for g in np.meshgrid(*([x] * L), indexing="ij")], axis=1)
    we = np.ones(eta.shape[0])
    for g in np.meshgrid(*([wx] * L), indexing="ij"):
        we = we * g.reshape(-1)
    return replace(rule, eta_grid=eta, eta_weight=we, method=rule.method + "+gh_eta")


@lru_cache(maxsize=64)
def field_rule(model: str, nu: float, L: int, spec: QuadSpec = QuadSpec(), with_eta: bool = False) -> FieldRule:
    """The cached rule for (model, ν, L); ``with_eta`` adds the L student-noise dimensions
    (Gauss–Hermite tensor for tensor methods, or QMC when that exceeds 3·10⁷ nodes, e.g. L = 3).

    Raises:
        ValueError: unknown model, ν < 0, ν = ∞ for spiked, L < 1.
    """
    check_model_nu(model, nu)
    check_length(L)
    method = spec.resolve(L)
    if method == "qmc":
        rule = _qmc_rule(model, nu, L, spec, with_eta)
    else:
        rule = (_ordered_rule if method == "ordered" else _gh_rule)(model, nu, L, spec)
        if with_eta and rule.weight.size * spec.n_eta**L > _MAX_TENSOR_NODES:
            rule = _qmc_rule(model, nu, L, spec, True)  # the 2L-dim tensor would be too slow
        elif with_eta:
            rule = _with_eta(rule, spec.n_eta)
    for a in (rule.chi_star, rule.eps_prob, rule.weight, rule.group, rule.eta, rule.eta_grid, rule.eta_weight):
        if a is not None:
            a.setflags(write=False)
    return rule
