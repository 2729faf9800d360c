//! Exports for other tools: the mesh and the geometry as VTK XML files that
//! ParaView opens ([`vtk`]).

pub mod vtk;
