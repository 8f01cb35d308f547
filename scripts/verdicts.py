"""What the A/A scripts (aa.sh, sittings.sh) share: an exact interval for a count of false
verdicts. Imported by their Python parts (a script's helper, not a test)."""
import math


def binom_cdf(x, n, p):
    """P(X <= x) for X ~ Binomial(n, p)."""
    return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(x + 1))


def clopper_pearson(x, n):
    """The exact 95% interval of x in n: the p at which seeing x or more (x or fewer) is
    2.5% likely."""
    def solve(f):
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            if f(mid):
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2
    low = 0.0 if x == 0 else solve(lambda p: 1 - binom_cdf(x - 1, n, p) < 0.025)
    high = 1.0 if x == n else solve(lambda p: binom_cdf(x, n, p) > 0.025)
    return low, high
