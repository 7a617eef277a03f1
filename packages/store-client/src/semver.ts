/** Digits only: a numeric identifier (semver.org §9, §11). */
const NUMERIC = /^\d+$/;

/**
 * Two numeric identifiers, compared without `Number` (which makes `9007199254740993` and
 * `9007199254740992` equal): valid versions have no leading zeros, so the longer is the larger,
 * and equal lengths compare digit by digit. Leading zeros, should they come, are ignored.
 */
function compareNumeric(a: string, b: string): number {
  const x = a.replace(/^0+(?=\d)/, '');
  const y = b.replace(/^0+(?=\d)/, '');
  if (x.length !== y.length) return x.length < y.length ? -1 : 1;
  return x === y ? 0 : x < y ? -1 : 1;
}

/**
 * Semantic Versioning 2.0.0 precedence (semver.org §11; build metadata ignored): `-1`, `0` or
 * `1`. Major, minor and patch compare numerically at any size; a version with a pre-release is
 * lower than the same version without; pre-release identifiers compare one by one, numeric ones
 * numerically and below alphanumeric ones, alphanumeric ones in ASCII order; more identifiers
 * win when all before are equal. Inputs are valid versions (a leading `v` is not accepted here).
 */
export function compareSemver(a: string, b: string): number {
  const parse = (v: string) => {
    const withoutBuild = v.split('+')[0]!;
    const dash = withoutBuild.indexOf('-');
    const core = dash < 0 ? withoutBuild : withoutBuild.slice(0, dash);
    const pre = dash < 0 ? '' : withoutBuild.slice(dash + 1);
    return { nums: core.split('.'), pre: pre === '' ? [] : pre.split('.') };
  };
  const x = parse(a);
  const y = parse(b);
  for (let i = 0; i < 3; i++) {
    const d = compareNumeric(x.nums[i] ?? '0', y.nums[i] ?? '0');
    if (d !== 0) return d;
  }
  if (x.pre.length === 0 || y.pre.length === 0) {
    if (x.pre.length === y.pre.length) return 0;
    return x.pre.length === 0 ? 1 : -1;
  }
  for (let i = 0; i < Math.max(x.pre.length, y.pre.length); i++) {
    const p = x.pre[i];
    const q = y.pre[i];
    if (p === undefined) return -1;
    if (q === undefined) return 1;
    const pn = NUMERIC.test(p);
    const qn = NUMERIC.test(q);
    if (pn && qn) {
      const d = compareNumeric(p, q);
      if (d !== 0) return d;
    } else if (pn !== qn) return pn ? -1 : 1;
    else if (p !== q) return p < q ? -1 : 1;
  }
  return 0;
}
