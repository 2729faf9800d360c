//! Exports for other tools: the mesh and the geometry as VTK XML files that
//! ParaView opens ([`vtk`]), and field magnitudes from running DFTs on the
//! same mesh ([`fields`], `simulate --dump-fields`).

pub mod fields;
pub mod vtk;
