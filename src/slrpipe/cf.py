"""CF metadata of slrpipe's files, defined once: the ``units`` and ``long_name`` of every variable
the result files (netCDF), the data sets and the aggregated store (zarr) hold, and the convention
they follow.

Conventions: CF-1.10 (https://cfconventions.org), the attributes xarray, ncdump and CF tools read:
every numeric variable has ``units`` ("1" for a dimensionless number, per CF §3.1; ``s`` for wall
times), every variable a ``long_name``; string variables (σ, model, init, …) carry a long name only.
The global attributes ``Conventions``, ``history`` and ``date_created`` are set with the provenance
(:func:`slrpipe.provenance.provenance`).

A name is looked up in :data:`LONG_NAMES` (its units in :data:`UNITS`, else "1"); a name the code
derives from another — a prefix such as ``rsb1_`` or ``traj_`` (:data:`PREFIXES`), a suffix such as
``_se`` or ``_ground`` (:data:`SUFFIXES`) — takes the units of the name it derives from and a long
name composed from it, so the store's renamed variables need no entries of their own. This module
imports nothing of slrpipe.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

#: the value of the global ``Conventions`` attribute
CONVENTIONS = "CF-1.10"
#: the CF units of a dimensionless number
DIMENSIONLESS = "1"

#: the units of every variable that is not dimensionless (every other number is "1": the model's
#: inputs, labels, weights and risks are numbers without physical units; docs/model.md)
UNITS = {"wall_time": "s"}

#: the long name of every base variable (coordinates and data variables) of the files
LONG_NAMES = {
    # --- the data law, the run's parameters and the dimensions (coordinates)
    "model": "SLR variant (spiked or max)",
    "sigma": "score function sigma of the estimator",
    "nu": "signal strength nu",
    "nu_var": "signal strength nu (variable-length sweep)",
    "L": "sequence length L (or its law)",
    "L_max": "largest sequence length",
    "delta": "label-noise standard deviation Delta",
    "lam": "ridge penalty lambda",
    "alpha": "sample ratio alpha = n/D",
    "D": "embedding dimension D",
    "n": "number of training sequences",
    "n_test": "number of test sequences",
    "seed": "experiment seed",
    "teacher_seed": "seed of the teacher (k*, v*)",
    "data_seed": "seed of the training data",
    "test_seed": "seed of the test set",
    "init_seed": "seed of the start",
    "init": "initialisation of the start",
    "restart": "index of the random start",
    "optimizer": "optimiser",
    "lr": "step size of the first-order optimiser",
    "dtype": "floating-point precision of training",
    "step": "optimiser step",
    "w": "weight vector (row of the Gram matrix)",
    "w2": "weight vector (column of the Gram matrix)",
    "dim": "embedding coordinate",
    "s": "Parisi parameter s",
    "batch": "batch of outer samples (batch means)",
    "sample": "sequence index",
    "token": "token position",
    # --- ERM: losses, errors, overlaps, weights
    "train_loss": "training objective J = (half squared loss + ridge penalty)/n",
    "train_mse": "training mean squared error",
    "test_error": "test mean squared error",
    "test_error_theory": "population risk at the learned Gram matrix (computed by the training job)",
    "test_error_bayes": "test mean squared error of the Bayes-optimal predictor",
    "test_error_pop": "population risk R(sigma; Gram) at the learned overlaps (docs/model.md section 4)",
    "m_k": "key overlap k.k*/D",
    "q_k": "key norm |k|^2/D",
    "m_v": "value overlap v.v*/D",
    "q_v": "value norm |v|^2/D",
    "k_vstar": "cross overlap k.v*/D",
    "v_kstar": "cross overlap v.k*/D",
    "k_v": "cross overlap k.v/D",
    "c": "learned score offset c (erf)",
    "iterations": "number of iterations",
    "converged": "converged (1) or not (0)",
    "gnorm": "gradient norm |grad L|_2/n at the end",
    "wall_time": "wall-clock time",
    "gram": "Gram matrix of (k*, v*, k, v) over D",
    "k": "learned key vector",
    "v": "learned value vector",
    "loss": "training objective J",
    "dist_informed": "squared distance |W - W_informed|^2/D to the informed start's weights",
    "dist_ground": "squared distance |W - W_ground|^2/D to the ground state's weights",
    "ground_init": "initialisation of the ground state's start",
    "ground_restart": "random start of the ground state (-1: no run finished)",
    "ground_optimizer": "optimiser of the ground state's start",
    # --- population optimum and length sweeps
    "risk": "optimal population risk",
    "risk_err": "quadrature error estimate of risk",
    "risk_var": "optimal population risk, L ~ Uniform{1..var_L_max}, shared (k, v)",
    "nu_target": "nu at which the optimal excess risk R* - Delta^2 equals target_risk",
    # --- replica theory (RS)
    "objective": "minimum training objective per D",
    "V_k": "key response V_k",
    "V_v": "value response V_v",
    "mhat_k": "conjugate mhat_k",
    "qhat_k": "conjugate qhat_k",
    "Vhat_k": "conjugate Vhat_k",
    "mhat_v": "conjugate mhat_v",
    "qhat_v": "conjugate qhat_v",
    "Vhat_v": "conjugate Vhat_v",
    "residual": "fixed-point residual",
    "Vhat_k_jac": "conjugate Vhat_k from the Jacobian of the prox",
    "Vhat_v_jac": "conjugate Vhat_v from the Jacobian of the prox",
    "prox_multi": "fraction of samples whose prox has several local minima",
    "prox_unconverged": "fraction of samples whose prox did not converge",
    "branch": "pass the reported fixed point came from: 0 down (from large alpha), 1 up",
    "key_scale": "key scale c of the cold start at the largest alpha",
    "alpha_reached_down": "alpha nearest this point to which the down pass (from large alpha) followed its branch",
    "alpha_reached_up": "alpha nearest this point to which the up pass (from small alpha) followed its branch",
    "n_branches": "number of distinct fixed points found",
    "test_error_opt_lam": "test error at the best lambda of the grid",
    "lam_opt": "best lambda of the grid",
    "replicon": "replicon eigenvalue (RS stability)",
    "replicon_tail_index": "tail index of the replicon's sample terms",
    "replicon_top_share": "share of the replicon from its largest sample terms",
    "replicon_jump_slope": "slope of the replicon's prox-jump term",
    "rs_stable": "RS fixed point stable (1) or not (0)",
    "prox_tie_fraction": "fraction of samples whose second-best local prox minimum is within tie_tol of the global one",
    "prox_multi_fraction": "fraction of samples whose prox has a second local minimum",
    "vhat_jump_k": "jump part of Vhat_k: first moment of the prox's Dirac masses",
    "vhat_jump_v": "jump part of Vhat_v: first moment of the prox's Dirac masses",
    "vhat_stein_minus_jac_k": "Vhat_k (Stein) minus Vhat_k (Jacobian)",
    "vhat_stein_minus_jac_v": "Vhat_v (Stein) minus Vhat_v (Jacobian)",
    # --- Bayes-optimal state evolution
    "free_entropy": "free entropy Phi",
    "coexistence": "uninformed and informed fixed points differ (1) or not (0)",
    "test_error_uninformed": "test error of the fixed point from the uninformed start",
    "test_error_informed": "test error of the fixed point from the informed start",
    # --- 1RSB
    "phi": "1RSB potential Phi(s)",
    "complexity": "complexity Sigma(s)",
    "energy": "typical-state energy e(s)",
    "dq_k": "key overlap gap dq_k = q1_k - q0_k",
    "dq_v": "value overlap gap dq_v = q1_v - q0_v",
    "q1_k": "within-state key overlap q1_k",
    "q1_v": "within-state value overlap q1_v",
    "ess_median": "median inner effective sample size",
    "dqhat_k": "conjugate dqhat_k",
    "dqhat_v": "conjugate dqhat_v",
    "on_curve": "on the complexity curve Sigma(e): converged, de/ds < 0 and Sigma >= 0 (1) or not (0)",
    "de_ds": "de/ds by finite differences over the converged rows on the branch",
    "refined": "a solve refining s* (1) or a row of the grid or its extension (0)",
    "off_branch": "a row off the dominant branch of Phi(s), unused by the rule (1) or on it (0)",
    "unphysical": "a converged row on the branch with de/ds > 0 (Sigma(e) convex), unused by the rule (1) or not (0)",
    "branch_lost": "the scan left the dominant branch and rows were set off it (1) or not (0)",
    "s_star": "Parisi parameter s* = argmax Phi(s) (NaN: no maximum bracketed)",
    "s_reported": "Parisi parameter of the state reported (s*, else the largest Phi; NaN: not solved)",
    "bracketed": "a maximum of Phi(s) bracketed by rows 2 s.e. below it: s* found (1) or not (0)",
    "lower_bound": "the state reported is the largest Phi, a lower bound of the ground-state energy (1) or s* (0)",
    "checked": "Sigma(s*) ~ 0 by the closed form and by s^2 dPhi/ds, and de/ds < 0 at s* (1) or not (0)",
    "star_sigma": "closed-form complexity Sigma at s*",
    "star_sigma_fd": "complexity s^2 dPhi/ds at s* from a parabola of Phi",
    "star_de_ds": "de/ds at s* from its neighbouring rows",
    "sigma_chord": "complexity from the difference of Phi to the next row, s_i s_j (Phi_j - Phi_i)/(s_j - s_i)",
    "sigma_chord_z": "closed-form complexity minus sigma_chord over the interval, in standard errors of the difference",
    "sigma_chi2": "sum of sigma_chord_z squared over the scan's intervals",
    "sigma_dof": "number of intervals in sigma_chi2",
    "sigma_scale": "factor on the standard errors of Sigma: sqrt(sigma_chi2/sigma_dof), at least 1",
    "n0x2_rs_objective": "RS objective on 2 N0 outer samples",
    "n0x2_rs_test_error": "RS test error on 2 N0 outer samples",
    "n0x2_objective": "1RSB objective of the state reported on 2 N0 outer samples",
    "n0x2_test_error": "1RSB test error of the state reported on 2 N0 outer samples",
    "n0x2_converged": "the 1RSB solve on 2 N0 outer samples converged (1) or not (0)",
    "distance": "predicted squared distance (1/D)|W_a - W_b|^2 between two minima",
    "batches_converged": "number of batches whose 1RSB state converged",
    # --- the data set (slrpipe generate)
    "X": "token embeddings",
    "mask": "token present (1) or padding (0)",
    "y": "label",
    "eps": "hidden location epsilon* (0-based token index)",
    "lengths": "sequence length",
    "k_star": "teacher key vector k*",
    "v_star": "teacher value vector v*",
}

#: what a long name cannot say: the variable's CF ``comment`` (parameters it names are global attributes)
COMMENTS = {
    "m_k": "inf: the infimum is reached as m_k -> inf",
    "risk_err": "change of risk under ~1.5x refinement (tensor rules) or standard error over independent "
    "Sobol scramblings (qmc); NaN for bayes",
    "key_scale": "1: the default init, 0: the alpha -> 0 start V_a = 1/lambda, -1 / -2: the population "
    "optimum, own / balanced proportions",
    "alpha_reached_down": "alpha itself where the pass converged here, the branch's last converged alpha where "
    "it did not or where the pass stopped at a fold before this point, NaN where it converged nowhere before",
    "alpha_reached_up": "alpha itself where the pass converged here, the branch's last converged alpha where "
    "it did not or where the pass stopped at a fold before this point, NaN where it converged nowhere before",
    "test_error_mc_sd": "over mc_seeds draws of the common random numbers; NaN (not measured) where mc_seeds = 1",
    "test_error_seed_mean": "MC error test_error_mc_sd/sqrt(mc_seeds); NaN (not measured) where mc_seeds = 1",
    "test_error_pop": "computed by the aggregation, so that an edit of the theory does not rerun training",
}

#: {prefix: long-name template} of names derived by a prefix (the longest matching prefix first)
PREFIXES = {
    "rsb1_": "1RSB: {}",
    "scan_": "{} along the s scan",
    "rs_": "RS on the 1RSB samples: {}",
    "bayes_optimal_": "Bayes-optimal: {}",
    "traj_": "{} along the trajectory",
    "batch_": "per batch: {}",
}
#: {suffix: long-name template} of names derived by a suffix
SUFFIXES = {
    "_se": "standard error of {}",
    "_alt": "{} at the other fixed point",
    "_ground": "{} of the ground state (lowest training objective over the starts)",
    "_batch_se": "batch-means standard error of {}",
    "_batch_bias": "batch-means bias estimate of {}",
    "_n1_bias": "finite-N1 bias of {}",
    "_mc_sd": "seed-to-seed standard deviation of {}",
    "_seed_mean": "mean over the common-random-number seeds of {}",
}


def lookup(name: str) -> tuple[str, str] | None:
    """(units, long_name) of variable ``name``, or None where the name is neither in
    :data:`LONG_NAMES` nor derived from one by :data:`PREFIXES` / :data:`SUFFIXES`."""
    if name in LONG_NAMES:
        return UNITS.get(name, DIMENSIONLESS), LONG_NAMES[name]
    for affixes, strip in ((PREFIXES, lambda a: name[len(a) :]), (SUFFIXES, lambda a: name[: -len(a)])):
        for affix in sorted(affixes, key=len, reverse=True):
            if (name.startswith(affix) if affixes is PREFIXES else name.endswith(affix)) and len(name) > len(affix):
                base = lookup(strip(affix))
                if base is not None:
                    return base[0], affixes[affix].format(base[1])
    return None


def variable_attrs(name: str, dtype) -> dict[str, str]:
    """The CF attributes of a variable ``name`` of numpy ``dtype``: {units, long_name} for a number
    (booleans as 0/1, units "1"), {long_name} for text, and ``comment`` where :data:`COMMENTS` has one; {} for a name :func:`lookup` does not know
    (logged as a warning, so a new variable without an entry shows up without failing a job)."""
    found = lookup(name)
    if found is None:
        log.warning("no CF units/long_name for variable %r (add it to slrpipe.cf.LONG_NAMES)", name)
        return {}
    units, long_name = found
    out = {"long_name": long_name} if dtype.kind in "USOT" else {"units": units, "long_name": long_name}
    return out | ({"comment": COMMENTS[name]} if name in COMMENTS else {})


def describe(ds):
    """A copy of the ``xarray.Dataset`` ``ds`` (or each node of an ``xarray.DataTree``) whose every
    variable, coordinates included, carries its CF attributes (:func:`variable_attrs`), replacing
    any it had under those names; other attributes and all values are unchanged."""
    import xarray as xr

    if isinstance(ds, xr.DataTree):
        return ds.map_over_datasets(describe)
    ds = ds.copy()
    for name, var in ds.variables.items():
        var.attrs.update(variable_attrs(str(name), var.dtype))
    return ds
