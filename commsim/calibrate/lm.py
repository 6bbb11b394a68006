"""A small box-constrained Levenberg-Marquardt least-squares solver in numpy.

:func:`levenberg_marquardt` minimises a sum of squared residuals within
lower and upper bounds on every parameter; :func:`commsim.calibrate.fit.fit`
uses it with finite-difference Jacobians. Deterministic, and no SciPy needed.

References
----------
K. Levenberg (1944), "A method for the solution of certain non-linear
problems in least squares"; D. Marquardt (1963), "An algorithm for
least-squares estimation of nonlinear parameters", SIAM J. Appl. Math. 11.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["levenberg_marquardt"]


def levenberg_marquardt(
    residuals: Callable[[np.ndarray], np.ndarray],
    jacobian: Callable[[np.ndarray, np.ndarray], np.ndarray],
    theta: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    max_iterations: int = 100,
    tolerance: float = 1e-10,
) -> tuple[np.ndarray, int]:
    """Minimise ``sum(residuals(theta)**2)`` within the box ``[low, high]``.

    Levenberg-Marquardt with Marquardt's diagonal scaling; each trial step
    is projected onto the box and accepted only if it lowers the cost.

    Returns
    -------
    (theta, iterations)
    """
    r = residuals(theta)
    cost, damping = float(r @ r), 1e-3
    for iteration in range(1, max_iterations + 1):
        J = jacobian(theta, r)
        A, g = J.T @ J, J.T @ r
        scale = np.diag(np.maximum(np.diag(A), 1e-12))
        improved = False
        while damping < 1e12:
            step = np.linalg.solve(A + damping * scale, -g)
            trial = np.clip(theta + step, low, high)
            r_trial = residuals(trial)
            cost_trial = float(r_trial @ r_trial)
            if cost_trial < cost:
                improved = (
                    cost - cost_trial > tolerance * max(cost, 1e-30)
                    and float(np.max(np.abs(trial - theta))) > tolerance
                )
                theta, r, cost = trial, r_trial, cost_trial
                damping = max(damping / 3, 1e-12)
                break
            damping *= 4
        if not improved:
            return theta, iteration
    return theta, max_iterations
