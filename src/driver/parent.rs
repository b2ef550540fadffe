//! A parent of children the driver reads one GET each (a policy's rules, a pool's members), as
//! its list shows it. A leaf of its own: the read cache, the stamps and their digests all judge
//! a parent by it, and none of them should import another for it.

/// A parent (policy or pool) as its list shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parent<'a> {
    pub id: &'a str,
    pub provisioning_status: &'a str,
    pub updated_at: Option<&'a str>,
    /// The children's ids the parent lists.
    pub child_ids: Vec<&'a str>,
}
