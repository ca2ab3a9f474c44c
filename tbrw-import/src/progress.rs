//! The progress trait of every library crate of the project, from
//! `tbrw-schema` (the lowest crate the importers, the query layer and the
//! exports all depend on); re-exported at the crate's front.

pub use tbrw_schema::Progress;
