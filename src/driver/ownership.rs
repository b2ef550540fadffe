//! Who we are on the router: the tags every object we create carries, and the test of whether an
//! object found on the router is ours (only ours are ever in a write).

use crate::model::KubeRef;

/// The tag every object we create carries.
pub const PRODUCT_TAG: &str = "kuryr-l7-router";

/// Who we are on the router: objects carrying both [`PRODUCT_TAG`] and our cluster tag are ours.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ownership {
    pub cluster: String,
}

impl Ownership {
    pub fn new(cluster: &str) -> Self {
        Self { cluster: cluster.to_string() }
    }

    pub fn cluster_tag(&self) -> String {
        format!("cluster:{}", self.cluster)
    }

    /// The tags of an object owned by `owner` (an Ingress for policies, a Service for pools).
    pub fn tags_for(&self, owner: &KubeRef) -> Vec<String> {
        vec![PRODUCT_TAG.to_string(), self.cluster_tag(), owner_tag(owner)]
    }

    /// The tags that mark the router itself (load balancer, listener).
    pub fn router_tags(&self) -> Vec<String> {
        vec![PRODUCT_TAG.to_string(), self.cluster_tag()]
    }

    pub fn owns(&self, tags: &[String]) -> bool {
        let cluster = self.cluster_tag();
        tags.iter().any(|t| t == PRODUCT_TAG) && tags.contains(&cluster)
    }
}

/// `ingress:<ns>/<name>` or `service:<ns>/<name>`; Octavia tags are at most 255 characters and
/// Kubernetes names at most 253, so long names are cut (the tag is informative; identity is the
/// object name).
pub fn owner_tag(owner: &KubeRef) -> String {
    let mut tag = format!("{}:{}/{}", owner.kind.to_ascii_lowercase(), owner.namespace, owner.name);
    if tag.len() > 255 {
        let mut cut = 255;
        while !tag.is_char_boundary(cut) {
            cut -= 1;
        }
        tag.truncate(cut);
    }
    tag
}
