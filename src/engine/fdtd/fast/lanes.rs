//! The vector loops: one CPML-free run of a row, H or E, over contiguous x.
//! Written as plain indexed loops over equal-length slices with the row's
//! constants hoisted, which LLVM turns into packed AVX-512 / AVX2 code in the
//! `#[target_feature]` sweeps of `sweep.rs`. The arithmetic is the
//! reference's, operation for operation (Rust never contracts a * b + c into
//! a fused multiply-add, so the results are the same bits on every level).

/// The widest instruction set the vector loops may use on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// The compile-time baseline (SSE2 on x86-64).
    Base,
    Avx2,
    Avx512,
}

impl Level {
    /// The best level this CPU supports (runtime detection).
    pub fn detect() -> Level {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512vl") && std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                return Level::Avx512;
            }
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                return Level::Avx2;
            }
        }
        Level::Base
    }

    /// Every level this CPU can run (for the tests).
    pub fn available() -> Vec<Level> {
        let best = Level::detect();
        [Level::Base, Level::Avx2, Level::Avx512].into_iter().filter(|&l| l as u8 <= best as u8).collect()
    }
}

/// An inverse spacing along a row: one value (the row's y or z spacing) or
/// one per cell (x).
pub trait Inv: Copy {
    /// The value at cell `i` of the run (`i` < the run's length).
    fn at(self, i: usize) -> f32;
}

impl Inv for f32 {
    #[inline(always)]
    fn at(self, _i: usize) -> f32 {
        self
    }
}

impl Inv for &[f32] {
    #[inline(always)]
    fn at(self, i: usize) -> f32 {
        debug_assert!(i < self.len());
        // SAFETY: the caller passes a slice as long as the run.
        unsafe { *self.get_unchecked(i) }
    }
}

/// `h[i] -= db * ((eb1 - eb0) * ia - (ea1 - ea0) * ib)` over the run: all
/// slices as long as `h` (the reference's H update without CPML).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn h_run<A: Inv, B: Inv>(h: &mut [f32], eb0: &[f32], eb1: &[f32], ea0: &[f32], ea1: &[f32], ia: A, ib: B, db: f32) {
    let n = h.len();
    let (eb0, eb1, ea0, ea1) = (&eb0[..n], &eb1[..n], &ea0[..n], &ea1[..n]);
    for i in 0..n {
        let t1 = (eb1[i] - eb0[i]) * ia.at(i);
        let t2 = (ea1[i] - ea0[i]) * ib.at(i);
        h[i] -= db * (t1 - t2);
    }
}

/// `e[i] = ca * e[i] + cb * ((hb0 - hb1) * ia - (ha0 - ha1) * ib)` over a run
/// of one material (the reference's E update without CPML; `*0` at the
/// sample, `*1` one cell below along the derivative axis).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn e_run<A: Inv, B: Inv>(e: &mut [f32], hb0: &[f32], hb1: &[f32], ha0: &[f32], ha1: &[f32], ia: A, ib: B, ca: f32, cb: f32) {
    let n = e.len();
    let (hb0, hb1, ha0, ha1) = (&hb0[..n], &hb1[..n], &ha0[..n], &ha1[..n]);
    for i in 0..n {
        let t1 = (hb0[i] - hb1[i]) * ia.at(i);
        let t2 = (ha0[i] - ha1[i]) * ib.at(i);
        e[i] = ca * e[i] + cb * (t1 - t2);
    }
}
