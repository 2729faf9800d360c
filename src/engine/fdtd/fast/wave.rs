//! Temporal blocking for grids larger than the caches: a block of steps in
//! one pass over the planes (a wavefront). Step s+1 runs D planes behind
//! step s (D: the widest port's planes + 2), so every plane is loaded once
//! per block instead of once per step. The block's steps are split into
//! consecutive groups, one per thread: group w trails group w-1 by the same
//! lag and waits on its progress counter (group 0 never waits, so the
//! rayon::join nesting cannot deadlock). A port's source and monitor of step
//! s run once step s has passed the port's highest plane; the lag keeps step
//! s+1 below its lowest plane until then, exactly the order of the reference
//! loop (step, inject, sample).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::plan::FastPlan;
use super::ports;
use super::raw::Raw;
use super::sweep::plane_step;
use crate::engine::fdtd::cpu::Fields;
use crate::engine::fdtd::operator::Operator;
use crate::job::{PortTrace, Pulse};

/// The wavefront's shape for one operator.
#[derive(Debug, Clone)]
pub struct Wave {
    /// Steps per block (split over `threads` groups).
    pub steps: usize,
    pub threads: usize,
    /// Planes between consecutive steps of the front.
    pub lag: usize,
    /// Ports whose planes overlap, together: (lowest, highest plane, ports).
    /// A group's source and samples run together, in the reference's order.
    pub ports: Vec<(usize, usize, Vec<usize>)>,
}

impl Wave {
    pub fn new(op: &Operator, steps_per_thread: usize, threads: usize) -> Wave {
        let planes = op.n[2] + 1;
        let mut each: Vec<(usize, usize, usize)> = (0..op.lumped.len()).map(|i| {
            let (lo, hi) = ports::window(op, i, planes);
            (lo, hi, i)
        }).collect();
        each.sort();
        let mut ports: Vec<(usize, usize, Vec<usize>)> = vec![];
        for (lo, hi, i) in each {
            match ports.last_mut() {
                Some(g) if lo <= g.1 => {
                    g.1 = g.1.max(hi);
                    g.2.push(i);
                }
                _ => ports.push((lo, hi, vec![i])),
            }
        }
        for g in &mut ports {
            g.2.sort();
        }
        let lag = ports.iter().map(|(lo, hi, _)| hi - lo + 2).max().unwrap_or(1).max(1);
        let threads = threads.max(1);
        Wave { steps: steps_per_thread.max(1) * threads, threads, lag, ports }
    }
}

/// Steps `s0..s0+count` (count <= the block) of `f` with the driven port `drive`'s
/// source and every port's samples appended to `traces`, as the reference loop.
#[allow(clippy::too_many_arguments)]
pub fn block(op: &Operator, plan: &FastPlan, wave: &Wave, f: &mut Fields, drive: usize, pulse: &Pulse, s0: usize, count: usize, traces: &mut [PortTrace]) {
    let raw = Raw::new(f);
    let planes = op.n[2] + 1;
    let groups = wave.threads.min(count).max(1);
    // Group w takes steps lo(w)..lo(w+1).
    let lo = |w: usize| w * count / groups;
    let progress: Vec<AtomicUsize> = (0..groups).map(|_| AtomicUsize::new(0)).collect();
    let traces = Mutex::new(traces);
    let run_group = |w: usize| {
        let (g0, g1) = (lo(w), lo(w + 1));
        let levels = g1 - g0;
        let fronts = planes + (levels - 1) * wave.lag;
        let prev = (w > 0).then(|| {
            let pl = lo(w) - lo(w - 1);
            (&progress[w - 1], planes + (pl - 1) * wave.lag, pl * wave.lag)
        });
        for p in 0..fronts {
            if let Some((done, total, ahead)) = prev {
                // The previous group's last step must be `lag` planes past ours.
                let need = (p + ahead + 1).min(total);
                let mut spins = 0u32;
                while done.load(Ordering::Acquire) < need {
                    spins += 1;
                    if spins < 64 {
                        std::hint::spin_loop();
                    } else {
                        std::thread::yield_now();
                    }
                }
            }
            for l in 0..levels {
                let Some(k) = p.checked_sub(l * wave.lag) else { break };
                if k >= planes {
                    continue;
                }
                // SAFETY: the lag and the waits above order every plane's
                // reads and writes as the reference step sequence does.
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
            }
            progress[w].store(p + 1, Ordering::Release);
        }
    };
    fn spread(w: usize, groups: usize, f: &(dyn Fn(usize) + Sync)) {
        if w + 1 == groups {
            f(w)
        } else {
            rayon::join(|| f(w), || spread(w + 1, groups, f));
        }
    }
    spread(0, groups, &run_group);
}
