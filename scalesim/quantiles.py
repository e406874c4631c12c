"""Quantiles of the chi-squared and Student t distributions, from ``scipy.special``.

``scipy.stats`` computes them the same way, bit for bit (``chi2._ppf`` is
``2 * gammaincinv(dof / 2, p)``, ``t._ppf`` is ``stdtrit(dof, p)``, scipy 1.17), but importing
``scipy.stats`` costs about half a second of every command that diagnoses; ``scipy.special`` is
loaded by ``scipy.optimize`` anyway (docs/performance.md, "Start-up and small calls").
"""

from __future__ import annotations

from scipy import special


def chi2_quantile(p: float, dof: float) -> float:
    """The p-quantile of a chi-squared distribution of ``dof`` degrees of freedom."""
    return float(2.0 * special.gammaincinv(dof / 2.0, p))


def student_t_quantile(p: float, dof: float) -> float:
    """The p-quantile of Student's t distribution of ``dof`` degrees of freedom."""
    return float(special.stdtrit(dof, p))


# The likelihood-ratio bound of one parameter at 95 % (Wilks): a misfit within this of the least
# is not told apart from it. 3.841...
CHI2_95_ONE_DOF = chi2_quantile(0.95, 1)
