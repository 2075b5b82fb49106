"""Finite-D check of the replicon operator (docs/theory.md §11) through the spin-glass susceptibility.

A random field ε g (g ∈ R^{D×2} iid N(0, 1)) added to the ERM objective 𝓛 moves the minimiser by
δW = ε H⁻¹ g (H = ∇²𝓛 at the minimum). In the RS theory the ridge prior answers with V g and the
data feed the change back through the replicon map T, so
    C_ab = (1/D) tr[(H⁻²)_ab]  →  [(I − T)⁻¹ (V²)]_ab   and   (1/D) tr[(H⁻¹)_aa] → V_a
(a, b ∈ {k, v}; the geometric series Σ_n Tⁿ, divergent at ρ(T) = 1: the AT instability). This
script solves the RS point, builds T (``stability``), trains ERM at finite D from the informed
start (float64 L-BFGS), forms H by autodiff and prints both sides. Valid where the prox does not
jump (no ties): the Hessian sees only the pointwise Jacobian.

Usage: python scripts/replicon_vs_hessian.py [--sigma linear --L 1 --nu 1 --lam 0.1 --alpha 2
       --D 400 --seeds 0 1 --n-theory 16384]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from slrpipe.data.sampling import SLRTask, sample_chunk
from slrpipe.data.teacher import make_teacher
from slrpipe.setting import Setting
from slrpipe.theory.replica import ReplicaTask, solve_replica
from slrpipe.theory.replica import stability as S
from slrpipe.theory.replica.fields import draw_fields
from slrpipe.train.erm import minimize, objective

STATE = ("m_k", "q_k", "V_k", "m_v", "q_v", "V_v")


def theory(a):
    f = draw_fields(Setting("spiked", a.nu, a.L, a.delta), a.n_theory, 0, qmc=True)
    r = solve_replica(ReplicaTask(a.sigma, Setting("spiked", a.nu, a.L, a.delta)), a.lam, a.alpha, fields=f)
    x = [r[k] for k in STATE]
    captured = {}
    smooth = S.smooth_operator
    S.smooth_operator = lambda A, al: captured.setdefault("M", smooth(A, al))
    st = S.rs_stability(a.sigma, f, a.alpha, x)
    S.smooth_operator = smooth
    M = captured["M"]
    M = M[np.all(np.isfinite(M), axis=(1, 2))].mean(0)
    V = np.array([r["V_k"], r["V_v"]])
    pred = np.linalg.solve(np.eye(3) - M, np.array([V[0] ** 2, V[1] ** 2, 0.0]))
    return r, st, M, V, pred


def erm_side(a, r, seed):
    task = SLRTask(Setting("spiked", a.nu, a.L, a.delta), a.D)
    ks, vs = make_teacher(a.D, 1000 + seed)
    n = int(round(a.alpha * a.D))
    ch = sample_chunk(task, ks, vs, seed, 0, n)
    with jax.enable_x64(True):
        p0 = {"k": jnp.asarray(ks * r["m_k"]), "v": jnp.asarray(vs * r["m_v"])}
        res = minimize(p0, ch.X.astype(np.float64), ch.mask, ch.y, a.sigma, a.lam, max_iter=3000, tol=1e-10)
        X, mask, y = (jnp.asarray(t) for t in (ch.X.astype(np.float64), ch.mask, ch.y))

        def L_total(theta):  # 𝓛 = n · J
            return n * objective({"k": theta[: a.D], "v": theta[a.D :]}, X, mask, y, a.sigma, a.lam)

        theta = jnp.concatenate([res.params["k"], res.params["v"]])
        g = np.linalg.norm(np.asarray(jax.grad(L_total)(theta)))
        H = np.asarray(jax.hessian(L_total)(theta))
    Hi = np.linalg.inv(H)
    Hi2 = Hi @ Hi
    D = a.D
    blk = lambda A, i, j: np.trace(A[i * D : (i + 1) * D, j * D : (j + 1) * D]) / D
    q = [float(np.dot(np.asarray(res.params[c]), np.asarray(res.params[c])) / D) for c in ("k", "v")]
    return dict(
        grad=g,
        eig_min=float(np.linalg.eigvalsh(H)[0]),
        V=[blk(Hi, 0, 0), blk(Hi, 1, 1)],
        C=[blk(Hi2, 0, 0), blk(Hi2, 1, 1), blk(Hi2, 0, 1)],
        q=q,
    )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sigma", default="linear")
    p.add_argument("--L", type=int, default=1)
    p.add_argument("--nu", type=float, default=1.0)
    p.add_argument("--delta", type=float, default=0.0)
    p.add_argument("--lam", type=float, default=0.1)
    p.add_argument("--alpha", type=float, default=2.0)
    p.add_argument("--D", type=int, default=400)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--n-theory", type=int, default=16384)
    a = p.parse_args(argv)
    t = time.process_time()
    r, st, M, V, pred = theory(a)
    print(
        f"{a.sigma} L={a.L} spiked nu={a.nu:g} lam={a.lam:g} alpha={a.alpha:g}: converged={r['converged']} "
        f"q_k={r['q_k']:.4f} q_v={r['q_v']:.4f} V={V.round(4).tolist()} replicon={st['replicon']:.4f} "
        f"tail={st['replicon_tail_index']:.2f} ties={st['n_ties']} multi={st['prox_multi_fraction']:.4f} "
        f"({time.process_time() - t:.1f} s CPU)"
    )
    print(f"  theory: (1/D)tr H⁻¹ → V = {V.round(4).tolist()}; C = (I − T)⁻¹V² (kk, vv, kv) = {pred.round(4).tolist()}")
    for s in a.seeds:
        t = time.process_time()
        e = erm_side(a, r, s)
        print(
            f"  ERM D={a.D} seed={s}: |∇𝓛|={e['grad']:.1e} λ_min(H)={e['eig_min']:.3g} q={np.round(e['q'], 4).tolist()} "
            f"(1/D)tr H⁻¹ = {np.round(e['V'], 4).tolist()}; C = {np.round(e['C'], 4).tolist()} "
            f"({time.process_time() - t:.1f} s CPU)"
        )


if __name__ == "__main__":
    main()
