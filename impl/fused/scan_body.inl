// Finiteness scan, written once over simd.inl (included by each ISA unit).
//
// x - x is +0 for every finite x and NaN for NaN and +-inf, and a sum that
// meets a NaN stays NaN: the sums of x - x are zero exactly when every value
// is finite. Four independent sums, one load each and no branch per element,
// so the scan runs at the read bandwidth (the training step scans every
// gradient each step; an integer test per element ran at 60% of it).
static bool all_finite_impl(const float* x, std::int64_t n, std::uint32_t mut) {
  vf a0 = vzero(), a1 = vzero(), a2 = vzero(), a3 = vzero();
  std::int64_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    const vf x0 = vload(x + i), x1 = vload(x + i + W), x2 = vload(x + i + 2 * W), x3 = vload(x + i + 3 * W);
    a0 = vadd(a0, vsub(x0, x0));
    a1 = vadd(a1, vsub(x1, x1));
    a2 = vadd(a2, vsub(x2, x2));
    a3 = vadd(a3, vsub(x3, x3));
  }
  if (mut & kMutFiniteScanTail) n = i;  // the mutant: the last n % 4W values are not read
  for (; i + W <= n; i += W) {
    const vf v = vload(x + i);
    a0 = vadd(a0, vsub(v, v));
  }
  if (i < n) {
    const vf v = vloadn(x + i, static_cast<int>(n - i), 0.0f);
    a0 = vadd(a0, vsub(v, v));
  }
  return vsum(vadd(vadd(a0, a1), vadd(a2, a3))) == 0.0f;
}
