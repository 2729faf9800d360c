//! Host side of the field DFT monitors on CUDA: the monitors of every design
//! of a sub-batch (laid out by `engine::fdtd::dft`, the CPU reference) packed
//! into the tables of the kernel `fdtd_dft` (`kernels/fdtd_ports.cuh`), the per-chunk
//! table of phase factors, and the sums copied back into the same
//! [`MonitorOutput`]s as the CPU engine's. Pure Rust, tested without a GPU.

use super::abi::FdtdDftComp;
use crate::engine::fdtd::dft::{phases, FieldDftMonitor};
use crate::engine::fdtd::Operator;
use crate::job::{Field, MonitorOutput, SimJob};

/// The packed monitors of a sub-batch.
#[derive(Debug, Clone, Default)]
pub struct DftPlan {
    /// One entry per recorded component of every monitor of every design.
    pub comps: Vec<FdtdDftComp>,
    /// Per global sample (one kernel thread each), its entry in `comps`.
    pub sample_comp: Vec<i32>,
    /// Taps of every sample: flat indices into the design's arrays.
    pub tap: Vec<i32>,
    /// Elements of each sum array (`acc_re`, `acc_im`).
    pub acc_len: usize,
    /// Per phase slot: (design, frequency).
    pub slots: Vec<(usize, f64)>,
    /// Per design: its range of the sum arrays.
    pub acc_range: Vec<std::ops::Range<usize>>,
    /// Per design: its monitors (the CPU layout; the sums come back into them).
    monitors: Vec<Vec<FieldDftMonitor>>,
}

fn i32_of(x: usize, what: &str) -> Result<i32, String> {
    i32::try_from(x).map_err(|_| format!("{what} = {x} exceeds the 32-bit range of the CUDA kernels"))
}

impl DftPlan {
    /// Lay out the monitors of `jobs` (design d stepped with `ops[d]`).
    pub fn new(jobs: &[&SimJob], ops: &[&Operator]) -> Result<DftPlan, String> {
        let mut pl = DftPlan::default();
        for (d, (job, op)) in jobs.iter().zip(ops).enumerate() {
            let start = pl.acc_len;
            let mut mons = vec![];
            for m in &job.monitors {
                let mon = FieldDftMonitor::new(m, op).map_err(|e| format!("{}: {e}", job.label))?;
                let slot = pl.slots.len();
                pl.slots.extend(mon.freqs().iter().map(|&f| (d, f)));
                for c in mon.comps() {
                    let ns = c.samples();
                    let k = i32_of(pl.comps.len(), "monitor components of a batch")?;
                    pl.comps.push(FdtdDftComp {
                        acc_off: pl.acc_len as i64,
                        tap_off: pl.tap.len() as i64,
                        design: d as i32,
                        field: c.axis as i32 + if c.field == Field::H { 3 } else { 0 },
                        n_samples: i32_of(ns, "samples of one monitor component")?,
                        taps: c.ntap as i32,
                        nf: mon.freqs().len() as i32,
                        slot: i32_of(slot, "monitor frequencies of a batch")?,
                        sample_off: pl.sample_comp.len() as i64,
                    });
                    pl.sample_comp.extend(std::iter::repeat(k).take(ns));
                    for &t in &c.taps {
                        pl.tap.push(i32_of(t, "field index")?);
                    }
                    pl.acc_len += ns * mon.freqs().len();
                }
                mons.push(mon);
            }
            pl.acc_range.push(start..pl.acc_len);
            pl.monitors.push(mons);
        }
        Ok(pl)
    }

    /// Samples of the whole batch (threads of one `fdtd_dft` launch).
    pub fn samples(&self) -> usize {
        self.sample_comp.len()
    }

    /// The phase factors of steps `n0..n0+k`, `[(slot * stride + s) * 4 + ..]`
    /// = E cos, E sin, H cos, H sin (the kernel's `DftPtrs::phase`).
    pub fn phase_table(&self, dts: &[f64], n0: usize, k: usize, stride: usize) -> Vec<f64> {
        let mut t = vec![0.0; self.slots.len().max(1) * stride * 4];
        for (slot, &(d, f)) in self.slots.iter().enumerate() {
            for s in 0..k.min(stride) {
                let (e, h) = phases(f, dts[d], n0 + s);
                let o = (slot * stride + s) * 4;
                t[o..o + 4].copy_from_slice(&[e.re, e.im, h.re, h.im]);
            }
        }
        t
    }

    /// Take design `d`'s sums (its `acc_range` of the two sum arrays).
    pub fn set_sums(&mut self, d: usize, re: &[f64], im: &[f64]) -> Result<(), String> {
        let base = self.acc_range[d].start;
        let mut k = self.comps.iter().position(|c| c.design == d as i32).unwrap_or(self.comps.len());
        for mon in &mut self.monitors[d] {
            for ci in 0..mon.comps().len() {
                let c = self.comps[k];
                let (o, n) = (c.acc_off as usize - base, c.n_samples as usize * c.nf as usize);
                if o + n > re.len() || o + n > im.len() {
                    return Err(format!("design {d}: {} sums came back, component {ci} needs {}", re.len(), o + n));
                }
                mon.set_sums(ci, &re[o..o + n], &im[o..o + n])?;
                k += 1;
            }
        }
        Ok(())
    }

    /// Design `d`'s monitor results, in the order of its job's monitors.
    pub fn outputs(&self, d: usize) -> Vec<MonitorOutput> {
        self.monitors[d].iter().map(FieldDftMonitor::output).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::fdtd::cpu as fcpu;
    use crate::engine::fdtd::fields::Fields;
    use crate::job::{Axis, DftFields, Monitor};

    /// The kernel's arithmetic over the plan's tables, on the host: what
    /// `fdtd_dft` computes, step by step, from the same fields.
    fn emulate(pl: &DftPlan, fields: &[&Fields], dts: &[f64], steps: usize, re: &mut [f64], im: &mut [f64]) {
        let ph = pl.phase_table(dts, steps, 1, 1);
        for (g, &ci) in pl.sample_comp.iter().enumerate() {
            let c = pl.comps[ci as usize];
            let f = &fields[c.design as usize];
            let arr = if c.field < 3 { &f.e[c.field as usize] } else { &f.h[c.field as usize - 3] };
            let s = g - c.sample_off as usize;
            let t = &pl.tap[c.tap_off as usize + s * c.taps as usize..][..c.taps as usize];
            let x = t.iter().map(|&p| arr[p as usize] as f64).sum::<f64>() / c.taps as f64;
            let hp = if c.field < 3 { 0 } else { 2 };
            for q in 0..c.nf as usize {
                let p = &ph[(c.slot as usize + q) * 4 + hp..];
                let o = c.acc_off as usize + q * c.n_samples as usize + s;
                re[o] += p[0] * x;
                im[o] += p[1] * x;
            }
        }
    }

    #[test]
    fn packed_monitors_give_the_cpu_sums() {
        let mut a = crate::dev::device_check::random_jobs(true, 3).remove(0);
        let mut b = crate::bench::box_job(9, 3);
        a.monitors = vec![
            Monitor::FieldDft { name: "plane".into(), lo: [1, 0, 4], hi: [6, 5, 4], fields: DftFields::Tangential(Axis::Z), freqs: vec![12e9, 15e9] },
            Monitor::FieldDft { name: "box".into(), lo: [0, 0, 0], hi: [3, 2, 2], fields: DftFields::All, freqs: vec![14e9] },
        ];
        b.monitors = vec![Monitor::FieldDft { name: "x face".into(), lo: [0, 1, 1], hi: [0, 8, 7], fields: DftFields::Tangential(Axis::X), freqs: vec![3e9, 4e9, 5e9] }];
        // The absorbed-power monitor of a cavity with every loss: its samples are taps too.
        let mut c = crate::engine::fdtd::absorbed::tests::lossy_cavity();
        c.monitors[0] = Monitor::Absorbed { name: "absorbed".into(), lo: [0; 3], hi: c.mesh.n(), freqs: vec![5e9, 7e9] };
        let oa = Operator::new(&a).unwrap();
        let ob = Operator::new(&b).unwrap();
        let oc = Operator::new(&c).unwrap();
        let mut pl = DftPlan::new(&[&a, &b, &c], &[&oa, &ob, &oc]).unwrap();
        assert_eq!(pl.slots.len(), 8);
        assert_eq!(pl.acc_range[2].end, pl.acc_len);
        // Random-looking fields, stepped on the CPU; the plan's sums follow the same fields.
        let mut fa = crate::dev::device_check::random_fields(&oa, 3);
        let mut fb = crate::dev::device_check::random_fields(&ob, 4);
        let mut fc = crate::dev::device_check::random_fields(&oc, 5);
        let mut ma: Vec<FieldDftMonitor> = a.monitors.iter().map(|m| FieldDftMonitor::new(m, &oa).unwrap()).collect();
        let mut mb: Vec<FieldDftMonitor> = b.monitors.iter().map(|m| FieldDftMonitor::new(m, &ob).unwrap()).collect();
        let mut mc: Vec<FieldDftMonitor> = c.monitors.iter().map(|m| FieldDftMonitor::new(m, &oc).unwrap()).collect();
        let (mut re, mut im) = (vec![0.0; pl.acc_len], vec![0.0; pl.acc_len]);
        for n in 0..3 {
            fcpu::fdtd_step(&oa, &mut fa);
            fcpu::fdtd_step(&ob, &mut fb);
            fcpu::fdtd_dft(&fa, &mut ma, n);
            fcpu::fdtd_dft(&fb, &mut mb, n);
            fcpu::fdtd_step(&oc, &mut fc);
            fcpu::fdtd_dft(&fc, &mut mc, n);
            emulate(&pl, &[&fa, &fb, &fc], &[oa.dt, ob.dt, oc.dt], n, &mut re, &mut im);
        }
        for d in 0..3 {
            let r = pl.acc_range[d].clone();
            pl.set_sums(d, &re[r.clone()], &im[r]).unwrap();
        }
        let cpu_a: Vec<MonitorOutput> = ma.iter().map(FieldDftMonitor::output).collect();
        let cpu_b: Vec<MonitorOutput> = mb.iter().map(FieldDftMonitor::output).collect();
        assert_eq!(pl.outputs(0), cpu_a);
        assert_eq!(pl.outputs(1), cpu_b);
        let cpu_c: Vec<MonitorOutput> = mc.iter().map(FieldDftMonitor::output).collect();
        assert_eq!(pl.outputs(2), cpu_c);
        let MonitorOutput::Absorbed { conductor, dielectric, loads, .. } = &cpu_c[0] else { panic!("an absorbed-power monitor") };
        assert!([conductor, dielectric, loads].iter().all(|v| v.iter().all(|&p| p > 0.0)), "{:?}", cpu_c[0]);
        // Something was recorded (the comparison is not of zeros).
        let MonitorOutput::FieldDft { components, .. } = &cpu_a[1] else { panic!("a field monitor") };
        assert!(components.iter().all(|c| c.values.iter().any(|v| v.norm() > 0.0)));
        assert!(pl.set_sums(0, &re[..3], &im[..3]).is_err());
    }
}
