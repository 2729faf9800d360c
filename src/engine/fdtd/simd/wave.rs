//! Temporal blocking for grids larger than the caches: a block of steps in
//! one pass over the planes (a wavefront). Step s+1 does plane k as soon as
//! step s has done plane k+1 (one plane behind), so every plane is loaded
//! once per block instead of once per step. A port's source and monitor of
//! step s run once step s has done the port's highest plane; step s+1 waits
//! below the port's lowest plane until then (exactly the order of the
//! reference loop: step, inject, sample), then catches up to one plane
//! behind (it may do two planes while the step before does one), so the
//! planes in flight stay in the L2 cache away from the ports. The steps are
//! cut into blocks of a few steps that the threads claim in order ([`run`]);
//! a block's first step follows the previous block's last by the same rule.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::plan::{SimdPlan, Wave};
use super::ports;
use super::raw::Raw;
use super::sweep::plane_step;
use crate::engine::fdtd::fields::Fields;
use crate::engine::fdtd::operator::Operator;
use crate::job::{PortTrace, Pulse};

/// Steps `s0..s0+count` of `f` with the driven port `drive`'s source and
/// every port's samples appended to `traces`, as the reference loop, in
/// blocks of `steps / threads` steps. The threads claim the blocks in order
/// and run them as they can: a block's first step follows the previous
/// block's last (through the steps' progress counters), so a thread starts
/// its next block while the others finish theirs, and a block only ever
/// waits on blocks claimed before it by running threads (no deadlock, even
/// when rayon runs the workers one after the other).
#[allow(clippy::too_many_arguments)]
pub fn run(op: &Operator, plan: &SimdPlan, wave: &Wave, f: &mut Fields, drive: usize, pulse: &Pulse, s0: usize, count: usize, traces: &mut [PortTrace]) {
    let raw = Raw::new(f);
    let planes = op.n[2] + 1;
    let per = (wave.steps / wave.threads).max(1);
    let blocks = count.div_ceil(per);
    // Planes each step has completed (its port work included), and the next block to claim.
    let done: Vec<AtomicUsize> = (0..count).map(|_| AtomicUsize::new(0)).collect();
    let next = AtomicUsize::new(0);
    let traces = Mutex::new(traces);
    // May a step do plane k when the step before it has completed `have`
    // planes? It reads that step's planes k-1..=k+1 and overwrites plane k:
    // plane k+1 must be done, and no port plane may be read or overwritten
    // before that step's source and samples (run when it completes the
    // port's highest plane).
    let may = |k: usize, have: usize| have >= (k + 2).min(planes) && wave.ports.iter().all(|(lo, hi, _)| k + 1 < *lo || have > *hi);
    let worker = || loop {
        let b = next.fetch_add(1, Ordering::Relaxed);
        if b >= blocks {
            break;
        }
        let (g0, g1) = (b * per, ((b + 1) * per).min(count));
        let levels = g1 - g0;
        // The next plane of each step of the block.
        let mut pos = vec![0usize; levels];
        let mut spins = 0u32;
        while pos[levels - 1] < planes {
            let mut moved = false;
            for l in 0..levels {
                // The first step paces the block one plane at a time; the
                // others may catch up (back to one plane behind after a port).
                for _ in 0..if l == 0 { 1 } else { 2 } {
                    let k = pos[l];
                    let have = if l > 0 {
                        pos[l - 1]
                    } else if g0 > 0 {
                        done[g0 - 1].load(Ordering::Acquire)
                    } else {
                        planes
                    };
                    if k >= planes || !may(k, have) {
                        break;
                    }
                    // SAFETY: `may` orders every plane's reads and writes as
                    // the reference step sequence does.
                    unsafe { plane_step(op, plan, raw, k) };
                    let s = s0 + g0 + l;
                    for (_, hi, group) in &wave.ports {
                        if *hi == k {
                            let mut t = traces.lock().unwrap_or_else(|e| e.into_inner());
                            // SAFETY: step s holds the group's planes; step s+1 has not reached them.
                            unsafe {
                                if group.contains(&drive) {
                                    ports::inject(op, raw, drive, pulse.value((s as f64 + 0.5) * op.dt));
                                }
                                for &i in group {
                                    ports::sample(op, raw, i, &mut t[i]);
                                }
                            }
                        }
                    }
                    pos[l] = k + 1;
                    done[g0 + l].store(k + 1, Ordering::Release);
                    moved = true;
                }
            }
            if moved {
                spins = 0;
            } else {
                // Only the first step can be held, by the block before.
                spins += 1;
                if spins < 64 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
    };
    fn spread(w: usize, threads: usize, f: &(dyn Fn() + Sync)) {
        if w + 1 >= threads {
            f()
        } else {
            rayon::join(f, || spread(w + 1, threads, f));
        }
    }
    spread(0, wave.threads.min(blocks), &worker);
}
