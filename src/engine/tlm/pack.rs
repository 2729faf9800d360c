//! A TLM job as the CUDA backend needs it, built by the CPU engines' own setup
//! code (`scn::pack`, `shunt2d::pack`; [`super::pack`] picks one), so both backends read
//! one description: node flags and coefficient kinds, stubs, special nodes
//! (sources and modal guide-end faces), lumped ports, guide-port sampling
//! terms. The per-node word (`meta`) packs the flags the kernels test:
//!
//! - bits 0..6: face `2*axis + side` (3D) or `2*m + side` (2D) reflects instead of connecting;
//! - bits 6..12: 3D: that face is shorted (PEC neighbour or sheet), reflection -1;
//!   2D: that face is a PMC mirror (the pulse the inward neighbour reflects on the same link);
//! - bit 12: 3D: PEC node (never updated); 2D: shorted node (V = 0: each half-link ends
//!   in the short through its half of the node's series stub, `shunt2d::short_scatter`,
//!   or returns its incident pulse inverted where that stub is 0); bit 13: special node (updated by the port kernel);
//! - bits 14..32: coefficient kind (index into the job's coefficient table).

use super::common::ModalEnd;
pub(crate) use super::common::finish_traces;
use crate::job::{PortTrace, SimFailure, SimJob};

pub(crate) const META_DEAD: u32 = 1 << 12;
/// The 2D meaning of bit 12.
pub(crate) const META_SHORT: u32 = 1 << 12;
pub(crate) const META_SPECIAL: u32 = 1 << 13;
pub(crate) const META_KIND_SHIFT: u32 = 14;
/// Floats per coefficient kind: 3D `y[3] ky[3] z[3] kz[3] gface[6][2]`.
pub(crate) const COEF3: usize = 24;
/// 2D: `y ky z[2] kz[2] gface[4]`, padded to 12.
pub(crate) const COEF2: usize = 12;

/// A node updated one by one: its source weight and the modal end (id, slot)
/// whose returning pulse replaces one incident link.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PackSpecial {
    pub node: usize,
    pub w: f32,
    pub over: Option<(usize, usize)>,
}

/// A lumped port: its column of nodes (one node in 2D) and series circuit.
#[derive(Debug, Clone)]
pub(crate) struct PackLumped {
    pub port: usize,
    pub nodes: Vec<usize>,
    /// E axis (3D; 0 in 2D).
    pub axis: usize,
    pub r: f64,
    /// Link impedance (ohm): eta0 in 3D, the mesh's Z0 in 2D.
    pub z: f64,
}

/// A modal guide end: face nodes, the link it returns pulses on, the termination.
pub(crate) struct PackEnd {
    pub nodes: Vec<usize>,
    pub link: usize,
    pub me: ModalEnd,
}

/// A guide port's sampling terms: node below / above the reference face and
/// weight (3D); 2D: the node on the reference plane (`lo` = `hi`) and weight.
#[derive(Debug, Clone)]
pub(crate) struct PackWg {
    pub port: usize,
    pub link_up: usize,
    pub link_down: usize,
    pub lo: Vec<usize>,
    pub hi: Vec<usize>,
    pub w: Vec<f64>,
    pub dw: f64,
    pub de: f64,
    pub z: f64,
    pub norm: f64,
    pub inward: f64,
}

/// Everything the GPU needs from one TLM job.
pub(crate) struct TlmPack {
    /// 3D SCN (12 links) or 2D shunt node (4 links).
    pub dim3: bool,
    pub dt: f64,
    /// Grid cells per axis (3D: = nodes; 2D: the job's grid, nodes are cells + 1 along p, q).
    pub n: [usize; 3],
    /// Linear index strides the kernels use: 3D (1, nx, nx ny); 2D (p, q, 0).
    pub stride: [usize; 3],
    pub meta: Vec<u32>,
    /// COEF3 or COEF2 floats per kind.
    pub coefs: Vec<f32>,
    pub loaded: bool,
    /// E axis of the driven guide's sources (3D).
    pub src_e: usize,
    pub specials: Vec<PackSpecial>,
    pub lumped: Vec<PackLumped>,
    pub ends: Vec<PackEnd>,
    pub wgs: Vec<PackWg>,
    pub is_wg: Vec<bool>,
    /// The driven port.
    pub drive: usize,
    /// Sample offsets (V, I) of every port signal; None: the 3D rule of
    /// [`finish_traces`] (guide ports half a step late, averaged with lumped ports).
    pub offsets: Option<(f64, f64)>,
    /// `SimOutput::cells`: the number of nodes the engine reports.
    pub cells: usize,
    /// Per port (V, I) factors applied to the finished traces (3D slab), or empty.
    pub scale: Vec<(f64, f64)>,
}

impl TlmPack {
    pub fn links(&self) -> usize {
        if self.dim3 {
            12
        } else {
            4
        }
    }
    /// Stub arrays per node when loaded (3D: 3 capacitive + 3 inductive; 2D: 1 + 2,
    /// then the 4 half-link stub states of shorted nodes).
    pub fn stubs(&self) -> usize {
        if self.dim3 {
            6
        } else {
            7
        }
    }
    pub fn nodes(&self) -> usize {
        self.meta.len()
    }
    /// Finish a run's traces as the CPU engine does: offsets, then scaling.
    /// Returns (v_offset, i_offset).
    pub fn finish(&self, traces: &mut [PortTrace]) -> (f64, f64) {
        let off = match self.offsets {
            Some(o) => o,
            None => {
                let o = finish_traces(traces, &self.is_wg);
                (o, o)
            }
        };
        scale_traces(traces, &self.scale);
        off
    }
}

/// Length of a guide end's convolution kernel in a run of `steps` steps.
pub(crate) fn kernel_len(steps: usize) -> usize {
    ModalEnd::kernel_len(steps)
}

/// Checks a coefficient-kind count fits the meta word.
pub(crate) fn check_kinds(job: &SimJob, kinds: usize) -> Result<(), SimFailure> {
    if kinds >= 1 << (32 - META_KIND_SHIFT) {
        return Err(SimFailure::Invalid(format!("{}: {kinds} coefficient kinds exceed the GPU's {}", job.label, 1u32 << (32 - META_KIND_SHIFT))));
    }
    Ok(())
}

/// Multiply each port's V and I by its factors (none when `scale` is empty).
pub(crate) fn scale_traces(traces: &mut [PortTrace], scale: &[(f64, f64)]) {
    for (tr, &(sv, si)) in traces.iter_mut().zip(scale) {
        tr.v.iter_mut().for_each(|x| *x *= sv);
        tr.i.iter_mut().for_each(|x| *x *= si);
    }
}
