//! The name of an agent channel in its hub, shared by the hub and the ssh login rules
//! (`ssh_share`), which both import it from here, and so neither imports the other.

/// Index of an agent channel in its hub.
pub type LinkId = usize;
