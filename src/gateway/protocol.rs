//! The listener protocols a Gateway can have on Octavia (a leaf: no other gateway file).

/// HTTP or HTTPS: the only listener protocols Octavia's L7 policies apply to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    Http,
    Https,
}

impl Protocol {
    pub fn scheme(self) -> &'static str {
        match self {
            Protocol::Http => "http",
            Protocol::Https => "https",
        }
    }
}
