//! A mesh in which no test could run (issue #57): no agent had a device, every endpoint was
//! out of reach, or every pair failed before its first result. That is exit 2 with one cause in
//! every format, not a matrix of failed pairs; agents that answered (without a usable device)
//! are not called unreachable. Pure: the losses in, the one cause out.

use crate::error::Failure;
use crate::outcome::loss::{LossKind, Step, Unreached};

/// Whether the endpoint's agent answered before it was lost: it said hello, then refused (no
/// device, a device it does not have).
pub fn answered(u: &Unreached) -> bool {
    match u {
        Unreached::Lost(loss) | Unreached::RailsUnknown(loss) => matches!(&loss.kind, LossKind::Refused { step, .. } if *step != Step::Hello),
    }
}

/// No endpoint could be used: the one cause, from how many answered without a usable device and
/// how many could not be reached (`first`: the first endpoint's words).
pub fn no_endpoint(losses: &[&Unreached], first: &str) -> Failure {
    let said = losses.iter().filter(|u| answered(u)).count();
    let silent = losses.len() - said;
    match (said, silent) {
        (_, 0) => Failure::new(
            format!("no test could run: none of the {said} endpoints has a usable RDMA device (first: {first})"),
            "run `fabcheck check` on those nodes (driver loaded, port ACTIVE; Soft-RoCE: `rdma link add`), or name the device with -d",
        ),
        (0, _) => Failure::new(
            format!("no test could run: none of the {silent} endpoints could be reached (first: {first})"),
            "check that the hosts are up and reachable (ssh, or `fabcheck serve` for tcp://) and that fabcheck is installed there",
        ),
        _ => Failure::new(
            format!("no test could run: {said} endpoints answered without a usable RDMA device and {silent} could not be reached (first: {first})"),
            "run `fabcheck check` on the nodes that answered, and check that the others are up and have fabcheck installed",
        ),
    }
}

/// Every pair failed before its first result: the one cause, with the count and the first
/// pair's error.
pub fn no_pair(pairs: usize, first: Option<&str>) -> Failure {
    Failure::new(
        format!("no test could run: each of the {pairs} pairs failed before its first result (first: {})", first.unwrap_or("no cause given")),
        "run `fabcheck pair A B -v` for one of them to see where it stops (rdma_cm/GID set-up, firewalls for tcp://, --timeout)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::loss::Loss;

    fn refused(step: Step) -> Unreached {
        Unreached::Lost(Loss::new("n1", LossKind::Refused { step, cause: "no RDMA device".into(), remedy: "load it".into() }))
    }

    #[test]
    fn agents_that_answered_are_not_called_unreachable() {
        let dev = refused(Step::Inventory);
        let token = refused(Step::Hello);
        let gone = Unreached::Lost(Loss::new("n2", LossKind::Unresolved(None)));
        assert!(answered(&dev) && !answered(&token) && !answered(&gone));
        let all_said = no_endpoint(&[&dev, &dev], "n1: no RDMA device");
        assert!(all_said.cause.contains("none of the 2 endpoints has a usable RDMA device"), "{}", all_said.cause);
        assert!(!all_said.cause.contains("reached"), "{}", all_said.cause);
        assert!(no_endpoint(&[&gone], "x").cause.contains("could be reached"));
        assert!(no_endpoint(&[&dev, &gone, &token], "x").cause.contains("1 endpoints answered without a usable RDMA device and 2 could not"));
        assert!(no_pair(6, Some("connect: timed out"))
            .cause
            .contains("each of the 6 pairs failed before its first result (first: connect: timed out)"));
    }
}
