"""scripts/accuracy_stats.py - the statistics of scripts/accuracy-report,
in the standard library only (Debian's python3-scipy is not a dependency):
Student's t distribution (CDF through the regularised incomplete beta
function, quantiles by bisection), a sample's mean, standard deviation and
95% confidence interval, Welch's unequal-variance t-test and the paired
t-test.

The paired test is the one for the experiment's design: a seed fixes a
run's initialisation and the order of its first batches in every cell,
so two cells' runs of one seed are a pair, and the test of their
per-seed differences removes the seed's share of the variance (a lucky
initialisation lifts both cells of a pair).  It needs the same seeds in
both cells; Welch's test does not, and is kept as the unpaired check.

    /usr/bin/python3 scripts/accuracy_stats.py --self-test

checks them against known values (scipy.stats', a published Welch
example and R's paired t-test of the sleep data).
"""
import math
import sys


def _betacf(a, b, x):
    """The continued fraction of the incomplete beta function (modified
    Lentz), as in Numerical Recipes' betacf."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1 + aa * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1 + aa * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1) < eps:
            return h
    raise ArithmeticError("incomplete beta: no convergence for a=%g b=%g x=%g" % (a, b, x))


def betainc(a, b, x):
    """The regularised incomplete beta function I_x(a, b)."""
    if not 0 <= x <= 1:
        raise ValueError("x = %g is not in [0, 1]" % x)
    if x in (0, 1):
        return float(x)
    ln = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
          + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return math.exp(ln) * _betacf(a, b, x) / a
    return 1 - math.exp(ln) * _betacf(b, a, 1 - x) / b


def t_cdf(t, df):
    """P(T <= t) for Student's t with df (> 0, not necessarily integer)
    degrees of freedom."""
    if df <= 0:
        raise ValueError("degrees of freedom %g <= 0" % df)
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    tail = 0.5 * betainc(df / 2, 0.5, df / (df + t * t))
    return 1 - tail if t > 0 else tail


def t_ppf(p, df):
    """The p quantile of Student's t (bisection on t_cdf)."""
    if not 0 < p < 1:
        raise ValueError("p = %g is not in (0, 1)" % p)
    lo, hi = -1.0, 1.0
    while t_cdf(lo, df) > p:
        lo *= 2
    while t_cdf(hi, df) < p:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1, abs(mid)):
            break
    return (lo + hi) / 2


def summary(xs, level=0.95):
    """(n, mean, sample standard deviation, CI low, CI high): the
    confidence interval of the mean from Student's t (None with n < 2)."""
    n = len(xs)
    mean = sum(xs) / n
    if n < 2:
        return n, mean, None, None, None
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t_ppf(0.5 + level / 2, n - 1) * sd / math.sqrt(n)
    return n, mean, sd, mean - half, mean + half


def welch(a, b):
    """Welch's t-test of mean(a) == mean(b): (t, df, two-sided p).  With
    both variances zero: t and p are nan (no test possible) unless the
    means differ (t = +-inf, p = 0)."""
    na, nb = len(a), len(b)
    if na < 2 or nb < 2:
        raise ValueError("Welch's t-test needs 2 or more values in each sample")
    ma, mb = sum(a) / na, sum(b) / nb
    va = sum((x - ma) ** 2 for x in a) / (na - 1)
    vb = sum((x - mb) ** 2 for x in b) / (nb - 1)
    se2 = va / na + vb / nb
    if se2 == 0:
        if ma == mb:
            return float("nan"), float("nan"), float("nan")
        return math.copysign(float("inf"), ma - mb), float("nan"), 0.0
    t = (ma - mb) / math.sqrt(se2)
    df = se2 ** 2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1))
    return t, df, 2 * (1 - t_cdf(abs(t), df))


def paired(a, b):
    """The paired t-test of mean(a - b) == 0 for a[i], b[i] measured on
    the same unit (here: the same seed): (mean difference, CI low, CI
    high, t, df, two-sided p), the 95% confidence interval of the mean
    difference from Student's t with n - 1 degrees of freedom.  With all
    differences equal: t and p are nan if they are 0, else t = +-inf and
    p = 0."""
    if len(a) != len(b):
        raise ValueError("the paired t-test needs samples of one length, not %d and %d"
                         % (len(a), len(b)))
    n, mean, sd, lo, hi = summary([x - y for x, y in zip(a, b)])
    if n < 2:
        raise ValueError("the paired t-test needs 2 or more pairs")
    if sd == 0:
        if mean == 0:
            return mean, lo, hi, float("nan"), n - 1, float("nan")
        return mean, lo, hi, math.copysign(float("inf"), mean), n - 1, 0.0
    t = mean / (sd / math.sqrt(n))
    return mean, lo, hi, t, n - 1, 2 * (1 - t_cdf(abs(t), n - 1))


# ---- known values ----------------------------------------------------------

# Known values, from scipy.stats 1.10.1 (Debian 12's python3-scipy):
# t.cdf, t.ppf and ttest_ind(equal_var=False); df = 1 is also Cauchy's
# 1/2 + atan(t)/pi, and the quantiles agree with printed t tables.
# (t, df, P(T <= t))
CDF = [(0.0, 3, 0.5), (1.0, 1, 0.75), (2.0, 5, 0.9490302605850709),
       (-2.0, 5, 0.05096973941492914), (2.776445105197793, 4, 0.975),
       (1.5, 2.5, 0.876081773456852), (10.0, 30, 0.9999999999771237),
       (0.3, 100, 0.6176000598498482)]
# (p, df, quantile)
PPF = [(0.975, 1, 12.706204736432095), (0.975, 4, 2.7764451051977987),
       (0.975, 10, 2.2281388519649385), (0.995, 8, 3.3553873313333957),
       (0.975, 1000, 1.9623390808264074), (0.05, 6, -1.9431802803927818),
       (0.975, 2.5, 3.5746548420118773)]
# Welch's t-test, example 1 of the Wikipedia article "Welch's t-test"
WELCH_A = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0,
           21.7, 21.4]
WELCH_B = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9,
           20.5, 24.4]
WELCH = (-2.455356398286006, 24.98853, 0.021378001462866985)   # t, df, two-sided p
# The paired t-test: R's sleep data (Cushny and Peebles: extra hours of
# sleep of 10 patients with two drugs); R's t.test(extra ~ group, data =
# sleep, paired = TRUE) prints t = -4.0621, df = 9, p-value = 0.002833,
# 95% CI -2.4598858 -0.7001142, mean difference -1.58; the digits are
# scipy.stats.ttest_rel's and t.ppf's.
SLEEP_1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
SLEEP_2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]
# mean difference, CI low, CI high, t, df, two-sided p
PAIRED = (-1.58, -2.4598857632547286, -0.7001142367452713, -4.062127683382037, 9,
          0.00283289019738427)


def scipy_checks(close):
    """Where scipy is installed (it is not needed), a grid of CDF values
    and Welch tests against it; returns the number of checks."""
    try:
        from scipy import stats
    except ImportError:
        return 0
    n = 0
    for df in (1, 1.5, 2, 3, 4.7, 8, 20, 57.3, 300):
        for t in (-30, -4, -2.1, -0.5, 0.1, 0.9, 1.7, 3.3, 12):
            close("t_cdf(%g, %g) vs scipy" % (t, df), t_cdf(t, df), stats.t.cdf(t, df), 1e-9)
            n += 1
    a, b = [0.81, 0.83, 0.82, 0.80, 0.84], [0.79, 0.80, 0.815, 0.78, 0.805, 0.79]
    r = stats.ttest_ind(a, b, equal_var=False)
    t, _, p = welch(a, b)
    close("welch t vs scipy", t, r.statistic, 1e-9)
    close("welch p vs scipy", p, r.pvalue, 1e-9)
    r = stats.ttest_rel(a[:5], b[:5])
    _, _, _, t, _, p = paired(a[:5], b[:5])
    close("paired t vs scipy", t, r.statistic, 1e-9)
    close("paired p vs scipy", p, r.pvalue, 1e-9)
    return n + 2


def self_test():
    bad = []

    def close(what, got, want, tol):
        if not abs(got - want) <= tol:
            bad.append("%s = %.12g, expected %.12g" % (what, got, want))

    for t, df, p in CDF:
        close("t_cdf(%g, %g)" % (t, df), t_cdf(t, df), p, 1e-10)
    for p, df, q in PPF:
        close("t_ppf(%g, %g)" % (p, df), t_ppf(p, df), q, 1e-8 * max(1, abs(q)))
    t, df, p = welch(WELCH_A, WELCH_B)
    close("welch t", t, WELCH[0], 1e-10)
    close("welch df", df, WELCH[1], 5e-5)
    close("welch p", p, WELCH[2], 1e-10)
    for what, got, want in zip(("mean", "CI low", "CI high", "t", "df", "p"),
                               paired(SLEEP_1, SLEEP_2), PAIRED):
        close("paired " + what, got, want, 1e-9)
    n, mean, sd, lo, hi = summary([1.0, 2.0, 3.0, 4.0, 5.0])
    close("summary sd", sd, math.sqrt(2.5), 1e-12)
    close("summary CI low", lo, 3 - 2.7764451051977934 * math.sqrt(2.5 / 5), 1e-8)
    checks = scipy_checks(close)
    for line in bad:
        print("accuracy_stats: FAIL %s" % line)
    if not bad:
        print("accuracy_stats: ok: %d CDF, %d quantile, 1 Welch, 1 paired and 1 summary "
              "check%s"
              % (len(CDF), len(PPF), ", %d against scipy" % checks if checks else ""))
    return not bad


if __name__ == "__main__":
    if sys.argv[1:] != ["--self-test"]:
        sys.exit("usage: accuracy_stats.py --self-test")
    sys.exit(0 if self_test() else 1)
