// Finiteness scan and the AdamW update, written once over simd.inl (included
// by each ISA unit): the passes over every parameter of a training step.
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

// AdamW over one contiguous range, in train::adamw_update's order of
// operations; returns whether every parameter it wrote is finite (summed as
// in all_finite, on the value still in a register).
static bool adamw_range_impl(float* p, float* m, float* v, const float* g, std::int64_t n, float decay,
                             const AdamWArgs& k) {
  const vf b1 = vset(k.b1), b2 = vset(k.b2), ob1 = vset(k.one_b1), ob2 = vset(k.one_b2), step = vset(k.step_size),
           isc2 = vset(k.inv_sqrt_c2), eps = vset(k.eps), dec = vset(decay);
  vf fin = vzero();
  const auto update = [&](vf pi, vf mi, vf vi, vf gi, vf& pn, vf& mn, vf& vn) {
    mn = vadd(vmul(b1, mi), vmul(ob1, gi));
    vn = vadd(vmul(b2, vi), vmul(vmul(ob2, gi), gi));
    pn = vsub(vmul(pi, dec), vdiv(vmul(step, mn), vadd(vmul(vsqrt(vn), isc2), eps)));
    fin = vadd(fin, vsub(pn, pn));
  };
  std::int64_t i = 0;
  for (; i + W <= n; i += W) {
    vf pn, mn, vn;
    update(vload(p + i), vload(m + i), vload(v + i), vload(g + i), pn, mn, vn);
    vstore(p + i, pn), vstore(m + i, mn), vstore(v + i, vn);
  }
  if (i < n) {
    const int c = static_cast<int>(n - i);
    vf pn, mn, vn;
    update(vloadn(p + i, c, 0.0f), vloadn(m + i, c, 0.0f), vloadn(v + i, c, 0.0f), vloadn(g + i, c, 0.0f), pn, mn, vn);
    vstoren(p + i, pn, c), vstoren(m + i, mn, c), vstoren(v + i, vn, c);
  }
  return vsum(fin) == 0.0f;
}
