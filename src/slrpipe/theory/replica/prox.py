"""Per-sample proximal point of the SLR square loss over the 2L local fields, and its Jacobian.

For each sample, given the Gaussian centres ω = (ω_χ, ω_z) ∈ R^{L×2}, the label y and the
diagonal V = diag(V_k, V_v), the proximal point minimises
    φ(χ, z) = |χ − ω_χ|²/(2V_k) + |z − ω_z|²/(2V_v) + ½ (y − σ(χ)·z)².
For fixed χ, φ is quadratic in z and z is eliminated exactly (docs/theory.md §5):
    z = ω_z + V_v s r / (1 + V_v|s|²),  s = σ(χ),  r = y − s·ω_z,
leaving an L-dimensional non-convex problem in χ, whose global minimum the multi-start Newton
lanes of :mod:`.newton` find. Optionally (``softmin=β``) the statistics of the soft-min envelope
over the distinct local minima found are returned too (docs/theory.md §4–5). The Jacobian of the
prox in (ω, y) comes from implicit differentiation of ∇φ = 0.
This module is the public call: the options (:class:`ProxOptions`), the samples in chunks
(:func:`default_chunk`) and, up to L = 6 on CPU, the chunks in parallel threads
(:func:`prox_threads`).

Everything runs in float64 JAX (``jax.enable_x64``), jit-compiled and vmapped over samples, on
JAX's default device: a GPU when one is present (float64 is supported there; the samples go in
one launch per pass, :func:`default_chunk`; the host sees the lanes twice per pass — after the
first Newton phase, to pick the unconverged lanes, and at the end). Measured on one H100 against
one CPU core, full multi-start pass, L = 3, soft-min: 0.021 s vs 0.76 s (softmax, N = 8192),
0.085 s vs 5.8 s (N = 65536), the same conjugates to 10 digits (docs/theory.md §9).
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from slrpipe.sigmas import get as get_sigma
from slrpipe.theory.replica.linalg import UNROLL_MAX
from slrpipe.theory.replica.newton import (
    MAX_DIRECTIONS,
    SOFT_KEYS,
    Ends,
    Obs,
    batch_finish,
    batch_starts,
    multistart_count,
    run_lanes,
)
from slrpipe.threads import threads_allowed
from slrpipe.vocabulary import REPLICA_SIGMAS

PROX_SIGMAS = REPLICA_SIGMAS


def check_sigma(sigma: str) -> None:
    """Raise ValueError unless σ is registered and the replica solver supports it (``Sigma.replica``;
    the message gives the σ's ``replica_note``, e.g. erf's learned offset c)."""
    declared = get_sigma(sigma)
    if not declared.replica:
        raise ValueError(
            f"sigma: replica theory supports {', '.join(PROX_SIGMAS)}, got {sigma!r} ({declared.replica_note})"
        )


_CHUNK = {"cpu": 4096}
_CHUNK_ACCELERATOR = 1 << 17
_LANE_ELEMENTS = 1 << 24


#: threads over which :func:`prox` spreads its chunks of samples (:func:`slrpipe.threads.threads_allowed`:
#: the workflow's job cores, else the process's CPUs). Each chunk's programs run single-threaded on
#: CPU (small lanes in sequential blocks), so on a 2-core machine two chunks at once take ~0.55×
#: the wall time of one after the other.
prox_threads = threads_allowed


def default_chunk(L: int | None = None) -> int:
    """Samples per jitted prox call on JAX's default backend (``_CHUNK``), at sequence length L
    (None: the cap of short sequences). Always a power of two ≥ 64."""
    c = _CHUNK.get(jax.default_backend(), _CHUNK_ACCELERATOR)
    if L is None:
        return c
    lanes = (1 + MAX_DIRECTIONS + 3) * L * L  # numbers per sample of a Hessian array (3 warm starts)
    while c > 64 and c * lanes > _LANE_ELEMENTS:
        c //= 2
    return c


@dataclass(frozen=True)
class ProxOptions:
    """How :func:`prox` searches: n_steps Newton steps per start; chunk samples per jitted call
    (None: :func:`default_chunk` at the sequence length); multistart (False: the centre and the
    warm starts only); softmin None or β > 0 (the soft-min statistics too); directions, the most
    displaced starts per sample (≥ 1, ``MAX_DIRECTIONS``).

    Raises:
        ValueError: softmin ≤ 0 or directions not an integer ≥ 1.
    """

    n_steps: int = 25
    chunk: int | None = None
    multistart: bool = True
    softmin: float | None = None
    directions: int = MAX_DIRECTIONS

    def __post_init__(self):
        if self.softmin is not None and not self.softmin > 0:
            raise ValueError(f"softmin: must be None or > 0, got {self.softmin}")
        if int(self.directions) != self.directions or self.directions < 1:
            raise ValueError(f"directions: must be an integer ≥ 1, got {self.directions}")


def _check_obs(omega_k, omega_v, y) -> Obs:
    """The observables as numpy arrays, shapes (N, L), (N, L), (N,) checked."""
    omega_k, omega_v, y = np.asarray(omega_k), np.asarray(omega_v), np.asarray(y)
    if omega_k.ndim != 2 or omega_k.shape != omega_v.shape or y.shape != omega_k.shape[:1]:
        raise ValueError(
            f"omega_k, omega_v, y: need shapes (N, L), (N, L), (N,); got {omega_k.shape}, {omega_v.shape}, {y.shape}"
        )
    return Obs(omega_k, omega_v, y)


def _check_warm(warm, omega_k):
    """The warm starts as (N, W, L) (the centres ω_χ as a placeholder where None)."""
    warm = np.asarray(warm) if warm is not None else omega_k
    warm = warm[:, None] if warm.ndim == 2 else warm
    if warm.shape[0] != omega_k.shape[0] or warm.shape[2:] != omega_k.shape[1:]:
        raise ValueError(f"warm: need shape (N, L) or (N, W, L) with (N, L) = {omega_k.shape}, got {warm.shape}")
    return warm


def _prox_chunk(sigma, obs: Obs, warm, V, o: ProxOptions) -> dict:
    """:func:`prox` of one chunk of samples (numpy in and out; ``warm`` None or (n, W, L))."""
    obs = Obs(*(jnp.asarray(a) for a in obs))
    st = batch_starts(obs, None if warm is None else jnp.asarray(warm), V, sigma, bool(o.multistart), int(o.directions))
    n, S, L = st.shape
    # lanes start by start (all samples' centres, then their first displaced start, …): a batch
    # of lanes ends its Newton loop once all of them converged, and the warm starts (the previous
    # pass's minima) converge in a few steps where displaced starts take up to all of them
    rep = lambda arr: np.tile(np.asarray(arr), (S,) + (1,) * (np.ndim(arr) - 1))
    lanes = np.asarray(st).transpose(1, 0, 2).reshape(S * n, L)
    chis, vals, gns = run_lanes(lanes, *map(rep, obs), *V, sigma, int(o.n_steps))
    back = lambda a: np.swapaxes(a.reshape((S, n) + a.shape[1:]), 0, 1)
    width = _finish_width(sigma, L, o) if o.multistart else S
    ends = _pad_ends(back(chis), back(vals), back(gns), width)
    # the hard channel runs the soft-min program too (β = 1, its statistics dropped): one program
    # fewer to compile per σ (~3 s of XLA compilation without a warm persistent cache) for a few
    # ms per pass; the hard outputs do not depend on the soft-min part
    beta = float(o.softmin) if o.softmin is not None else 1.0
    r = batch_finish(Ends(*map(jnp.asarray, ends)), obs, V, beta, sigma)
    if o.softmin is None:
        r = {k: v for k, v in r.items() if k not in SOFT_KEYS}
    return {k: np.asarray(v) for k, v in r.items()} | {"n_starts": np.full(n, S)}


#: most warm starts a solver pass adds per sample (the previous pass's minimum and two runners-up)
_WARM_MAX = 3


def _finish_width(sigma: str, L: int, o: ProxOptions) -> int:
    """End points per sample that :func:`batch_finish` is compiled for on a multi-start pass:
    those of a full pass with ``_WARM_MAX`` warm starts, so that the full passes with and without
    warm starts (10 and 7 end points at softmax L = 3) run one program (~2.5 s of XLA compilation
    per count, σ and process without a warm persistent cache). The cheap passes (4 end points) keep
    their own: they are most passes, and padded to 10 a cheap pass took 25 % longer (0.15 vs
    0.12 s, N = 4096)."""
    return multistart_count(sigma, L, int(o.directions)) + _WARM_MAX


def _pad_ends(chis, vals, gns, width):
    """The (n, S) end points padded to ``width`` per sample with inert ones: ψ = |∇ψ| = +∞ (never
    the minimum, a runner-up or a soft-min term; :func:`.newton._finish` counts only finite ψ), χ a copy
    of the first end point (finite arithmetic). Unchanged where S ≥ width."""
    pad = width - chis.shape[1]
    if pad <= 0:
        return chis, vals, gns
    inf = np.full((chis.shape[0], pad), np.inf)
    return (
        np.concatenate([chis, np.repeat(chis[:, :1], pad, axis=1)], axis=1),
        np.concatenate([vals, inf], axis=1),
        np.concatenate([gns, inf], axis=1),
    )


def prox(sigma, omega_k, omega_v, y, V_k, V_v, *, warm=None, options: ProxOptions | None = None, **flat):
    """Global proximal point of the per-sample SLR loss and its implicit Jacobian, batched.

    Args:
        sigma: score function name (``PROX_SIGMAS``).
        omega_k, omega_v: (N, L) centres ω_χ, ω_z.  y: (N,) labels.
        V_k, V_v: positive scalars (the diagonal of V, docs/theory.md §3).
        warm: optional (N, L) or (N, W, L) extra Newton starts for χ (e.g. the previous
        iteration's prox and runners-up, ``np.stack([chi, chi2, chi3], 1)``).
        options: :class:`ProxOptions` (defaults if None); ``flat``: its fields by name, replacing
        those of ``options``:
        n_steps: Newton steps per start.  chunk: samples per jitted call (bounds memory; None:
        :func:`default_chunk` at this L: 4096 on CPU, all samples up to 2¹⁷ on an accelerator,
        fewer at large L).
        directions: most displaced starts of the multi-start search per sample (≥ 1; the lowest-ψ
        candidates are kept where there are more; ``MAX_DIRECTIONS``, docs/theory.md §5).
        multistart: False = only the centre and the warm starts (cheap refinement between full
        global searches; the solver never declares convergence on such a pass).
        softmin: None (hard global minimum) or β > 0: also return the statistics of the soft-min
        envelope −β⁻¹ log Σ_j exp(−β ψ_j) over the distinct local minima j found (continuous
        in ω where the global minimum jumps; docs/theory.md §5).
    Returns:
        dict of numpy arrays: chi, z (N, L) prox point; chi2, chi3 (N, L) the next best distinct
        local minima found (= chi if none); psi (N,) minimal value = Moreau envelope;
        grad_norm (N,) |∇ψ| at the end point (convergence check); resid (N,) y − f(prox);
        hinv_diag (N, 2L) diagonal of H⁻¹ (χ block then z block); dz_dy (N, L) = ∂z/∂y;
        hess_pd (N,) bool, H positive definite (a strict local minimum);
        n_best (N,) how many starts reached the best value, n_starts (N,) how many were run.
        With softmin: fk, fv (N, L) weighted means of f = (h − ω)/V over the local minima,
        fk2, fv2 (N, L) weighted means of f², loss (N,) weighted ½(y − f(h))², n_min (N,)
        number of distinct minima kept.
    Raises:
        ValueError: unsupported σ, non-positive V or softmin, directions < 1, or mismatched shapes.
        TypeError: an unknown option name.
    """
    check_sigma(sigma)
    if not (V_k > 0 and V_v > 0):
        raise ValueError(f"V_k, V_v: must be > 0, got {V_k}, {V_v}")
    opts = dataclasses.replace(options or ProxOptions(), **flat)
    obs = _check_obs(omega_k, omega_v, y)
    use_warm = warm is not None
    warm = _check_warm(warm, obs.wk)
    N = len(obs.y)
    chunk = min(int(default_chunk(obs.wk.shape[1]) if opts.chunk is None else opts.chunk), N)
    n_pad = -N % chunk
    # pad to whole chunks: one compiled shape per call (repeated compiles of new shapes were seen
    # to hang jax 0.10.2 on CPU); padded rows are copies of row 0 and are dropped
    pad = lambda a: np.concatenate([a, np.repeat(a[:1], n_pad, 0)]) if n_pad else a
    obs, warm = Obs(*map(pad, obs)), pad(warm)
    out = _run_chunks(sigma, obs, warm if use_warm else None, (float(V_k), float(V_v)), opts, chunk)
    return {k: np.concatenate([c[k] for c in out])[:N] for k in out[0]}


def _run_chunks(sigma, obs: Obs, warm, V, opts: ProxOptions, chunk: int) -> list[dict]:
    """:func:`_prox_chunk` of each run of ``chunk`` rows (whole chunks: ``obs`` is padded), over
    :func:`prox_threads` threads (one above L = 6, see below). The chunks are independent, the
    same compiled programs on their own rows: the result does not depend on the number of threads
    (XLA releases the GIL while a program runs)."""

    def run(a):
        sl = slice(a, a + chunk)
        with jax.enable_x64(True):  # a thread-local setting: entered in the thread that runs
            return _prox_chunk(sigma, Obs(*(x[sl] for x in obs)), None if warm is None else warm[sl], V, opts)

    starts = range(0, len(obs.y), chunk)
    # above L = UNROLL_MAX the programs call the library's LAPACK factorisation, and two of them
    # executing at once from two threads hang jax 0.10.2 on CPU (seen at L = 16 and 64: no
    # progress in minutes, every thread idle on a futex; one thread never hangs): one at a time
    workers = min(prox_threads(), len(starts)) if obs.wk.shape[1] <= UNROLL_MAX else 1
    if workers <= 1:
        return [run(a) for a in starts]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(run, starts))
