//! The L7 router driver: owns the router load balancer and converges Octavia to the desired
//! state with the fewest writes.

pub mod certificates;
pub mod diff;
pub mod read_cache;
pub mod router;
pub mod sim;
